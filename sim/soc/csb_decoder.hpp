// The SoC's CSB decoder: where a CSB write goes. The register file takes it; setting a
// D_OP_ENABLE may start DLA engines; a write to a PPU channel's PUT rings its doorbell and one
// to PB_BASE_LOW points it at a new push buffer (Ppu::rebase). The host's writes (HostAdapter)
// and a push buffer's REG_WRITE (the PPU's front end) both come here.
#pragma once

#include <cstdint>

#include "firmware/ppu/commands.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/core/register_file.hpp"
#include "sim/ppu/ppu.hpp"
#include "sim/soc/dla.hpp"
#include "sim/soc/interrupt_controller.hpp"

namespace octasim::soc {

class CsbDecoder {
 public:
  CsbDecoder(const HwConfig& hw, RegisterFile& regs, Dla& dla, InterruptController& interrupts)
      : hw_(hw), regs_(regs), dla_(dla), interrupts_(interrupts) {}
  CsbDecoder(const CsbDecoder&) = delete;
  CsbDecoder& operator=(const CsbDecoder&) = delete;

  // The PPU the doorbells and rebases go to (null: none).
  void attach_ppu(ppu::Ppu* ppu) { ppu_ = ppu; }

  // Throws std::runtime_error for a write to a PPU channel the configuration lacks (the host's
  // writes check before time passes: no exception once the kernel has run).
  void check(std::uint32_t addr) const;
  // The write's effect, without the time it takes; a PPU channel the configuration lacks is
  // ignored (a push buffer's REG_WRITE).
  void write(std::uint32_t addr, std::uint32_t value);

 private:
  // The front-end register a CSB write to `addr` acts on: PUT (rings the doorbell) or
  // PB_BASE_LOW (a new push buffer); channel -1 for any other address.
  [[nodiscard]] static ppu_format::ChannelRegister ppu_control_register(std::uint32_t addr);
  void ppu_register_written(std::uint32_t addr);

  const HwConfig& hw_;
  RegisterFile& regs_;
  Dla& dla_;
  InterruptController& interrupts_;
  ppu::Ppu* ppu_ = nullptr;
};

}  // namespace octasim::soc
