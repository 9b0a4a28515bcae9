#include "sim/soc/csb_decoder.hpp"

#include <stdexcept>

#include <fmt/core.h>

namespace octasim::soc {

ppu_format::ChannelRegister CsbDecoder::ppu_control_register(std::uint32_t addr) {
  ppu_format::ChannelRegister r = ppu_format::channel_register(addr);
  if (r.offset != ppu_format::kPut && r.offset != ppu_format::kPbBaseLow) r.channel = -1;
  return r;
}

void CsbDecoder::check(std::uint32_t addr) const {
  const int channel = ppu_control_register(addr).channel;
  if (channel < 0 || (ppu_ != nullptr && static_cast<unsigned>(channel) < ppu_->channels())) return;
  throw std::runtime_error(
      ppu_ == nullptr
          ? fmt::format("configuration {} has no PPU (ppu_gpcs is 0): PPU channel {} cannot run "
                        "(use --config soc_small or soc_large)",
                        hw_.name, channel)
          : fmt::format("configuration {} has {} PPU channels; channel {} does not exist", hw_.name,
                        ppu_->channels(), channel));
}

void CsbDecoder::write(std::uint32_t addr, std::uint32_t value) {
  regs_.csb_write(addr, value);
  // Only setting a D_OP_ENABLE can let an operation start (completions are handled by the DLA).
  if (regs_.is_op_enable(addr) && (value & 1u) != 0) dla_.start_ready_engines();
  ppu_register_written(addr);
  // an interrupt cleared, an engine started
  dla_.update_signals();
  interrupts_.update_signal();
}

void CsbDecoder::ppu_register_written(std::uint32_t addr) {
  const ppu_format::ChannelRegister r = ppu_control_register(addr);
  if (r.channel < 0 || ppu_ == nullptr) return;
  const auto ch = static_cast<unsigned>(r.channel);
  if (r.offset == ppu_format::kPut) {
    ppu_->doorbell(ch);
  } else {
    ppu_->rebase(ch);
  }
}

}  // namespace octasim::soc
