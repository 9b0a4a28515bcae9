#include "sim/dla/engines.hpp"

#include "octasim/regs/nvdla.hpp"

namespace octasim::dla {
namespace {

bool sdp_uses_rdma(const RegisterFile& regs, unsigned group) {
  using R = regs::SDP::D_FEATURE_MODE_CFG;
  return R::FLYING_MODE.get(regs.value(R::kAddr, group)) == R::FLYING_MODE_OFF;
}

bool pdp_uses_rdma(const RegisterFile& regs, unsigned group) {
  using R = regs::PDP::D_OPERATION_MODE_CFG;
  return R::FLYING_MODE.get(regs.value(R::kAddr, group)) == R::FLYING_MODE_OFF_FLYING;
}

bool always(const RegisterFile& /*regs*/, unsigned /*group*/) {
  return true;
}

OpResult pdp(const HwConfig& hw, const RegRead& regs, const LutTables& /*lut*/,
             models::ops::Memory& mem) {
  return run_pdp(hw, regs, mem);
}

}  // namespace

const std::array<Engine, 3>& engines() {
  static const std::array<Engine, 3> table{{
      {"SDP", "SDP", "SDP_RDMA", 0, sdp_uses_rdma, run_sdp},
      {"CDP", "CDP", "CDP_RDMA", 2, always, run_cdp},
      {"PDP", "PDP", "PDP_RDMA", 4, pdp_uses_rdma, pdp},
  }};
  return table;
}

void start_group(const Engine& engine, RegisterFile& regs, unsigned group) {
  regs.set_running(engine.core_unit, group);
  if (engine.uses_rdma(regs, group)) regs.set_running(engine.rdma_unit, group);
}

void complete_group(const Engine& engine, RegisterFile& regs, unsigned group,
                    const OpResult& result) {
  for (const auto& [addr, value] : result.status) regs.set_value(addr, group, value);
  const bool rdma = engine.uses_rdma(regs, group);
  regs.op_done(engine.core_unit, group);
  if (rdma) regs.op_done(engine.rdma_unit, group);
  regs.raise_interrupt(engine.done_status_bit0 + group);
}

bool ready_to_start(const Engine& engine, const RegisterFile& regs, unsigned group) {
  if (!regs.op_enabled(engine.core_unit, group)) return false;
  return !engine.uses_rdma(regs, group) || regs.op_enabled(engine.rdma_unit, group);
}

}  // namespace octasim::dla
