#include "sim/dla/engines.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/core.h>

#include "octasim/regs/nvdla.hpp"
#include "sim/dla/bdma_engine.hpp"
#include "sim/dla/conv_core.hpp"
#include "sim/dla/rubik_core.hpp"
#include "sim/dla/sdp_functional.hpp"
#include "sim/dla/stream_engine.hpp"
#include "sim/mem/memory_system.hpp"
#include "sim/octav/octav_core.hpp"

namespace octasim::dla::engine_parts {

bool sdp_flying(const RegRead& regs) {
  using R = regs::SDP::D_FEATURE_MODE_CFG;
  return R::FLYING_MODE.get(regs(R::kAddr)) != R::FLYING_MODE_OFF;
}

UnitList conv_units(const RegRead& regs) {
  UnitList u;
  for (std::string_view name : {"CACC", "CDMA", "CSC", "CMAC_A", "CMAC_B", "SDP"}) u.add(name);
  if (sdp_rdma_takes_part(regs)) u.add("SDP_RDMA");
  return u;
}

UnitList sdp_units(const RegRead& /*regs*/) {
  UnitList u;
  u.add("SDP");
  u.add("SDP_RDMA");
  return u;
}

UnitList pdp_units(const RegRead& regs) {
  using R = regs::PDP::D_OPERATION_MODE_CFG;
  UnitList u;
  u.add("PDP");
  if (R::FLYING_MODE.get(regs(R::kAddr)) == R::FLYING_MODE_OFF_FLYING) u.add("PDP_RDMA");
  return u;
}

UnitList octav_units(const RegRead& /*regs*/) {
  UnitList u;
  u.add("OCTAV");
  return u;
}

UnitList bdma_units(const RegRead& /*regs*/) {
  UnitList u;
  u.add("BDMA");
  return u;
}

UnitList rubik_units(const RegRead& /*regs*/) {
  UnitList u;
  u.add("RBK");
  return u;
}

UnitList cdp_units(const RegRead& /*regs*/) {
  UnitList u;
  u.add("CDP");
  u.add("CDP_RDMA");
  return u;
}

bool always(const RegRead& /*regs*/) {
  return true;
}

bool sdp_alone(const RegRead& regs) {
  return !sdp_flying(regs);
}

bool pdp_from_memory(const RegRead& regs) {
  using R = regs::PDP::D_OPERATION_MODE_CFG;
  return R::FLYING_MODE.get(regs(R::kAddr)) == R::FLYING_MODE_OFF_FLYING;
}

OpResult pdp(const HwConfig& hw, const RegRead& regs, const LutTables& /*lut*/,
             models::ops::Memory& mem) {
  return run_pdp(hw, regs, mem);
}

std::unique_ptr<EngineModel> conv_model(const ModelSite& site) {
  auto conv = std::make_unique<ConvCore>(site.name, site.hw, site.clock_period);
  conv->dma_socket.bind(site.memory.socket);
  return conv;
}

namespace {
std::unique_ptr<EngineModel> stream_model(const ModelSite& site, const StreamSpec& spec) {
  auto stream = std::make_unique<StreamEngine>(site.name, site.hw, site.clock_period, spec);
  stream->rdma_socket.bind(site.memory.socket);
  stream->wdma_socket.bind(site.memory.socket);
  return stream;
}
}  // namespace

std::unique_ptr<EngineModel> sdp_model(const ModelSite& site) {
  return stream_model(site, sdp_stream());
}
std::unique_ptr<EngineModel> pdp_model(const ModelSite& site) {
  return stream_model(site, pdp_stream());
}
std::unique_ptr<EngineModel> cdp_model(const ModelSite& site) {
  return stream_model(site, cdp_stream());
}

std::unique_ptr<EngineModel> octav_model(const ModelSite& site) {
  auto octav_unit = std::make_unique<octav::OctavCore>(site.name, site.hw, site.clock_period);
  octav_unit->dma_socket.bind(site.memory.socket);
  return octav_unit;
}

// Both BDMA DMAs go through the memory system's socket, which routes each request by its DMA
// address: DRAM through the crossbar/L2/DRAM, the CV-SRAM through its own interface.
std::unique_ptr<EngineModel> bdma_model(const ModelSite& site) {
  auto bdma = std::make_unique<BdmaEngine>(site.name, site.hw, site.clock_period);
  bdma->read_socket.bind(site.memory.socket);
  bdma->write_socket.bind(site.memory.socket);
  return bdma;
}

std::unique_ptr<EngineModel> rubik_model(const ModelSite& site) {
  auto rubik = std::make_unique<RubikCore>(site.name, site.hw, site.clock_period);
  rubik->rdma_socket.bind(site.memory.socket);
  rubik->wdma_socket.bind(site.memory.socket);
  return rubik;
}

double mac_peak(const HwConfig& /*hw*/, const OpResult& op) {
  return 2.0 * op.macs_per_cycle;
}

double sdp_peak(const HwConfig& hw, const OpResult& /*op*/) {
  return hw.dla.sdp_bs_throughput;
}

double cdp_peak(const HwConfig& hw, const OpResult& /*op*/) {
  return hw.dla.cdp_throughput;
}

double pdp_peak(const HwConfig& hw, const OpResult& /*op*/) {
  return hw.dla.pdp_throughput;
}

double octav_peak(const HwConfig& hw, const OpResult& /*op*/) {
  return hw.octav.elements_per_cycle;
}

// A copy's "op" is a byte moved: one interface width per cycle.
double bdma_peak(const HwConfig& hw, const OpResult& /*op*/) {
  return std::max(BdmaEngine::kAtomBytes, hw.dla.primary_memif_width / 8);
}

// Rubik moves elements without computing: its peak is the interface's bytes per cycle in
// elements of the operation's size.
double rubik_peak(const HwConfig& hw, const OpResult& op) {
  const auto* d = dynamic_cast<const RubikDescriptor*>(op.descriptor.get());
  const unsigned element_bytes = d != nullptr ? d->op.params.element_bytes : 1;
  return static_cast<double>(hw.dla.primary_memif_width / 8) / element_bytes;
}

}  // namespace octasim::dla::engine_parts

namespace octasim::dla {

std::size_t engine_index(std::string_view name) {
  for (std::size_t i = 0; i < engines().size(); ++i) {
    if (engines()[i].name == name) return i;
  }
  throw std::runtime_error(fmt::format("unknown engine '{}'", name));
}

const LutTables& lut_of(const Engine& engine, const RegisterFile& regs) {
  static const LutTables kNone{};
  return engine.lut_unit.empty() ? kNone : regs.lut(engine.lut_unit);
}

RegRead group_reader(const RegisterFile& regs, const RegisterFile::Groups& groups) {
  return [&regs, groups](std::uint32_t addr) { return regs.value(addr, groups); };
}

bool feeds_pdp(const Engine& engine, const RegRead& regs) {
  using R = regs::SDP::D_FEATURE_MODE_CFG;
  const UnitList units = engine.units(regs);
  const bool has_sdp = std::find(units.begin(), units.end(), "SDP") != units.end();
  return has_sdp && R::OUTPUT_DST.get(regs(R::kAddr)) == R::OUTPUT_DST_PDP;
}

const Engine& pdp_engine() {
  return engines()[engine_index("PDP")];
}

bool flying_pdp_ready(const RegisterFile& regs, const RegisterFile::Groups& groups) {
  return regs.op_enabled("PDP", regs.group_of("PDP", groups)) &&
         !engine_parts::pdp_from_memory(group_reader(regs, groups));
}

bool ready_to_start(const Engine& engine, const RegisterFile& regs,
                    const RegisterFile::Groups& groups) {
  const RegRead read = group_reader(regs, groups);
  if (!engine.owns(read)) return false;
  for (std::string_view unit : engine.units(read)) {
    if (!regs.op_enabled(unit, regs.group_of(unit, groups))) return false;
  }
  return !feeds_pdp(engine, read) || flying_pdp_ready(regs, groups);
}

void start_group(const Engine& engine, RegisterFile& regs, const RegisterFile::Groups& groups) {
  for (std::string_view unit : engine.units(group_reader(regs, groups))) {
    regs.set_running(unit, regs.group_of(unit, groups));
  }
}

unsigned interrupt_bit(const Engine& engine, const RegisterFile& regs,
                       const RegisterFile::Groups& groups, std::size_t index) {
  const EngineInterrupt& intr = engine.interrupts.at(index);
  return intr.status_bit0 + regs.group_of(intr.unit, groups);
}

void complete_group(const Engine& engine, RegisterFile& regs, const RegisterFile::Groups& groups,
                    const OpResult& result, std::uint32_t raised_early) {
  for (const auto& [addr, value] : result.status) regs.set_value(addr, groups, value);
  const UnitList units = engine.units(group_reader(regs, groups));
  // A unit whose group is not complete yet (BDMA: operations of the group left) raises nothing.
  std::array<bool, 7> complete{};
  for (std::size_t i = 0; i < units.size; ++i) {
    complete[i] = regs.op_done(units.names[i], regs.group_of(units.names[i], groups));
  }
  const auto group_complete = [&](std::string_view unit) {
    for (std::size_t i = 0; i < units.size; ++i) {
      if (units.names[i] == unit) return complete[i];
    }
    return true;
  };
  for (std::size_t i = 0; i < engine.interrupt_count; ++i) {
    const EngineInterrupt& intr = engine.interrupts[i];
    if (!group_complete(intr.unit) || (raised_early >> i & 1u) != 0) continue;
    regs.raise_interrupt(interrupt_bit(engine, regs, groups, i));
  }
}

}  // namespace octasim::dla
