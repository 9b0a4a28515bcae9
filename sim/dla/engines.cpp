#include "sim/dla/engines.hpp"

#include "octasim/regs/nvdla.hpp"
#include "sim/dla/sdp_functional.hpp"
#include "sim/octav/octav_functional.hpp"

namespace octasim::dla {
namespace {

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

OpResult pdp(const HwConfig& hw, const RegRead& regs, const LutTables& /*lut*/,
             models::ops::Memory& mem) {
  return run_pdp(hw, regs, mem);
}

}  // namespace

const std::array<Engine, kEngineCount>& engines() {
  // GLB S_INTR_STATUS: SDP 0/1, CDP 2/3, PDP 4/5, CDMA_DAT 16/17, CDMA_WT 18/19, CACC 20/21;
  // octasim's OCTAV 22/23.
  static const std::array<Engine, kEngineCount> table{{
      {"CONV",
       "SDP",
       conv_units,
       sdp_flying,
       {{{"CDMA", 16}, {"CDMA", 18}, {"CACC", 20}, {"SDP", 0}}},
       4,
       run_conv},
      {"SDP", "SDP", sdp_units, sdp_alone, {{{"SDP", 0}}}, 1, run_sdp},
      {"CDP", "CDP", cdp_units, always, {{{"CDP", 2}}}, 1, run_cdp},
      {"PDP", "PDP", pdp_units, always, {{{"PDP", 4}}}, 1, pdp},
      {"OCTAV", "SDP", octav_units, always, {{{"OCTAV", 22}}}, 1, octav::run_octav},
  }};
  return table;
}

RegRead group_reader(const RegisterFile& regs, const RegisterFile::Groups& groups) {
  return [&regs, groups](std::uint32_t addr) { return regs.value(addr, groups); };
}

bool ready_to_start(const Engine& engine, const RegisterFile& regs,
                    const RegisterFile::Groups& groups) {
  const RegRead read = group_reader(regs, groups);
  if (!engine.owns(read)) return false;
  for (std::string_view unit : engine.units(read)) {
    if (!regs.op_enabled(unit, regs.group_of(unit, groups))) return false;
  }
  return true;
}

void start_group(const Engine& engine, RegisterFile& regs, const RegisterFile::Groups& groups) {
  for (std::string_view unit : engine.units(group_reader(regs, groups))) {
    regs.set_running(unit, regs.group_of(unit, groups));
  }
}

void complete_group(const Engine& engine, RegisterFile& regs, const RegisterFile::Groups& groups,
                    const OpResult& result) {
  for (const auto& [addr, value] : result.status) regs.set_value(addr, groups, value);
  const UnitList units = engine.units(group_reader(regs, groups));
  for (std::string_view unit : units) regs.op_done(unit, regs.group_of(unit, groups));
  for (std::size_t i = 0; i < engine.interrupt_count; ++i) {
    const EngineInterrupt& intr = engine.interrupts[i];
    regs.raise_interrupt(intr.status_bit0 + regs.group_of(intr.unit, groups));
  }
}

}  // namespace octasim::dla
