#include "sim/dla/dla_device.hpp"

#include <stdexcept>

#include <fmt/core.h>

#include "firmware/ppu/commands.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/octav/octav_core.hpp"

namespace octasim::dla {

// The device as the PPU's front end sees it. Runs inside SystemC threads: nothing here throws
// (an address without a register is a false return, which the PPU reports as BAD_REGISTER).
class DlaDevice::PpuPort final : public ppu::PpuHost {
 public:
  explicit PpuPort(DlaDevice& device) : d_(device) {}

  bool csb_write(std::uint32_t addr, std::uint32_t value) override {
    if (addr % 4 != 0 || regs::find_register(addr) == nullptr) return false;
    d_.write_register(addr, value);  // a PPU channel the configuration lacks: ignored
    return true;
  }
  [[nodiscard]] std::uint32_t interrupt_status() const override {
    return d_.regs_.interrupt_status();
  }
  void clear_interrupts(std::uint32_t mask) override {
    d_.regs_.csb_write(regs::GLB::S_INTR_STATUS::kAddr, mask);
    d_.update_signals();
  }
  [[nodiscard]] const sc_core::sc_event& interrupt_event() const override {
    return d_.interrupt_event_;
  }
  void raise_interrupt(unsigned status_bit) override { d_.raise_interrupt(status_bit); }
  [[nodiscard]] std::uint32_t reg(std::uint32_t addr) const override {
    return d_.regs_.value(addr, 0);
  }
  void set_reg(std::uint32_t addr, std::uint32_t value) override {
    d_.regs_.set_value(addr, 0, value);
  }

 private:
  DlaDevice& d_;
};

DlaDevice::DlaDevice(const sc_core::sc_module_name& name, HwConfig hw)
    : sc_core::sc_module(name),
      hw_(std::move(hw)),
      period_(1, sc_core::SC_NS),
      memory_(hw_.mem_address_width),
      memory_system_("mem", hw_, memory_, period_) {
  for (std::size_t i = 0; i < engines().size(); ++i) {
    const std::string unit(engines()[i].name);
    if (unit == "CONV") {
      auto conv = std::make_unique<ConvCore>(unit.c_str(), hw_, period_);
      conv->dma_socket.bind(memory_system_.socket);
      modules_[i] = std::move(conv);
    } else if (unit == "OCTAV") {
      auto octav_unit = std::make_unique<octav::OctavCore>(unit.c_str(), hw_, period_);
      octav_unit->dma_socket.bind(memory_system_.socket);
      modules_[i] = std::move(octav_unit);
    } else {
      auto stream = std::make_unique<StreamEngine>(unit.c_str(), hw_, period_);
      stream->rdma_socket.bind(memory_system_.socket);
      stream->wdma_socket.bind(memory_system_.socket);
      modules_[i] = std::move(stream);
    }
    busy_signals_.push_back(std::make_unique<Flag>((unit + "_busy").c_str()));
  }
  if (hw_.ppu_gpcs > 0) {
    ppu_port_ = std::make_unique<PpuPort>(*this);
    ppu_ = std::make_unique<ppu::Ppu>("ppu", hw_, memory_, *ppu_port_, period_);
    ppu_->bind(memory_system_.socket);
  }
}

DlaDevice::~DlaDevice() = default;

// The front-end register a CSB write to `addr` acts on: PUT (rings the doorbell) or
// PB_BASE_LOW (a new push buffer); channel -1 for any other address.
ppu_format::ChannelRegister DlaDevice::ppu_control_register(std::uint32_t addr) {
  ppu_format::ChannelRegister r = ppu_format::channel_register(addr);
  if (r.offset != ppu_format::kPut && r.offset != ppu_format::kPbBaseLow) r.channel = -1;
  return r;
}

void DlaDevice::check_ppu_write(std::uint32_t addr) const {
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

void DlaDevice::ppu_register_written(std::uint32_t addr) {
  const ppu_format::ChannelRegister r = ppu_control_register(addr);
  if (r.channel < 0 || ppu_ == nullptr) return;
  const auto ch = static_cast<unsigned>(r.channel);
  if (r.offset == ppu_format::kPut) {
    ppu_->doorbell(ch);
  } else {
    ppu_->rebase(ch);
  }
}

void DlaDevice::raise_interrupt(unsigned status_bit) {
  regs_.raise_interrupt(status_bit);
  interrupt_event_.notify(sc_core::SC_ZERO_TIME);
  update_signals();
  if (waiting_for_interrupt_) sc_core::sc_pause();
}

void DlaDevice::reset() {
  for (const auto& m : modules_) {
    if (m->busy()) throw std::logic_error("DlaDevice::reset while an engine is busy");
  }
  if (ppu_ != nullptr && ppu_->busy())
    throw std::logic_error("DlaDevice::reset while the PPU is busy");
  regs_ = RegisterFile();
}

// The player drives the device from sc_main, between kernel runs: each access or wait runs
// the simulation for the time it takes (sc_start), so no player code — and no exception it
// throws — ever runs on a SystemC thread's stack.
void DlaDevice::run_for(std::uint64_t cycles) {
  if (cycles > 0) sc_core::sc_start(period_ * static_cast<double>(cycles));
}

void DlaDevice::csb_write(std::uint32_t addr, std::uint32_t value) {
  check_ppu_write(addr);  // before time passes (no exception once the kernel has run)
  run_for(hw_.csb_access_cycles);
  write_register(addr, value);
}

void DlaDevice::write_register(std::uint32_t addr, std::uint32_t value) {
  regs_.csb_write(addr, value);
  // Only setting a D_OP_ENABLE can let an operation start (completions are handled in finish).
  if (regs_.is_op_enable(addr) && (value & 1u) != 0) start_ready_engines();
  ppu_register_written(addr);
  update_signals();  // an interrupt cleared, an engine started
}

std::uint32_t DlaDevice::csb_read(std::uint32_t addr) {
  run_for(hw_.csb_access_cycles);
  return regs_.csb_read(addr);
}

bool DlaDevice::wait_interrupt(unsigned status_bit, std::uint64_t timeout_cycles) {
  const std::uint64_t deadline = cycle() + timeout_cycles;
  waiting_for_interrupt_ = true;
  while ((regs_.interrupt_status() >> status_bit & 1u) == 0 && cycle() < deadline) {
    run_for(deadline - cycle());  // finish() pauses the kernel when an interrupt is raised
  }
  waiting_for_interrupt_ = false;
  return (regs_.interrupt_status() >> status_bit & 1u) != 0;
}

void DlaDevice::wait_cycles(std::uint64_t cycles) {
  run_for(cycles);
}

std::uint64_t DlaDevice::cycle() const {
  return static_cast<std::uint64_t>(sc_core::sc_time_stamp() / period_ + 0.5);
}

void DlaDevice::trace_signals(sc_core::sc_trace_file* file) {
  drive_signals_ = true;
  for (std::size_t i = 0; i < busy_signals_.size(); ++i) {
    sc_core::sc_trace(file, *busy_signals_[i], std::string(engines()[i].name) + ".busy");
  }
  sc_core::sc_trace(file, intr_signal_, "glb.intr_status");
  for (const auto& m : modules_) m->trace_signals(file);
  memory_system_.trace_signals(file);
}

void DlaDevice::update_signals() {
  if (!drive_signals_) return;
  for (std::size_t i = 0; i < busy_signals_.size(); ++i)
    busy_signals_[i]->write(modules_[i]->busy());
  intr_signal_.write(regs_.interrupt_status());
}

void DlaDevice::set_timeline(stats::Timeline* timeline) {
  timeline_ = timeline;
  layer_tracks_.clear();
  if (timeline_ != nullptr) {
    for (const Engine& e : engines()) layer_tracks_.push_back(timeline_->track(e.name, "layers"));
  }
  for (const auto& m : modules_) m->set_timeline(timeline);
  memory_system_.set_timeline(timeline);
  if (ppu_ != nullptr) ppu_->set_timeline(timeline);
}

std::vector<const stats::Group*> DlaDevice::statistics() const {
  std::vector<const stats::Group*> groups;
  for (const auto& m : modules_) groups.push_back(&m->statistics());
  const std::vector<const stats::Group*> memory = memory_system_.statistics();
  groups.insert(groups.end(), memory.begin(), memory.end());
  if (ppu_ != nullptr) {
    const std::vector<const stats::Group*> ppu = ppu_->statistics();
    groups.insert(groups.end(), ppu.begin(), ppu.end());
  }
  return groups;
}

bool DlaDevice::units_free(const UnitList& units) const {
  for (std::size_t i = 0; i < modules_.size(); ++i) {
    if (!modules_[i]->busy()) continue;
    for (std::string_view busy : running_[i].units) {
      for (std::string_view u : units) {
        if (u == busy) return false;
      }
    }
  }
  return true;
}

void DlaDevice::start_ready_engines() {
  for (std::size_t i = 0; i < engines().size(); ++i) {
    const Engine& e = engines()[i];
    if (modules_[i]->busy()) continue;
    RegisterFile::Groups groups = regs_.consumers();
    if (!ready_to_start(e, regs_, groups)) continue;
    const RegRead read = group_reader(regs_, groups);
    const UnitList units = e.units(read);
    if (!units_free(units)) continue;  // a shared unit (SDP) is busy in another engine
    overlays_[i] = std::make_unique<OverlayMemory>(memory_);
    OpResult r = e.run(hw_, read, regs_.lut(e.lut_unit), *overlays_[i]);
    start_group(e, regs_, groups);
    const std::size_t layer = layers_.size();
    const unsigned group = regs_.group_of(units.names[0], groups);
    LayerTiming timing;
    timing.engine = std::string(e.name);
    timing.group = group;
    timing.start_cycle = cycle();
    timing.end_cycle = 0;
    timing.result = std::move(r);
    timing.at_start = modules_[i]->stats();
    timing.engine_index = i;
    timing.counters_at_start = modules_[i]->statistics().snapshot();
    layers_.push_back(std::move(timing));
    modules_[i]->start(e, layers_.back().result, read, [this, i, layer] { finish(i, layer); });
    running_[i] = {std::move(groups), units};
  }
}

void DlaDevice::finish(std::size_t engine_index, std::size_t layer) {
  const Engine& e = engines()[engine_index];
  const RegisterFile::Groups& groups = running_[engine_index].groups;
  overlays_[engine_index]->commit();
  overlays_[engine_index].reset();
  LayerTiming& l = layers_[layer];
  l.end_cycle = cycle();
  const EngineStats now = modules_[engine_index]->stats();
  l.read_stall_cycles = now.read_stall_cycles - l.at_start.read_stall_cycles;
  l.write_stall_cycles = now.write_stall_cycles - l.at_start.write_stall_cycles;
  l.counters = stats::delta(l.counters_at_start, modules_[engine_index]->statistics().snapshot());
  l.perf_registers = modules_[engine_index]->perf_registers(e, group_reader(regs_, groups));
  if (timeline_ != nullptr) {
    timeline_->slice(layer_tracks_[engine_index], stats::Detail::kLayer, l.start_cycle, l.end_cycle,
                     "layer " + std::to_string(layer) + " group " + std::to_string(l.group));
  }
  for (const auto& [addr, value] : l.perf_registers) regs_.set_value(addr, groups, value);
  complete_group(e, regs_, groups, l.result);
  interrupt_event_.notify(sc_core::SC_ZERO_TIME);  // a PPU channel may wait for it (WAIT_DLA)
  update_signals();
  if (waiting_for_interrupt_) sc_core::sc_pause();
  start_ready_engines();  // the other register group may be waiting
  update_signals();
}

}  // namespace octasim::dla
