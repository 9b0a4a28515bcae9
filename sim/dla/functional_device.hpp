// A zero-time DLA: register writes that start an engine run its functional operation at once
// and raise its interrupt. It answers "is the arithmetic right?" fast, with no timing
// (`octasim run --functional`); the cycle-level SoC (sim/soc) answers "how long does it take?".
// Operations and CSB accesses take no time; only waiting does: wait_cycles advances the cycle
// counter, and an interrupt wait that cannot succeed (nothing is running) uses up its whole
// timeout. So the player's polls and interrupt waits end, as on the cycle-level device.
#pragma once

#include <string>
#include <vector>

#include "sim/core/hw_config.hpp"
#include "sim/core/memory_image.hpp"
#include "sim/core/register_file.hpp"
#include "sim/dla/engines.hpp"
#include "sim/trace/player.hpp"

namespace octasim::dla {

struct LayerRecord {
  std::string engine;
  unsigned group;
  OpResult result;
};

class FunctionalDevice final : public trace::Device {
 public:
  explicit FunctionalDevice(HwConfig hw);

  void csb_write(std::uint32_t addr, std::uint32_t value) override;
  [[nodiscard]] std::uint32_t csb_read(std::uint32_t addr) override { return regs_.csb_read(addr); }
  [[nodiscard]] MemoryImage& memory() override { return memory_; }
  [[nodiscard]] MemoryImage& memory_of(MemorySpace space) override {
    return device_memory_.image(space);
  }
  [[nodiscard]] bool wait_interrupt(unsigned status_bit, std::uint64_t timeout_cycles) override;
  void wait_cycles(std::uint64_t cycles) override;
  [[nodiscard]] std::uint64_t cycle() const override { return cycle_; }

  [[nodiscard]] const std::vector<LayerRecord>& layers() const { return layers_; }
  [[nodiscard]] RegisterFile& registers() { return regs_; }

 private:
  void start_ready_engines();

  HwConfig hw_;
  MemoryImage memory_;                   // DRAM
  std::unique_ptr<MemoryImage> cvsram_;  // null without a secondary memory interface
  DeviceMemory device_memory_;           // both, by DMA address
  RegisterFile regs_;
  std::vector<LayerRecord> layers_;
  std::uint64_t cycle_ = 0;  // cycles spent waiting
};

}  // namespace octasim::dla
