// firmware/dla/octav: what program_octav writes decodes (sim/octav's decode_octav) to the layer
// it was given; sdp_clip_fields is models' mapping; refusals are FirmwareErrors before any write.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "firmware/dla/octav.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/octav/octav_functional.hpp"

namespace octasim::firmware {
namespace {

namespace R = octasim::regs;

// Records writes per register group, as the hardware's S_POINTER.PRODUCER selects them.
class GroupedMmio final : public Mmio {
 public:
  void write32(std::uint32_t addr, std::uint32_t value) override {
    ++writes;
    if (addr == R::OCTAV::S_POINTER::kAddr) producer = value & 1u;
    regs[producer][addr] = value;
  }
  [[nodiscard]] std::uint32_t read32(std::uint32_t /*addr*/) override { return 0; }
  void wait_interrupt(unsigned status_bit) override { waited.push_back(status_bit); }

  [[nodiscard]] dla::RegRead reader(unsigned group) const {
    return [this, group](std::uint32_t addr) {
      const auto it = regs[group].find(addr);
      return it == regs[group].end() ? 0u : it->second;
    };
  }
  std::map<std::uint32_t, std::uint32_t> regs[2];
  unsigned producer = 0;
  int writes = 0;
  std::vector<unsigned> waited;
};

TEST(OctavFirmware, ProgrammingDecodesToTheLayer) {
  OctavLayer l;
  l.type = OctavDataType::kFp16;
  l.is_unsigned = true;
  l.src = packed_surface(0x1000, 7, 5, 9, 8);
  l.granularity = OctavGranularity::kVector;
  l.vector_size = 3;
  l.bits = 6;
  l.max_iterations = 33;
  l.tolerance = 0.25f;
  l.init = OctavInit::kValue;
  l.initial_value = 1.5f;
  l.result_address = 0x123456789aULL;
  GroupedMmio m;
  EXPECT_EQ(program_octav(m, l, 1), 23u);  // OCTAV_DONE_STATUS1
  EXPECT_EQ(m.regs[1][R::OCTAV::D_OP_ENABLE::kAddr], 1u);
  const octav::OctavOp op = octav::decode_octav(m.reader(1), 8);
  EXPECT_EQ(op.type, octav::DataType::kFp16);
  EXPECT_EQ(op.sign, models::Signedness::kUnsigned);
  EXPECT_FALSE(op.flat);
  EXPECT_EQ(op.src, 0x1000u);
  EXPECT_EQ(op.width, 7u);
  EXPECT_EQ(op.height, 5u);
  EXPECT_EQ(op.channels, 9u);
  EXPECT_EQ(op.line_stride, 7u * 8);
  EXPECT_EQ(op.surface_stride, 7u * 8 * 5);
  EXPECT_EQ(op.grouping.kind, models::GroupKind::kVector);
  EXPECT_EQ(op.grouping.vector_size, 3u);
  EXPECT_EQ(op.options.bits, 6);
  EXPECT_EQ(op.options.max_iterations, 33);
  EXPECT_EQ(op.options.tolerance, 0.25);
  EXPECT_EQ(op.options.init, models::OctavInit::kValue);
  EXPECT_EQ(op.options.initial_value, 1.5);
  EXPECT_EQ(op.result_addr, 0x123456789aULL);
  EXPECT_EQ(op.auto_program, octav::AutoProgram::kNone);
}

TEST(OctavFirmware, FlatAutoProgramWithClamp) {
  OctavLayer l;
  l.type = OctavDataType::kInt32;
  l.src.address = 0x2000;
  l.flat_length = 12345;
  l.auto_program = OctavAutoProgram::kSdp;
  l.auto_clamp = true;
  GroupedMmio m;
  EXPECT_EQ(program_octav(m, l, 0), 22u);
  const octav::OctavOp op = octav::decode_octav(m.reader(0), 8);
  EXPECT_TRUE(op.flat);
  EXPECT_EQ(op.length, 12345u);
  EXPECT_EQ(op.type, octav::DataType::kInt32);
  EXPECT_EQ(op.auto_program, octav::AutoProgram::kSdp);
  EXPECT_TRUE(op.auto_clamp);
}

TEST(OctavFirmware, RefusesBeforeWriting) {
  const auto refused = [](const OctavLayer& l, const std::string& fragment) {
    GroupedMmio m;
    try {
      (void)program_octav(m, l, 0);
      ADD_FAILURE() << "accepted; expected " << fragment;
    } catch (const FirmwareError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
    EXPECT_EQ(m.writes, 0);
  };
  OctavLayer l;
  l.src = packed_surface(0, 4, 4, 4, 8);
  OctavLayer b = l;
  b.bits = 17;
  refused(b, "bits 17");
  b = l;
  b.granularity = OctavGranularity::kChannel;
  b.auto_program = OctavAutoProgram::kCdp;
  refused(b, "auto-program needs per-tensor");
  b = l;
  b.auto_clamp = true;
  refused(b, "auto_clamp needs auto-program to SDP");
  b = l;
  b.flat_length = 10;
  b.granularity = OctavGranularity::kChannel;
  refused(b, "per-channel granularity needs the feature layout");
  b = l;
  b.init = OctavInit::kRandom;  // models' guess, not a mode of the unit
  refused(b, "a random initial guess is not a mode of the unit");
}

TEST(OctavFirmware, ClipFieldsAreModelsMapping) {
  for (double s : {1.0, 77.7, 1000.0, 31000.5}) {
    for (int bits : {4, 8}) {
      const SdpClip c = sdp_clip_fields(s, bits, false);
      const models::ConvertorParams p =
          models::clip_to_convertor(s, bits, models::Signedness::kSigned);
      EXPECT_EQ(c.cvt.offset, p.offset);
      EXPECT_EQ(c.cvt.scale, p.scale);
      EXPECT_EQ(c.cvt.shift, p.shift);
      EXPECT_EQ(c.clamp_hi, static_cast<std::int16_t>(std::floor(s)));
      EXPECT_EQ(c.clamp_lo, -c.clamp_hi);
    }
  }
  EXPECT_THROW((void)sdp_clip_fields(-2.0, 8, false), FirmwareError);
}

TEST(OctavFirmware, FakeQuantModeDecodes) {
  OctavLayer l;
  l.type = OctavDataType::kInt16;
  l.src = packed_surface(0x3000, 5, 5, 5, 8);
  l.auto_program = OctavAutoProgram::kFakeQuant;
  GroupedMmio m;
  EXPECT_EQ(program_octav(m, l, 0), 22u);
  EXPECT_EQ(R::OCTAV::D_MISC_CFG::AUTO_PROGRAM.get(m.regs[0][R::OCTAV::D_MISC_CFG::kAddr]),
            R::OCTAV::D_MISC_CFG::AUTO_PROGRAM_FAKEQUANT);
  const octav::OctavOp op = octav::decode_octav(m.reader(0), 8);
  EXPECT_EQ(op.auto_program, octav::AutoProgram::kFakeQuant);
  EXPECT_EQ(op.type, octav::DataType::kInt16);
  l.type = OctavDataType::kFp16;
  GroupedMmio refused;
  EXPECT_THROW((void)program_octav(refused, l, 0), FirmwareError);
  EXPECT_EQ(refused.writes, 0);
}

// Records every write in order (SDP's groups are not modelled: only what firmware writes).
class WriteLog final : public Mmio {
 public:
  void write32(std::uint32_t addr, std::uint32_t value) override { writes[addr] = value; }
  [[nodiscard]] std::uint32_t read32(std::uint32_t /*addr*/) override { return 0; }
  void wait_interrupt(unsigned /*status_bit*/) override {}
  std::map<std::uint32_t, std::uint32_t> writes;
};

TEST(OctavFirmware, FakeQuantSdpStaticPartAndOperands) {
  namespace S = R::SDP;
  FakeQuantSdpLayer l;
  l.src = packed_surface(0x1000, 4, 4, 8, 8);
  l.dst = packed_surface(0x9000, 4, 4, 8, 8);
  l.bits = 4;
  // Left to OCTAV: the stage configuration only, no operand register, no D_OP_ENABLE.
  WriteLog octavs;
  EXPECT_EQ(program_fake_quant_sdp(octavs, l, 1, 1, 8, false), 1u);  // SDP_DONE_STATUS1
  using C = S::D_DP_BS_CFG;
  const std::uint32_t bs = octavs.writes.at(S::D_DP_BS_CFG::kAddr);
  EXPECT_EQ(C::BS_BYPASS.get(bs), C::BS_BYPASS_NO);
  EXPECT_EQ(C::BS_ALU_ALGO.get(bs), C::BS_ALU_ALGO_MIN);
  EXPECT_EQ(C::BS_MUL_BYPASS.get(bs), C::BS_MUL_BYPASS_NO);
  EXPECT_EQ(C::BS_RELU_BYPASS.get(bs), C::BS_RELU_BYPASS_YES);  // signed data
  const std::uint32_t bn = octavs.writes.at(S::D_DP_BN_CFG::kAddr);
  EXPECT_EQ(C::BS_ALU_ALGO.get(bn), C::BS_ALU_ALGO_MAX);
  EXPECT_EQ(C::BS_MUL_BYPASS.get(bn), C::BS_MUL_BYPASS_NO);
  EXPECT_EQ(octavs.writes.at(S::D_DP_BS_MUL_CFG::kAddr), 0u);  // register operand, shift 0
  for (std::uint32_t a :
       {S::D_DP_BS_ALU_SRC_VALUE::kAddr, S::D_DP_BS_MUL_SRC_VALUE::kAddr, S::D_DP_BN_ALU_CFG::kAddr,
        S::D_DP_BN_ALU_SRC_VALUE::kAddr, S::D_DP_BN_MUL_CFG::kAddr, S::D_DP_BN_MUL_SRC_VALUE::kAddr,
        S::D_CVT_OFFSET::kAddr, S::D_CVT_SCALE::kAddr, S::D_CVT_SHIFT::kAddr, S::D_OP_ENABLE::kAddr,
        R::SDP_RDMA::D_OP_ENABLE::kAddr}) {
    EXPECT_EQ(octavs.writes.count(a), 0u) << std::hex << a;
  }
  // Host-programmed: the operands of fake_quant_fields, and ReLU for unsigned data.
  l.is_unsigned = true;
  l.params = fake_quant_fields(37.25, 4, true);
  WriteLog host;
  (void)program_fake_quant_sdp(host, l, 0, 0, 8);
  EXPECT_EQ(C::BS_RELU_BYPASS.get(host.writes.at(S::D_DP_BS_CFG::kAddr)), C::BS_RELU_BYPASS_NO);
  const auto u16 = [](std::int16_t v) { return std::uint32_t{static_cast<std::uint16_t>(v)}; };
  EXPECT_EQ(host.writes.at(S::D_DP_BS_ALU_SRC_VALUE::kAddr), u16(l.params->hi));
  EXPECT_EQ(host.writes.at(S::D_DP_BS_MUL_SRC_VALUE::kAddr), u16(l.params->r1));
  EXPECT_EQ(host.writes.at(S::D_DP_BN_MUL_SRC_VALUE::kAddr), u16(l.params->r2));
  EXPECT_EQ(host.writes.at(S::D_DP_BN_MUL_CFG::kAddr), std::uint32_t{l.params->t2} << 8);
  EXPECT_EQ(host.writes.at(S::D_CVT_SCALE::kAddr), u16(l.params->cvt.scale));
  EXPECT_EQ(host.writes.at(S::D_OP_ENABLE::kAddr), 1u);
  // The model configuration holds the same stages.
  const models::ops::SdpConfig c = fake_quant_sdp_model_config(l, 37.25, 8);
  EXPECT_EQ(c.bs.alu_operand, l.params->hi);
  EXPECT_EQ(c.bn.mul_operand, l.params->r2);
  EXPECT_FALSE(c.bs.relu_bypass);
  EXPECT_THROW((void)fake_quant_fields(-1.0, 4, false), FirmwareError);
  l.bits = 1;
  WriteLog none;
  EXPECT_THROW((void)program_fake_quant_sdp(none, l, 0, 0, 8), FirmwareError);
  EXPECT_TRUE(none.writes.empty());
}

TEST(OctavFirmware, QuantizedConvRefusesInt8) {
  QuantizedConvLayer l;
  l.conv.precision = Precision::kInt8;
  GroupedMmio m;
  EXPECT_THROW((void)program_quantized_conv(m, l, ConvHardware{}), FirmwareError);
  EXPECT_EQ(m.writes, 0);
}

}  // namespace
}  // namespace octasim::firmware
