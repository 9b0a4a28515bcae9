#include "sim/soc/soc.hpp"

#include <stdexcept>

#include "octasim/regs/nvdla.hpp"

namespace octasim::soc {

// The SoC as the PPU's front end sees it. Runs inside SystemC threads: nothing here throws
// (an address without a register is a false return, which the PPU reports as BAD_REGISTER).
class Soc::PpuPort final : public ppu::PpuHost {
 public:
  explicit PpuPort(Soc& soc) : soc_(soc) {}

  bool csb_write(std::uint32_t addr, std::uint32_t value) override {
    if (addr % 4 != 0 || regs::find_register(addr) == nullptr) return false;
    soc_.csb_.write(addr, value);  // a PPU channel the configuration lacks: ignored
    return true;
  }
  [[nodiscard]] std::uint32_t interrupt_status() const override {
    return soc_.interrupts_.status();
  }
  void clear_interrupts(std::uint32_t mask) override {
    soc_.interrupts_.clear(mask);
    soc_.dla_.update_signals();
  }
  [[nodiscard]] const sc_core::sc_event& interrupt_event() const override {
    return soc_.interrupts_.event();
  }
  void raise_interrupt(unsigned status_bit) override {
    soc_.dla_.update_signals();
    soc_.interrupts_.raise(status_bit);
  }
  [[nodiscard]] std::uint32_t reg(std::uint32_t addr) const override {
    return soc_.regs_.value(addr, 0);
  }
  void set_reg(std::uint32_t addr, std::uint32_t value) override {
    soc_.regs_.set_value(addr, 0, value);
  }

 private:
  Soc& soc_;
};

Soc::Soc(const sc_core::sc_module_name& name, HwConfig hw)
    : sc_core::sc_module(name),
      hw_(std::move(hw)),
      period_(1, sc_core::SC_NS),
      memory_(hw_.dla.mem_address_width),
      memory_system_("mem", hw_, memory_, period_),
      interrupts_(regs_),
      dla_(hw_, period_, memory_, regs_, memory_system_, interrupts_),
      csb_(hw_, regs_, dla_, interrupts_) {
  if (hw_.ppu.gpcs > 0) {
    ppu_port_ = std::make_unique<PpuPort>(*this);
    ppu_ = std::make_unique<ppu::Ppu>("ppu", hw_, memory_, *ppu_port_, period_);
    ppu_->bind(memory_system_.socket);
    csb_.attach_ppu(ppu_.get());
  }
}

Soc::~Soc() = default;

void Soc::reset() {
  if (dla_.busy()) throw std::logic_error("Soc::reset while an engine is busy");
  if (ppu_ != nullptr && ppu_->busy()) throw std::logic_error("Soc::reset while the PPU is busy");
  regs_ = RegisterFile();
}

std::uint64_t Soc::cycle() const {
  return static_cast<std::uint64_t>(sc_core::sc_time_stamp() / period_ + 0.5);
}

std::vector<const stats::Group*> Soc::statistics() const {
  std::vector<const stats::Group*> groups = dla_.statistics();
  const std::vector<const stats::Group*> memory = memory_system_.statistics();
  groups.insert(groups.end(), memory.begin(), memory.end());
  if (ppu_ != nullptr) {
    const std::vector<const stats::Group*> ppu = ppu_->statistics();
    groups.insert(groups.end(), ppu.begin(), ppu.end());
  }
  return groups;
}

void Soc::set_timeline(stats::Timeline* timeline) {
  dla_.set_timeline(timeline);
  memory_system_.set_timeline(timeline);
  if (ppu_ != nullptr) ppu_->set_timeline(timeline);
}

void Soc::trace_signals(sc_core::sc_trace_file* file) {
  dla_.trace_busy_signals(file);
  interrupts_.trace_signal(file);
  dla_.trace_engine_signals(file);
  memory_system_.trace_signals(file);
}

}  // namespace octasim::soc
