// The OCTAV unit's functional model against models/: for every element type, layout and
// granularity the clipping scalars equal models::octav on the same FP32 values (rounded to
// FP32), and the registers, memory results and auto-programmed convertor fields follow.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/quant/clip_convertor.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/memory_image.hpp"
#include "tests/octav/octav_test_util.hpp"

namespace octasim::octav {
namespace {

namespace R = octasim::regs;
using test::RegMap;
using test::TypedTensor;

constexpr unsigned kAtom = 8;
constexpr std::uint64_t kSrc = 0x10000;
constexpr std::uint64_t kResult = 0x80000;

struct Program {
  DataType type = DataType::kInt8;
  bool unsigned_data = false;
  bool flat = false;
  std::uint32_t w = 1, h = 1, c = 1, length = 0;
  std::uint32_t granularity = R::OCTAV::D_MISC_CFG::GRANULARITY_TENSOR;
  std::uint32_t vector = 0;
  int bits = 4;
  int max_iterations = 20;
  float tolerance = 1e-4f;
  std::uint32_t init = R::OCTAV::D_MISC_CFG::INIT_MODE_HALF_MAX;
  float initial = 0.0f;
  std::uint32_t auto_program = R::OCTAV::D_MISC_CFG::AUTO_PROGRAM_NONE;
  bool auto_clamp = false;
};

std::uint32_t line_stride(const Program& p) {
  return p.w * kAtom + 16;  // padded lines
}
std::uint32_t surface_stride(const Program& p) {
  return p.h * line_stride(p) + 64;
}

RegMap registers(const Program& p) {
  using M = R::OCTAV::D_MISC_CFG;
  RegMap r;
  std::uint32_t misc = M::DATA_TYPE.set(0, static_cast<std::uint32_t>(p.type));
  misc = M::SIGNEDNESS.set(misc, p.unsigned_data ? M::SIGNEDNESS_UNSIGNED : M::SIGNEDNESS_SIGNED);
  misc = M::LAYOUT.set(misc, p.flat ? M::LAYOUT_FLAT : M::LAYOUT_FEATURE);
  misc = M::GRANULARITY.set(misc, p.granularity);
  misc = M::INIT_MODE.set(misc, p.init);
  misc = M::AUTO_PROGRAM.set(misc, p.auto_program);
  misc = M::AUTO_CLAMP.set(misc, p.auto_clamp ? 1 : 0);
  r.set(M::kAddr, misc);
  r.set(R::OCTAV::D_BITS::kAddr, static_cast<std::uint32_t>(p.bits));
  r.set(R::OCTAV::D_SRC_BASE_ADDR_LOW::kAddr, static_cast<std::uint32_t>(kSrc));
  r.set(R::OCTAV::D_DATAIN_SIZE_0::kAddr, (p.w - 1) | (p.h - 1) << 16);
  r.set(R::OCTAV::D_DATAIN_SIZE_1::kAddr, p.c - 1);
  r.set(R::OCTAV::D_SRC_LINE_STRIDE::kAddr, line_stride(p));
  r.set(R::OCTAV::D_SRC_SURFACE_STRIDE::kAddr, surface_stride(p));
  r.set(R::OCTAV::D_FLAT_LENGTH::kAddr, p.length);
  r.set(R::OCTAV::D_VECTOR_SIZE::kAddr, p.vector);
  r.set(R::OCTAV::D_MAX_ITERATIONS::kAddr, static_cast<std::uint32_t>(p.max_iterations));
  r.set(R::OCTAV::D_TOLERANCE::kAddr, test::fp32_bits(p.tolerance));
  r.set(R::OCTAV::D_INITIAL_VALUE::kAddr, test::fp32_bits(p.initial));
  r.set(R::OCTAV::D_RESULT_ADDR_LOW::kAddr, static_cast<std::uint32_t>(kResult));
  return r;
}

std::uint32_t status(const dla::OpResult& r, std::uint32_t addr) {
  for (const auto& [a, v] : r.status) {
    if (a == addr) return v;
  }
  ADD_FAILURE() << "no status write to 0x" << std::hex << addr;
  return 0;
}

bool has_status(const dla::OpResult& r, std::uint32_t addr) {
  return std::any_of(r.status.begin(), r.status.end(),
                     [addr](const auto& s) { return s.first == addr; });
}

models::Grouping model_grouping(const Program& p) {
  using M = R::OCTAV::D_MISC_CFG;
  if (p.granularity == M::GRANULARITY_CHANNEL) return models::Grouping::per_channel(0);
  if (p.granularity == M::GRANULARITY_VECTOR) return models::Grouping::per_vector(p.vector);
  return models::Grouping::per_tensor();
}

models::OctavOptions model_options(const Program& p) {
  models::OctavOptions o;
  o.bits = p.bits;
  o.sign = p.unsigned_data ? models::Signedness::kUnsigned : models::Signedness::kSigned;
  o.max_iterations = p.max_iterations;
  o.tolerance = p.tolerance;
  if (p.init == R::OCTAV::D_MISC_CFG::INIT_MODE_ZERO) o.init = models::OctavInit::kZero;
  if (p.init == R::OCTAV::D_MISC_CFG::INIT_MODE_VALUE) {
    o.init = models::OctavInit::kValue;
    o.initial_value = p.initial;
  }
  return o;
}

// Runs the unit on `t` as programmed and checks every result against models::octav.
dla::OpResult run_and_check(const Program& p, const TypedTensor& t, HwConfig hw = HwConfig{}) {
  MemoryImage mem;
  if (p.flat) {
    mem.write(kSrc, t.raw.data(), t.raw.size());
  } else {
    test::write_feature(mem, kSrc, t, p.w, p.h, p.c, kAtom, line_stride(p), surface_stride(p));
  }
  const RegMap regs = registers(p);
  hw.dla.memory_atomic_size = kAtom;
  const dla::OpResult r = run_octav(hw, regs.reader(), LutTables{}, mem);

  const std::vector<std::size_t> shape =
      p.flat ? std::vector<std::size_t>{p.length} : std::vector<std::size_t>{p.c, p.h, p.w};
  const models::GroupedTensor grouped(t.values.data(), shape, model_grouping(p));
  const std::vector<models::ClipResult> want = models::octav(grouped, model_options(p));
  int max_iterations = 0;
  std::uint32_t unconverged = 0;
  for (const auto& g : want) {
    max_iterations = std::max(max_iterations, g.iterations);
    unconverged += g.converged ? 0 : 1;
  }
  EXPECT_EQ(status(r, R::OCTAV::D_CLIP_RESULT::kAddr),
            test::fp32_bits(static_cast<float>(want[0].clip)));
  EXPECT_EQ(status(r, R::OCTAV::D_ITERATIONS::kAddr), static_cast<std::uint32_t>(max_iterations));
  EXPECT_EQ(status(r, R::OCTAV::D_GROUPS::kAddr), want.size());
  EXPECT_EQ(status(r, R::OCTAV::D_UNCONVERGED_GROUPS::kAddr), unconverged);
  EXPECT_EQ(status(r, R::OCTAV::D_CONVERGED::kAddr), unconverged == 0 ? 1u : 0u);
  EXPECT_EQ(status(r, R::OCTAV::D_PERF_PASSES::kAddr), 1u + static_cast<unsigned>(max_iterations));
  if (p.granularity != R::OCTAV::D_MISC_CFG::GRANULARITY_TENSOR) {
    std::vector<std::uint8_t> out(want.size() * 4);
    mem.read(kResult, out.data(), out.size());
    for (std::size_t g = 0; g < want.size(); ++g) {
      const std::uint32_t bits = out[4 * g] | out[4 * g + 1] << 8 | out[4 * g + 2] << 16 |
                                 static_cast<std::uint32_t>(out[4 * g + 3]) << 24;
      EXPECT_EQ(bits, test::fp32_bits(static_cast<float>(want[g].clip))) << "group " << g;
    }
  }
  return r;
}

class EveryType : public ::testing::TestWithParam<DataType> {};

double laplace_scale(DataType t) {
  switch (t) {
    case DataType::kInt8:
      return 12.0;
    case DataType::kInt16:
      return 900.0;
    case DataType::kInt32:
      return 3.0e7;  // beyond 2^24: the front end rounds to FP32
    default:
      return 0.75;
  }
}

TEST_P(EveryType, PerTensorFeatureLayout) {
  Program p;
  p.type = GetParam();
  p.w = 13;
  p.h = 5;
  p.c = 11;  // several surfaces, a partial last one
  const TypedTensor t =
      test::laplace_tensor(p.type, std::size_t{p.w} * p.h * p.c, laplace_scale(p.type), 7);
  const dla::OpResult r = run_and_check(p, t);
  EXPECT_GT(status(r, R::OCTAV::D_ITERATIONS::kAddr), 1u);  // a real recursion ran
}

TEST_P(EveryType, PerChannelFeatureLayout) {
  Program p;
  p.type = GetParam();
  p.w = 9;
  p.h = 7;
  p.c = 10;
  p.bits = 3;
  p.granularity = R::OCTAV::D_MISC_CFG::GRANULARITY_CHANNEL;
  run_and_check(
      p, test::laplace_tensor(p.type, std::size_t{p.w} * p.h * p.c, laplace_scale(p.type), 11));
}

TEST_P(EveryType, PerVectorFeatureLayout) {
  Program p;
  p.type = GetParam();
  p.w = 20;  // runs of 8, 8, 4
  p.h = 3;
  p.c = 5;
  p.bits = 5;
  p.granularity = R::OCTAV::D_MISC_CFG::GRANULARITY_VECTOR;
  p.vector = 8;
  run_and_check(
      p, test::laplace_tensor(p.type, std::size_t{p.w} * p.h * p.c, laplace_scale(p.type), 13));
}

TEST_P(EveryType, FlatUnsignedPerVector) {
  Program p;
  p.type = GetParam();
  p.flat = true;
  p.length = 1000;
  p.unsigned_data = true;
  p.bits = 6;
  p.granularity = R::OCTAV::D_MISC_CFG::GRANULARITY_VECTOR;
  p.vector = 96;
  run_and_check(p, test::laplace_tensor(p.type, p.length, laplace_scale(p.type), 17));
}

TEST_P(EveryType, FlatPerTensorFromZeroAndFromAValue) {
  Program p;
  p.type = GetParam();
  p.flat = true;
  p.length = 777;
  p.init = R::OCTAV::D_MISC_CFG::INIT_MODE_ZERO;
  const TypedTensor t = test::laplace_tensor(p.type, p.length, laplace_scale(p.type), 19);
  run_and_check(p, t);
  p.init = R::OCTAV::D_MISC_CFG::INIT_MODE_VALUE;
  p.initial = static_cast<float>(3.0 * laplace_scale(p.type));
  p.max_iterations = 3;  // stops before converging
  p.tolerance = 0.0f;
  const dla::OpResult r = run_and_check(p, t);
  EXPECT_EQ(status(r, R::OCTAV::D_CONVERGED::kAddr), 0u);
  EXPECT_EQ(status(r, R::OCTAV::D_ITERATIONS::kAddr), 3u);
}

TEST_P(EveryType, SmallVectorsAtZeroToleranceHitTwoValueCycles) {
  // Short groups of discrete data with tolerance 0: the recursion ends on the two-value cycle
  // around a data magnitude (the smaller value is kept) in many groups.
  Program p;
  p.type = GetParam();
  p.flat = true;
  p.length = 4096;
  p.bits = 2;
  p.tolerance = 0.0f;
  p.max_iterations = 60;
  p.granularity = R::OCTAV::D_MISC_CFG::GRANULARITY_VECTOR;
  p.vector = 12;
  run_and_check(p, test::laplace_tensor(p.type, p.length, laplace_scale(p.type), 37));
}

INSTANTIATE_TEST_SUITE_P(Types, EveryType,
                         ::testing::Values(DataType::kInt8, DataType::kInt16, DataType::kInt32,
                                           DataType::kFp16, DataType::kFp32),
                         [](const auto& param_info) {
                           return std::string(data_type_name(param_info.param));
                         });

TEST(OctavFunctional, Int32FrontEndRoundsToNearestEven) {
  // 2^24 + 1 is halfway between 2^24 and 2^24 + 2: even mantissa wins, 2^24. 2^24 + 3 -> + 4.
  MemoryImage mem;
  const std::int32_t v[2] = {16777217, -16777219};
  mem.write(kSrc, reinterpret_cast<const std::uint8_t*>(v), sizeof v);
  Program p;
  p.type = DataType::kInt32;
  p.flat = true;
  p.length = 2;
  const OctavOp op = decode_octav(registers(p).reader(), kAtom);
  const std::vector<float> x = read_octav_input(op, mem, kAtom);
  EXPECT_EQ(x[0], 16777216.0f);
  EXPECT_EQ(x[1], -16777220.0f);
}

TEST(OctavFunctional, CounterFieldsHoldTheLongestRun) {
  // D_MAX_ITERATIONS is at most 255, so a run makes at most 256 passes (pass 0 included).
  EXPECT_EQ(R::OCTAV::D_PERF_PASSES::PERF_PASSES.get(256), 256u);
  EXPECT_EQ(R::OCTAV::D_ITERATIONS::ITERATIONS.get(255), 255u);
  EXPECT_EQ(R::OCTAV::D_MAX_ITERATIONS::MAX_ITERATIONS.get(255), 255u);
}

TEST(OctavFunctional, DegenerateGroups) {
  // Channel 0 all zero -> 0; channel 1 one magnitude (5, -5) -> 5; both after 0 iterations.
  Program p;
  p.type = DataType::kInt8;
  p.w = 4;
  p.c = 2;
  p.granularity = R::OCTAV::D_MISC_CFG::GRANULARITY_CHANNEL;
  TypedTensor t;
  t.type = DataType::kInt8;
  const std::int8_t vals[8] = {0, 0, 0, 0, 5, -5, 0, 5};
  for (std::int8_t v : vals) {
    t.raw.push_back(static_cast<std::uint8_t>(v));
    t.values.push_back(v);
  }
  const dla::OpResult r = run_and_check(p, t);
  EXPECT_EQ(status(r, R::OCTAV::D_ITERATIONS::kAddr), 0u);
  EXPECT_EQ(status(r, R::OCTAV::D_PERF_PASSES::kAddr), 1u);
}

TEST(OctavFunctional, AutoProgramWritesTheSdpConvertor) {
  Program p;
  p.type = DataType::kInt16;
  p.w = 16;
  p.h = 4;
  p.c = 8;
  p.bits = 8;
  p.auto_program = R::OCTAV::D_MISC_CFG::AUTO_PROGRAM_SDP;
  const TypedTensor t = test::laplace_tensor(p.type, std::size_t{p.w} * p.h * p.c, 900.0, 23);
  const dla::OpResult r = run_and_check(p, t);
  const float clip = test::fp32_of(status(r, R::OCTAV::D_CLIP_RESULT::kAddr));
  const models::ConvertorParams want =
      models::clip_to_convertor(clip, 8, models::Signedness::kSigned);
  EXPECT_EQ(status(r, R::SDP::D_CVT_OFFSET::kAddr), static_cast<std::uint32_t>(want.offset));
  EXPECT_EQ(status(r, R::SDP::D_CVT_SCALE::kAddr), static_cast<std::uint16_t>(want.scale));
  EXPECT_EQ(status(r, R::SDP::D_CVT_SHIFT::kAddr), want.shift);
  EXPECT_FALSE(has_status(r, R::CDP::D_DATOUT_SCALE::kAddr));
  EXPECT_FALSE(has_status(r, R::SDP::D_DP_BS_ALU_SRC_VALUE::kAddr));  // no AUTO_CLAMP
  // The multiplier is 128 / clip to within half a unit of the scale's last place.
  EXPECT_NEAR(models::convertor_multiplier(want), 128.0 / static_cast<double>(clip),
              std::ldexp(0.5, -static_cast<int>(want.shift)));
}

TEST(OctavFunctional, AutoClampWritesTheBsAndBnOperands) {
  Program p;
  p.type = DataType::kInt16;
  p.flat = true;
  p.length = 2000;
  p.bits = 4;
  p.auto_program = R::OCTAV::D_MISC_CFG::AUTO_PROGRAM_SDP;
  p.auto_clamp = true;
  const dla::OpResult r = run_and_check(p, test::laplace_tensor(p.type, p.length, 700.0, 43));
  const float clip = test::fp32_of(status(r, R::OCTAV::D_CLIP_RESULT::kAddr));
  ASSERT_GT(clip, 100.0f);
  // floor(clip) and its negation, as INT16 register values.
  const auto hi = static_cast<std::int32_t>(std::floor(clip));
  EXPECT_EQ(status(r, R::SDP::D_DP_BS_ALU_SRC_VALUE::kAddr), static_cast<std::uint32_t>(hi));
  EXPECT_EQ(status(r, R::SDP::D_DP_BN_ALU_SRC_VALUE::kAddr),
            static_cast<std::uint32_t>(static_cast<std::uint16_t>(-hi)));
  EXPECT_TRUE(has_status(r, R::SDP::D_CVT_SCALE::kAddr));
}

TEST(OctavFunctional, AutoProgramWritesTheCdpConvertor) {
  Program p;
  p.type = DataType::kInt8;
  p.flat = true;
  p.length = 512;
  p.bits = 8;
  p.auto_program = R::OCTAV::D_MISC_CFG::AUTO_PROGRAM_CDP;
  const dla::OpResult r = run_and_check(p, test::laplace_tensor(p.type, p.length, 10.0, 29));
  EXPECT_TRUE(has_status(r, R::CDP::D_DATOUT_SCALE::kAddr));
  EXPECT_TRUE(has_status(r, R::CDP::D_DATOUT_SHIFTER::kAddr));
  EXPECT_FALSE(has_status(r, R::SDP::D_CVT_SCALE::kAddr));
}

TEST(OctavFunctional, BufferedInputIsReadOnce) {
  Program p;
  p.type = DataType::kInt8;
  p.flat = true;
  p.length = 4096;
  const TypedTensor t = test::laplace_tensor(p.type, p.length, 10.0, 31);
  HwConfig hw;
  hw.octav.buffer_bytes = 4096;
  const dla::OpResult fits = run_and_check(p, t, hw);
  const std::uint32_t passes = status(fits, R::OCTAV::D_PERF_PASSES::kAddr);
  EXPECT_EQ(status(fits, R::OCTAV::D_PERF_READ_BYTES::kAddr), 4096u);
  EXPECT_EQ(status(fits, R::OCTAV::D_PERF_ELEMENTS::kAddr), 4096u * passes);
  hw.octav.buffer_bytes = 4088;
  const dla::OpResult spills = run_and_check(p, t, hw);
  EXPECT_EQ(status(spills, R::OCTAV::D_PERF_READ_BYTES::kAddr), 4096u * passes);
}

void expect_refused(const Program& p, const std::string& fragment, DataType type_bits_override,
                    bool override_type) {
  RegMap regs = registers(p);
  if (override_type) {
    regs.set(R::OCTAV::D_MISC_CFG::kAddr,
             R::OCTAV::D_MISC_CFG::DATA_TYPE.set(regs.values[R::OCTAV::D_MISC_CFG::kAddr],
                                                 static_cast<std::uint32_t>(type_bits_override)));
  }
  try {
    (void)decode_octav(regs.reader(), kAtom);
    FAIL() << "expected a refusal mentioning " << fragment;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
}

TEST(OctavFunctional, RefusesBadProgramming) {
  Program p;
  p.w = 4;
  expect_refused(p, "DATA_TYPE has the reserved value 7", static_cast<DataType>(7), true);
  Program flat_channel = p;
  flat_channel.flat = true;
  flat_channel.length = 4;
  flat_channel.granularity = R::OCTAV::D_MISC_CFG::GRANULARITY_CHANNEL;
  expect_refused(flat_channel, "per-channel granularity needs the feature layout", {}, false);
  Program auto_channel = p;
  auto_channel.granularity = R::OCTAV::D_MISC_CFG::GRANULARITY_CHANNEL;
  auto_channel.auto_program = R::OCTAV::D_MISC_CFG::AUTO_PROGRAM_SDP;
  expect_refused(auto_channel, "auto-program needs per-tensor granularity", {}, false);
  Program no_iter = p;
  no_iter.max_iterations = 0;
  expect_refused(no_iter, "D_MAX_ITERATIONS is 0", {}, false);
  Program one_bit = p;
  one_bit.bits = 1;
  expect_refused(one_bit, "D_BITS is 1", {}, false);
  Program clamp_cdp = p;
  clamp_cdp.auto_program = R::OCTAV::D_MISC_CFG::AUTO_PROGRAM_CDP;
  clamp_cdp.auto_clamp = true;
  expect_refused(clamp_cdp, "AUTO_CLAMP needs AUTO_PROGRAM=SDP", {}, false);
  Program vector0 = p;
  vector0.granularity = R::OCTAV::D_MISC_CFG::GRANULARITY_VECTOR;
  expect_refused(vector0, "D_VECTOR_SIZE is 0", {}, false);
}

TEST(OctavFunctional, FakeQuantWritesTheSdpOperands) {
  for (bool unsigned_data : {false, true}) {
    Program p;
    p.type = DataType::kInt8;
    p.unsigned_data = unsigned_data;
    p.w = 16;
    p.h = 4;
    p.c = 8;
    p.bits = 4;
    p.auto_program = R::OCTAV::D_MISC_CFG::AUTO_PROGRAM_FAKEQUANT;
    const TypedTensor t = test::laplace_tensor(p.type, std::size_t{p.w} * p.h * p.c, 12.0, 47);
    const dla::OpResult r = run_and_check(p, t);
    const float clip = test::fp32_of(status(r, R::OCTAV::D_CLIP_RESULT::kAddr));
    ASSERT_GT(clip, 1.0f);
    const models::FakeQuantParams want = models::clip_to_fake_quant(
        clip, 4, unsigned_data ? models::Signedness::kUnsigned : models::Signedness::kSigned);
    const auto u16 = [](std::int16_t v) { return std::uint32_t{static_cast<std::uint16_t>(v)}; };
    EXPECT_EQ(status(r, R::SDP::D_DP_BS_ALU_SRC_VALUE::kAddr), u16(want.hi));
    EXPECT_EQ(status(r, R::SDP::D_DP_BS_MUL_SRC_VALUE::kAddr), u16(want.r1));
    EXPECT_EQ(status(r, R::SDP::D_DP_BN_ALU_SRC_VALUE::kAddr), u16(want.lo));
    EXPECT_EQ(status(r, R::SDP::D_DP_BN_MUL_SRC_VALUE::kAddr), u16(want.r2));
    // Register operands (SRC field 0) with the shifts in bits 8 and up.
    EXPECT_EQ(status(r, R::SDP::D_DP_BN_ALU_CFG::kAddr), std::uint32_t{want.lo_shift} << 8);
    EXPECT_EQ(status(r, R::SDP::D_DP_BN_MUL_CFG::kAddr), std::uint32_t{want.t2} << 8);
    EXPECT_EQ(status(r, R::SDP::D_CVT_OFFSET::kAddr), 0u);
    EXPECT_EQ(status(r, R::SDP::D_CVT_SCALE::kAddr), u16(want.cvt.scale));
    EXPECT_EQ(status(r, R::SDP::D_CVT_SHIFT::kAddr), want.cvt.shift);
    // The clamp sits at the integers around the clip; the convertor dequantizes codes to s/M.
    EXPECT_NEAR(want.hi, static_cast<double>(clip), 1.0);
    EXPECT_NEAR(models::convertor_multiplier(want.cvt),
                static_cast<double>(clip) / (unsigned_data ? 15 : 7),
                1e-4 * static_cast<double>(clip));
    EXPECT_FALSE(has_status(r, R::CDP::D_DATOUT_SCALE::kAddr));
  }
}

TEST(OctavFunctional, RefusesBadFakeQuant) {
  Program p;
  p.w = 4;
  p.auto_program = R::OCTAV::D_MISC_CFG::AUTO_PROGRAM_FAKEQUANT;
  Program channel = p;
  channel.granularity = R::OCTAV::D_MISC_CFG::GRANULARITY_CHANNEL;
  expect_refused(channel, "AUTO_PROGRAM=FAKEQUANT needs per-tensor granularity", {}, false);
  Program vector = p;
  vector.granularity = R::OCTAV::D_MISC_CFG::GRANULARITY_VECTOR;
  vector.vector = 2;
  expect_refused(vector, "AUTO_PROGRAM=FAKEQUANT needs per-tensor granularity", {}, false);
  Program fp16 = p;
  fp16.type = DataType::kFp16;
  expect_refused(fp16, "AUTO_PROGRAM=FAKEQUANT needs DATA_TYPE INT8 or INT16", {}, false);
  Program clamp = p;
  clamp.auto_clamp = true;
  expect_refused(clamp, "AUTO_CLAMP needs AUTO_PROGRAM=SDP", {}, false);
}

TEST(OctavFunctional, RefusesNaNInput) {
  MemoryImage mem;
  const float v[3] = {1.0f, std::nanf(""), 2.0f};
  mem.write(kSrc, reinterpret_cast<const std::uint8_t*>(v), sizeof v);
  Program p;
  p.type = DataType::kFp32;
  p.flat = true;
  p.length = 3;
  try {
    (void)run_octav(HwConfig{}, registers(p).reader(), LutTables{}, mem);
    FAIL() << "NaN accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("element 1 is NaN"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace octasim::octav
