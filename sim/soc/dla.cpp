#include "sim/soc/dla.hpp"

#include <utility>

namespace octasim::soc {

using dla::Engine;
using dla::engines;

Dla::Dla(const HwConfig& hw, const sc_core::sc_time& clock_period, DeviceMemory& memory,
         RegisterFile& regs, MemorySystem& memory_system, InterruptController& interrupts)
    : hw_(hw), period_(clock_period), memory_(memory), regs_(regs), interrupts_(interrupts) {
  for (std::size_t i = 0; i < engines().size(); ++i) {
    const std::string name(engines()[i].name);
    models_[i] = engines()[i].make_model({name.c_str(), hw_, period_, memory_system});
    models_[i]->on_stage_done([this, i](std::size_t index) { stage_done(i, index); });
    busy_signals_.push_back(std::make_unique<Flag>((name + "_busy").c_str()));
  }
}

Dla::~Dla() = default;

void Dla::rethrow_pending_error() const {
  if (pending_error_) std::rethrow_exception(std::exchange(pending_error_, nullptr));
}

bool Dla::busy() const {
  for (const auto& m : models_) {
    if (m->busy()) return true;
  }
  return false;
}

std::uint64_t Dla::cycle() const {
  return static_cast<std::uint64_t>(sc_core::sc_time_stamp() / period_ + 0.5);
}

std::vector<const stats::Group*> Dla::statistics() const {
  std::vector<const stats::Group*> groups;
  for (const auto& m : models_) groups.push_back(&m->statistics());
  return groups;
}

void Dla::set_timeline(stats::Timeline* timeline) {
  timeline_ = timeline;
  layer_tracks_.clear();
  if (timeline_ != nullptr) {
    for (const Engine& e : engines()) layer_tracks_.push_back(timeline_->track(e.name, "layers"));
  }
  for (const auto& m : models_) m->set_timeline(timeline);
}

void Dla::trace_busy_signals(sc_core::sc_trace_file* file) {
  drive_signals_ = true;
  for (std::size_t i = 0; i < busy_signals_.size(); ++i) {
    sc_core::sc_trace(file, *busy_signals_[i], std::string(engines()[i].name) + ".busy");
  }
}

void Dla::trace_engine_signals(sc_core::sc_trace_file* file) {
  for (const auto& m : models_) m->trace_signals(file);
}

void Dla::update_signals() {
  if (!drive_signals_) return;
  for (std::size_t i = 0; i < busy_signals_.size(); ++i)
    busy_signals_[i]->write(models_[i]->busy());
}

bool Dla::units_free(const dla::UnitList& units) const {
  for (std::size_t i = 0; i < models_.size(); ++i) {
    if (!models_[i]->busy()) continue;
    for (std::string_view busy : running_[i].units) {
      for (std::string_view u : units) {
        if (u == busy) return false;
      }
    }
  }
  return true;
}

void Dla::start_ready_engines() {
  for (std::size_t i = 0; i < engines().size(); ++i) {
    if (models_[i]->busy()) {
      offer_prefetch(i);
      continue;
    }
    RegisterFile::Groups groups = regs_.consumers();
    if (!dla::ready_to_start(engines()[i], regs_, groups)) continue;
    const dla::UnitList units = engines()[i].units(dla::group_reader(regs_, groups));
    if (!units_free(units)) continue;  // a shared unit (SDP) is busy in another engine
    if (dla::feeds_pdp(engines()[i], dla::group_reader(regs_, groups))) {
      const std::size_t pdp = dla::engine_index("PDP");
      const dla::UnitList pdp_units = dla::pdp_engine().units(dla::group_reader(regs_, groups));
      if (models_[pdp]->busy() || !units_free(pdp_units)) continue;
    }
    start(i, std::move(groups), units);
  }
}

void Dla::start(std::size_t engine_index, RegisterFile::Groups groups, const dla::UnitList& units) {
  const std::size_t i = engine_index;
  const Engine& e = engines()[i];
  const dla::RegRead read = dla::group_reader(regs_, groups);
  overlays_[i] = std::make_unique<OverlayMemory>(memory_);
  dla::OpResult r = e.run(hw_, read, dla::lut_of(e, regs_), *overlays_[i]);
  dla::start_group(e, regs_, groups);
  if (r.to_pdp == nullptr) {
    launch(i, groups, units, std::move(r), nullptr);
    return;
  }
  // The flying PDP starts with its producer; it writes the pooled output (its own overlay).
  const std::size_t p = dla::engine_index("PDP");
  const Engine& pdp = dla::pdp_engine();
  overlays_[p] = std::make_unique<OverlayMemory>(memory_);
  dla::OpResult pooled = dla::run_pdp_on_the_fly(hw_, read, *r.to_pdp, *overlays_[p]);
  dla::start_group(pdp, regs_, groups);
  flying_link_.reset();
  const dla::UnitList pdp_units = pdp.units(read);
  launch(i, groups, units, std::move(r), &flying_link_);
  launch(p, groups, pdp_units, std::move(pooled), &flying_link_);
}

void Dla::offer_prefetch(std::size_t i) {
  Running& r = running_[i];
  if (r.prefetch_offered || engines()[i].name != "CONV") return;
  const unsigned next = regs_.consumer("CDMA") ^ 1U;
  if (!regs_.op_enabled("CDMA", next) || !regs_.op_enabled("CSC", next)) return;
  r.prefetch_offered = true;
  models_[i]->prefetch([this, next](std::uint32_t addr) { return regs_.value(addr, next); });
}

void Dla::launch(std::size_t i, const RegisterFile::Groups& groups, const dla::UnitList& units,
                 dla::OpResult r, dla::FlyingLink* link) {
  const Engine& e = engines()[i];
  const dla::RegRead read = dla::group_reader(regs_, groups);
  const std::size_t layer = layers_.size();
  LayerTiming timing;
  timing.engine = std::string(e.name);
  timing.group = regs_.group_of(units.names[0], groups);
  timing.start_cycle = cycle();
  timing.end_cycle = 0;
  timing.result = std::move(r);
  timing.engine_index = i;
  timing.counters_at_start = models_[i]->statistics().snapshot();
  layers_.push_back(std::move(timing));
  models_[i]->set_flying_link(link);
  models_[i]->start(e, layers_.back().result, read, [this, i, layer] { finish(i, layer); });
  running_[i] = {groups, units};
  offer_prefetch(i);  // the next group may be enabled already
}

void Dla::stage_done(std::size_t engine_index, std::size_t index) {
  Running& r = running_[engine_index];
  if (!models_[engine_index]->busy() || (r.raised_early >> index & 1u) != 0) return;
  r.raised_early |= 1u << index;
  regs_.raise_interrupt(dla::interrupt_bit(engines()[engine_index], regs_, r.groups, index));
  interrupts_.announce();
  interrupts_.update_signal();
}

void Dla::finish(std::size_t engine_index, std::size_t layer) {
  const Engine& e = engines()[engine_index];
  const RegisterFile::Groups& groups = running_[engine_index].groups;
  overlays_[engine_index]->commit();
  overlays_[engine_index].reset();
  LayerTiming& l = layers_[layer];
  l.end_cycle = cycle();
  l.counters = stats::delta(l.counters_at_start, models_[engine_index]->statistics().snapshot());
  l.perf_registers = models_[engine_index]->perf_registers(e, dla::group_reader(regs_, groups));
  if (timeline_ != nullptr) {
    timeline_->slice(layer_tracks_[engine_index], stats::Detail::kLayer, l.start_cycle, l.end_cycle,
                     "layer " + std::to_string(layer) + " group " + std::to_string(l.group));
  }
  for (const auto& [addr, value] : l.perf_registers) regs_.set_value(addr, groups, value);
  dla::complete_group(e, regs_, groups, l.result, running_[engine_index].raised_early);
  update_signals();
  interrupts_.announce();  // a PPU channel may wait for it (WAIT_DLA); the host's wait ends
  try {
    start_ready_engines();  // the other register group (BDMA: the next copy) may be waiting
  } catch (...) {
    pending_error_ = std::current_exception();
    sc_core::sc_pause();
  }
  update_signals();
  interrupts_.update_signal();
}

std::uint64_t Dla::layer_counter(const LayerTiming& l, const std::string& name) const {
  const stats::Group& group = engine(l.engine_index).statistics();
  for (std::size_t i = 0; i < group.size() && i < l.counters.size(); ++i) {
    if (group.info(i).name == name) return l.counters[i];
  }
  return 0;
}

}  // namespace octasim::soc
