#include "sim/dla/engines.hpp"

#include <stdexcept>
#include <string>

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

bool always(const RegisterFile& /*regs*/, unsigned /*group*/) { return true; }

[[noreturn, maybe_unused]] void not_built(const char* engine) {
  throw std::runtime_error(std::string(engine) + " is not available in this build");
}

OpResult sdp(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
             models::ops::Memory& mem) {
#ifdef OCTASIM_HAVE_SDP
  return run_sdp(hw, regs, lut, mem);
#else
  (void)hw, (void)regs, (void)lut, (void)mem;
  not_built("SDP");
#endif
}

OpResult pdp(const HwConfig& hw, const RegRead& regs, const LutTables& /*lut*/,
             models::ops::Memory& mem) {
#ifdef OCTASIM_HAVE_PDP
  return run_pdp(hw, regs, mem);
#else
  (void)hw, (void)regs, (void)mem;
  not_built("PDP");
#endif
}

OpResult cdp(const HwConfig& hw, const RegRead& regs, const LutTables& lut,
             models::ops::Memory& mem) {
#ifdef OCTASIM_HAVE_CDP
  return run_cdp(hw, regs, lut, mem);
#else
  (void)hw, (void)regs, (void)lut, (void)mem;
  not_built("CDP");
#endif
}

}  // namespace

const std::array<Engine, 3>& engines() {
  static const std::array<Engine, 3> table{{
      {"SDP", "SDP", "SDP_RDMA", 0, sdp_uses_rdma, sdp},
      {"CDP", "CDP", "CDP_RDMA", 2, always, cdp},
      {"PDP", "PDP", "PDP_RDMA", 4, pdp_uses_rdma, pdp},
  }};
  return table;
}

bool ready_to_start(const Engine& engine, const RegisterFile& regs, unsigned group) {
  if (!regs.op_enabled(engine.core_unit, group)) return false;
  return !engine.uses_rdma(regs, group) || regs.op_enabled(engine.rdma_unit, group);
}

}  // namespace octasim::dla
