// OCTAV AUTO_PROGRAM=FAKEQUANT -> SDP on the functional device: firmware-recorded traces whose
// checks come from models/ (tests/octav/fake_quant_case.hpp) pass, the device's output equals
// the models/ golden byte for byte, and it is the fake quantization of the tensor at OCTAV's
// clip: within 1 of the exact ideal (tests/octav/fake_quant_ideal.hpp), on at most 2M + 1
// (signed) / M + 1 (unsigned) levels, with the values beyond the clip clipped. Also the error
// paths: FAKEQUANT with a per-channel clip or FP16 data is refused in one line by the device and
// by the firmware.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include "sim/dla/functional_device.hpp"
#include "sim/trace/player.hpp"
#include "sim/trace/trace.hpp"
#include "tests/octav/fake_quant_case.hpp"
#include "tests/octav/fake_quant_ideal.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace octasim::test {
namespace {

namespace R = octasim::regs;

// A private directory for the traces (tests/sim/sim_test_util.hpp).
using TraceDir = TempDir;

// The output against the exact ideal at the clip OCTAV computed.
void expect_fake_quantized(const FakeQuantCase& k, const FakeQuantRecord& r,
                           const std::vector<std::int64_t>& out) {
  const models::Signedness sign =
      k.is_unsigned ? models::Signedness::kUnsigned : models::Signedness::kSigned;
  const models::IntPrecision prec = k.precision == firmware::Precision::kInt8
                                        ? models::IntPrecision::kInt8
                                        : models::IntPrecision::kInt16;
  const int m = models::fake_quant_max_code(k.bits, sign);
  const auto s = static_cast<double>(r.clip);
  ASSERT_EQ(out.size(), r.input.size());
  std::set<std::int64_t> levels;
  int clipped = 0, moved = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const Ideal want = ideal(r.input[i], s, m, sign, prec);
    ASSERT_LE(std::abs(out[i] - want.value), 1)
        << "element " << i << ": input " << r.input[i] << ", clip " << s;
    levels.insert(out[i]);
    clipped += std::fabs(static_cast<double>(r.input[i])) > s ? 1 : 0;
    moved += out[i] != r.input[i] ? 1 : 0;
  }
  EXPECT_LE(levels.size(), k.is_unsigned ? m + 1u : 2u * m + 1);
  EXPECT_GT(clipped, 0);  // the clip is below the largest magnitude
  EXPECT_GT(moved, 0);    // and the grid is coarser than the data's
}

void run_case(const FakeQuantCase& k) {
  const HwConfig hw = load_hw_config(k.config);
  firmware::TraceWriter writer;
  const FakeQuantRecord r = record_fake_quant(hw, k, writer);
  // The case exercises what it claims: a real recursion, a clip below the maximum.
  ASSERT_GT(r.clip_result.iterations, 1);
  const TraceDir dir;
  dla::FunctionalDevice device(hw);
  const trace::PlayResult play =
      trace::play(trace::parse_trace_file(writer.save(dir.str(), "fake_quant.cfg")), device, {});
  ASSERT_EQ(play.checks.size(), 3u);
  for (const auto& c : play.checks) EXPECT_TRUE(c.pass) << c.description << ": " << c.detail;
  std::vector<std::uint8_t> got(r.out_bytes);
  device.memory().read(FakeQuantRecord::kOut, got.data(), got.size());
  EXPECT_EQ(got, r.want_out);
  expect_fake_quantized(
      k, r, read_surface(device.memory(), r.sdp.dst, k.precision, hw.dla.memory_atomic_size));
  ASSERT_EQ(device.layers().size(), 2u);
  EXPECT_EQ(device.layers()[0].engine, "OCTAV");
  EXPECT_EQ(device.layers()[1].engine, "SDP");
}

TEST(OctavFakeQuantE2e, Int8SignedFourBitsOnNvSmall) {
  run_case(int8_signed_case());
}

TEST(OctavFakeQuantE2e, Int8UnsignedThreeBitsOnNvSmall) {
  run_case(int8_unsigned_case());
}

TEST(OctavFakeQuantE2e, Int16SignedEightBitsOnNvFull) {
  run_case(int16_signed_case());
}

// The golden discriminates: the input passed through, or fake-quantized at another clip, is
// not what the trace's CRC check expects.
TEST(OctavFakeQuantE2e, GoldenDependsOnTheClip) {
  const FakeQuantCase k = int8_signed_case();
  const HwConfig hw = load_hw_config(k.config);
  firmware::TraceWriter writer;
  const FakeQuantRecord r = record_fake_quant(hw, k, writer);
  EXPECT_NE(r.src_bytes, r.want_out);
  firmware::HostMemory other;
  other.write(FakeQuantRecord::kSrc, r.src_bytes.data(), r.src_bytes.size());
  (void)models::ops::run_sdp_layer(
      firmware::fake_quant_sdp_model_config(r.sdp, 0.9 * static_cast<double>(r.clip),
                                            hw.dla.memory_atomic_size),
      other);
  EXPECT_NE(other.bytes(FakeQuantRecord::kOut, r.out_bytes), r.want_out);
}

// FAKEQUANT with a per-channel clip, programmed by raw register writes: the device stops the
// trace with one line naming the trace line and the reason.
TEST(OctavFakeQuantE2e, DeviceRefusesPerChannelFakeQuant) {
  using M = R::OCTAV::D_MISC_CFG;
  firmware::TraceWriter w;
  std::uint32_t misc = M::DATA_TYPE.set(0, M::DATA_TYPE_INT8);
  misc = M::GRANULARITY.set(misc, M::GRANULARITY_CHANNEL);
  misc = M::AUTO_PROGRAM.set(misc, M::AUTO_PROGRAM_FAKEQUANT);
  w.write32(M::kAddr, misc);
  w.write32(R::OCTAV::D_BITS::kAddr, 4);
  w.write32(R::OCTAV::D_SRC_BASE_ADDR_LOW::kAddr, 0x80000000u);
  w.write32(R::OCTAV::D_SRC_LINE_STRIDE::kAddr, 8 * 4);
  w.write32(R::OCTAV::D_SRC_SURFACE_STRIDE::kAddr, 8 * 4 * 4);
  w.write32(R::OCTAV::D_DATAIN_SIZE_0::kAddr, 3 | 3 << 16);
  w.write32(R::OCTAV::D_MAX_ITERATIONS::kAddr, 20);
  w.write32(R::OCTAV::D_OP_ENABLE::kAddr, 1);
  w.wait_interrupt(R::GLB::S_INTR_STATUS::OCTAV_DONE_STATUS0.lsb);
  const TraceDir dir;
  dla::FunctionalDevice device(load_hw_config("nv_small"));
  try {
    (void)trace::play(trace::parse_trace_file(w.save(dir.str(), "bad.cfg")), device, {});
    FAIL() << "accepted";
  } catch (const trace::TraceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("AUTO_PROGRAM=FAKEQUANT needs per-tensor granularity"), std::string::npos)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(OctavFakeQuantE2e, FirmwareRefusesBeforeWriting) {
  const FakeQuantCase k = int8_signed_case();
  const HwConfig hw = load_hw_config(k.config);
  firmware::TraceWriter unused_trace;
  const FakeQuantRecord good = record_fake_quant(hw, k, unused_trace);
  const unsigned atom = hw.dla.memory_atomic_size;
  const auto refused = [&](const firmware::OctavLayer& o, const firmware::FakeQuantSdpLayer& s,
                           const std::string& fragment) {
    firmware::TraceWriter t;
    try {
      (void)firmware::program_octav_fake_quant(t, o, s, 0, 0, 0, atom);
      ADD_FAILURE() << "accepted; expected " << fragment;
    } catch (const firmware::FirmwareError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
    EXPECT_TRUE(t.text().empty());
  };
  firmware::OctavLayer o = good.octav;
  o.granularity = firmware::OctavGranularity::kChannel;
  refused(o, good.sdp, "auto-program needs per-tensor granularity");
  o = good.octav;
  o.auto_program = firmware::OctavAutoProgram::kSdp;
  refused(o, good.sdp, "OCTAV must auto-program FAKEQUANT");
  o = good.octav;
  o.bits = 5;
  refused(o, good.sdp, "B and signedness (5, signed) must be the SDP layer's (4, signed)");
  o = good.octav;
  o.type = firmware::OctavDataType::kInt16;
  refused(o, good.sdp, "OCTAV's data type must be the SDP's precision");
  firmware::FakeQuantSdpLayer s = good.sdp;
  s.params = firmware::fake_quant_fields(10.0, 4, false);
  refused(good.octav, s, "must leave its operands to OCTAV");
  s = good.sdp;
  s.dst.channels += 1;
  refused(good.octav, s, "differs from the input cube");
}

}  // namespace
}  // namespace octasim::test
