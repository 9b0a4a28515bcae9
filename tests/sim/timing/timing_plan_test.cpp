// The SDP, PDP and CDP timing plans (sim/dla/timing_plan.hpp) read the operation's descriptor,
// the registers as the functional op decoded them, not the registers themselves.
#include "sim/dla/timing_plan.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>

#include <gtest/gtest.h>

#include "octasim/regs/nvdla.hpp"
#include "sim/dla/cdp_functional.hpp"
#include "sim/dla/pdp_functional.hpp"
#include "sim/dla/sdp_functional.hpp"
#include "tests/models/vec_memory.hpp"

namespace octasim::dla {
namespace {

std::uint64_t sum(const TimingPlan& p, std::uint32_t Step::*field) {
  std::uint64_t total = 0;
  for (const Step& s : p.steps) total += s.*field;
  return total;
}

// A 3x2x20 cube: 20 channels are 3 INT8 surfaces or 5 INT16 surfaces of an 8-byte atom.
OpResult cube_3x2x20(std::shared_ptr<const OperationDescriptor> descriptor) {
  OpResult op;
  op.in = {3, 2, 20};
  op.out = op.in;
  op.bytes_read = 480;
  op.bytes_written = 240;
  op.descriptor = std::move(descriptor);
  return op;
}

TEST(TimingPlan, RefusesAnOperationWithoutItsUnitsDescriptor) {
  const HwConfig hw;
  const OpResult none = cube_3x2x20(nullptr);
  EXPECT_THROW((void)plan_sdp(none, hw), std::logic_error);
  EXPECT_THROW((void)plan_pdp(none, hw), std::logic_error);
  EXPECT_THROW((void)plan_cdp(none, hw), std::logic_error);
  const OpResult sdp = cube_3x2x20(std::make_shared<SdpDescriptor>(models::ops::SdpConfig{}));
  EXPECT_THROW((void)plan_pdp(sdp, hw), std::logic_error);
  EXPECT_THROW((void)plan_cdp(sdp, hw), std::logic_error);
  EXPECT_NO_THROW((void)plan_sdp(sdp, hw));
}

// SDP: a step per line of each surface; PROC_PRECISION (from the descriptor) sets the surfaces.
TEST(TimingPlan, SdpSurfacesFollowTheDecodedPrecision) {
  const HwConfig hw;  // nv_small: 8-byte atoms, a latency buffer wider than 3 atoms
  models::ops::SdpConfig cfg;
  cfg.proc_precision = models::ops::SdpPrecision::kInt8;
  const TimingPlan int8 = plan_sdp(cube_3x2x20(std::make_shared<SdpDescriptor>(cfg)), hw);
  EXPECT_EQ(int8.steps.size(), 2u * 3);      // 2 lines x 3 surfaces
  EXPECT_EQ(int8.elements, 3u * 2 * 3 * 8);  // every atom's 8 lanes, padding included
  cfg.proc_precision = models::ops::SdpPrecision::kInt16;
  const TimingPlan int16 = plan_sdp(cube_3x2x20(std::make_shared<SdpDescriptor>(cfg)), hw);
  EXPECT_EQ(int16.steps.size(), 2u * 5);  // 2 lines x 5 surfaces
  EXPECT_EQ(int16.elements, 3u * 2 * 5 * 4);
  EXPECT_EQ(sum(int16, &Step::read_bytes), 480u);
  EXPECT_EQ(sum(int16, &Step::write_bytes), 240u);
  EXPECT_EQ(int16.pipeline_latency, hw.dla.sdp_pipeline_latency);
}

TEST(TimingPlan, CdpSurfacesFollowTheDecodedPrecision) {
  const HwConfig hw;
  models::ops::CdpLayerParams layer;
  layer.cfg.precision = models::ops::CdpPrecision::kInt16;
  const TimingPlan p = plan_cdp(cube_3x2x20(std::make_shared<CdpDescriptor>(layer)), hw);
  EXPECT_EQ(p.steps.size(), 2u * 5);
  EXPECT_EQ(p.elements, 3u * 2 * 5 * 4);
  EXPECT_EQ(p.pipeline_latency, hw.dla.cdp_pipeline_latency);
}

// A line wider than half the RDMA's latency buffer streams in equal pieces (80 atoms with a
// 128-atom buffer: 40 + 40, never 64 + 16), and an SDP with an operand surface in memory has a
// latency buffer per read stream.
TEST(TimingPlan, SdpWideLinesGoInEqualPiecesAndOperandsBringTheirOwnBuffer) {
  const HwConfig hw;  // dma_latency_buffer_atoms 128
  OpResult op = cube_3x2x20(std::make_shared<SdpDescriptor>(models::ops::SdpConfig{}));
  op.in = {80, 1, 8};  // one INT8 surface, one 80-atom line
  op.out = op.in;
  op.bytes_read = 640;
  op.bytes_written = 640;
  const TimingPlan one = plan_sdp(op, hw);
  ASSERT_EQ(one.steps.size(), 2u);
  EXPECT_EQ(one.steps[0].compute_cycles, 40u * 8);
  EXPECT_EQ(one.steps[1].compute_cycles, 40u * 8);
  EXPECT_EQ(one.read_streams, 1u);
  op.dma.operands.push_back(SurfaceRegion::linear(0x1000, 640));  // a per-element operand
  op.bytes_read = 1280;
  EXPECT_EQ(plan_sdp(op, hw).read_streams, 2u);
}

// CDP: the block changes of its width-8 blocks (height x ceil(width / 8) blocks) add their cost
// on top of the line stream's element cycles.
TEST(TimingPlan, CdpPaysForEachChangeOfWidthBlock) {
  const HwConfig hw;
  models::ops::CdpLayerParams layer;
  layer.cfg.precision = models::ops::CdpPrecision::kInt8;
  OpResult op = cube_3x2x20(std::make_shared<CdpDescriptor>(layer));
  op.in = {17, 2, 8};  // 2 lines x 3 blocks = 6 blocks, 5 changes; one surface
  op.out = op.in;
  const TimingPlan p = plan_cdp(op, hw);
  EXPECT_EQ(sum(p, &Step::compute_cycles), 17u * 2 * 8 + 5 * 4);
}

// PDP from memory: a line wider than half the latency buffer streams in pieces, the line's
// cycles (the larger of input and width-pooled output atoms) split between them.
TEST(TimingPlan, PdpWideLinesStreamInPieces) {
  namespace P = regs::PDP;
  namespace PR = regs::PDP_RDMA;
  std::map<std::uint32_t, std::uint32_t> r;
  for (const std::uint32_t a : {P::D_DATA_CUBE_IN_WIDTH::kAddr, PR::D_DATA_CUBE_IN_WIDTH::kAddr}) {
    r[a] = 159;  // 160 wide
  }
  r[P::D_DATA_CUBE_OUT_WIDTH::kAddr] = 79;
  r[PR::D_FLYING_MODE::kAddr] = PR::D_FLYING_MODE::FLYING_MODE_OFF_FLYING;
  r[PR::D_SRC_RAM_CFG::kAddr] = PR::D_SRC_RAM_CFG::SRC_RAM_TYPE_MC;
  r[PR::D_SRC_BASE_ADDR_LOW::kAddr] = 0x100;
  r[PR::D_SRC_LINE_STRIDE::kAddr] = 160 * 8;
  r[PR::D_SRC_SURFACE_STRIDE::kAddr] = 160 * 8;
  r[P::D_DST_RAM_CFG::kAddr] = P::D_DST_RAM_CFG::DST_RAM_TYPE_MC;
  r[P::D_DST_BASE_ADDR_LOW::kAddr] = 0x1000;
  r[P::D_DST_LINE_STRIDE::kAddr] = 80 * 8;
  r[P::D_DST_SURFACE_STRIDE::kAddr] = 80 * 8;
  r[P::D_POOLING_KERNEL_CFG::kAddr] = 0x100001;  // 2x1, stride 2x1
  r[PR::D_POOLING_KERNEL_CFG::kAddr] = 0x1;
  r[P::D_OPERATION_MODE_CFG::kAddr] = 0x11;  // MAX, OFF_FLYING
  r[P::D_PARTIAL_WIDTH_IN::kAddr] = 159;
  r[PR::D_PARTIAL_WIDTH_IN::kAddr] = 159;
  r[P::D_PARTIAL_WIDTH_OUT::kAddr] = 79;
  const RegRead read = [&r](std::uint32_t a) {
    const auto it = r.find(a);
    return it == r.end() ? 0u : it->second;
  };
  models::ops::test::VecMemory mem(0x2000);
  const HwConfig hw;
  const OpResult op = run_pdp(hw, read, mem);
  const TimingPlan p = plan_pdp(op, hw);
  ASSERT_EQ(p.steps.size(), 3u);  // 53 + 53 + 54 atoms
  EXPECT_EQ(sum(p, &Step::compute_cycles), 160u * 8);
  EXPECT_EQ(sum(p, &Step::read_bytes), 160u * 8);
  EXPECT_EQ(sum(p, &Step::write_bytes), 80u * 8);
  for (const Step& s : p.steps) EXPECT_LE(s.read_bytes, 64u * 8);
}

// PDP from run_pdp's result: a 4x4 INT8 max pool 2x2/2 in two width splits of 2 input / 1 output
// columns. Each split walks the 4 lines; the second split starts a new pass.
TEST(TimingPlan, PdpSplitsComeFromTheDescriptor) {
  namespace P = regs::PDP;
  namespace PR = regs::PDP_RDMA;
  std::map<std::uint32_t, std::uint32_t> r;
  for (const std::uint32_t a :
       {P::D_DATA_CUBE_IN_WIDTH::kAddr, P::D_DATA_CUBE_IN_HEIGHT::kAddr,
        PR::D_DATA_CUBE_IN_WIDTH::kAddr, PR::D_DATA_CUBE_IN_HEIGHT::kAddr}) {
    r[a] = 3;
  }
  r[P::D_DATA_CUBE_OUT_WIDTH::kAddr] = 1;
  r[P::D_DATA_CUBE_OUT_HEIGHT::kAddr] = 1;
  r[PR::D_FLYING_MODE::kAddr] = PR::D_FLYING_MODE::FLYING_MODE_OFF_FLYING;
  r[PR::D_SRC_RAM_CFG::kAddr] = PR::D_SRC_RAM_CFG::SRC_RAM_TYPE_MC;
  r[PR::D_SRC_BASE_ADDR_LOW::kAddr] = 0x100;
  r[PR::D_SRC_LINE_STRIDE::kAddr] = 32;
  r[PR::D_SRC_SURFACE_STRIDE::kAddr] = 128;
  r[P::D_DST_RAM_CFG::kAddr] = P::D_DST_RAM_CFG::DST_RAM_TYPE_MC;
  r[P::D_DST_BASE_ADDR_LOW::kAddr] = 0x400;
  r[P::D_DST_LINE_STRIDE::kAddr] = 16;
  r[P::D_DST_SURFACE_STRIDE::kAddr] = 32;
  r[P::D_POOLING_KERNEL_CFG::kAddr] = 0x110101;  // 2x2, stride 2x2
  r[PR::D_POOLING_KERNEL_CFG::kAddr] = 0x11;
  r[P::D_OPERATION_MODE_CFG::kAddr] = 0x11 | 1u << 8;  // MAX, OFF_FLYING, SPLIT_NUM 1
  r[PR::D_OPERATION_MODE_CFG::kAddr] = 1;
  r[P::D_PARTIAL_WIDTH_IN::kAddr] = 1 | 1u << 10;  // first 2, last 2
  r[PR::D_PARTIAL_WIDTH_IN::kAddr] = 1 | 1u << 10;
  const RegRead read = [&r](std::uint32_t a) {
    const auto it = r.find(a);
    return it == r.end() ? 0u : it->second;
  };
  models::ops::test::VecMemory mem(0x1000);
  const HwConfig hw;
  const OpResult op = run_pdp(hw, read, mem);
  const TimingPlan p = plan_pdp(op, hw);
  ASSERT_EQ(p.steps.size(), 2u * 4);
  for (std::size_t i = 0; i < p.steps.size(); ++i) {
    EXPECT_EQ(p.steps[i].new_pass, i == 4) << "step " << i;
  }
  EXPECT_EQ(sum(p, &Step::read_bytes), 4u * 4 * 8);   // the 16 input atoms
  EXPECT_EQ(sum(p, &Step::write_bytes), 2u * 2 * 8);  // the 4 output atoms
  EXPECT_EQ(p.elements, 4u * 4 * 8);
  EXPECT_EQ(p.pipeline_latency, hw.dla.pdp_pipeline_latency);
}

}  // namespace
}  // namespace octasim::dla
