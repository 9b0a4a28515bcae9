// OCTAV FAKEQUANT end to end (firmware::program_octav_fake_quant: a tensor in memory -> OCTAV
// with AUTO_PROGRAM=FAKEQUANT -> the SDP it programs -> output), recorded as an NVDLA trace whose
// expected values come from models/: OCTAV's clip (models::octav on the tensor's values at B
// bits, rounded to FP32) and the SDP (models::ops::run_sdp_layer with clip_to_fake_quant's
// operands at that clip). Shared by the functional and the cycle-level tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "firmware/dla/octav.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "models/ops/sdp.hpp"
#include "models/quant/octav.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"
#include "tests/octav/octav_test_util.hpp"

namespace octasim::test {

struct FakeQuantCase {
  const char* config = "nv_small";
  firmware::Precision precision = firmware::Precision::kInt8;
  int bits = 4;
  bool is_unsigned = false;
  std::uint32_t width = 16, height = 8, channels = 12;
  double laplace_b = 14.0;  // Laplace scale of the data
  std::uint32_t seed = 1;
};

struct FakeQuantRecord {
  static constexpr std::uint64_t kSrc = 0x80000000, kOut = 0x80100000;
  firmware::OctavLayer octav;
  firmware::FakeQuantSdpLayer sdp;
  std::vector<std::int64_t> input;      // C order [C, H, W]
  std::vector<std::uint8_t> src_bytes;  // the input surface as the trace loads it
  models::ClipResult clip_result;
  float clip = 0.0f;  // OCTAV's FP32 result
  std::vector<std::uint8_t> want_out;
  std::uint64_t out_bytes = 0;
};

// Elements of a feature surface in C order [C, H, W] (sign-extended), by the layout rule.
inline std::vector<std::int64_t> read_surface(const models::ops::Memory& mem,
                                              const firmware::FeatureSurface& s,
                                              firmware::Precision p, unsigned atom) {
  const unsigned eb = firmware::element_bytes(p);
  const unsigned cpa = atom / eb;
  std::vector<std::int64_t> v(std::size_t{s.width} * s.height * s.channels);
  for (std::uint32_t c = 0; c < s.channels; ++c) {
    for (std::uint32_t h = 0; h < s.height; ++h) {
      for (std::uint32_t w = 0; w < s.width; ++w) {
        std::uint8_t b[2] = {0, 0};
        mem.read(s.address + std::uint64_t{c / cpa} * s.surface_stride +
                     std::uint64_t{h} * s.line_stride + std::uint64_t{w} * atom + (c % cpa) * eb,
                 b, eb);
        const std::int64_t x =
            eb == 1 ? static_cast<std::int8_t>(b[0]) : static_cast<std::int16_t>(b[0] | b[1] << 8);
        v[(std::size_t{c} * s.height + h) * s.width + w] = x;
      }
    }
  }
  return v;
}

// Builds the case, computes the golden and records the trace into `trace`.
inline FakeQuantRecord record_fake_quant(const HwConfig& hw, const FakeQuantCase& k,
                                         firmware::TraceWriter& trace) {
  using namespace firmware;
  const unsigned atom = hw.dla.memory_atomic_size;
  FakeQuantRecord r;
  const auto type =
      k.precision == Precision::kInt8 ? octav::DataType::kInt8 : octav::DataType::kInt16;
  TypedTensor t =
      laplace_tensor(type, std::size_t{k.width} * k.height * k.channels, k.laplace_b, k.seed);
  if (k.is_unsigned) {  // data after a ReLU
    const unsigned eb = octav::element_bytes(type);
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      if (t.values[i] >= 0.0f) continue;
      t.values[i] = 0.0f;
      std::fill(t.raw.begin() + static_cast<std::ptrdiff_t>(i * eb),
                t.raw.begin() + static_cast<std::ptrdiff_t>((i + 1) * eb), std::uint8_t{0});
    }
  }
  r.input.assign(t.values.begin(), t.values.end());
  const FeatureSurface src =
      packed_surface(FakeQuantRecord::kSrc, k.width, k.height, k.channels, atom);
  HostMemory golden;
  write_feature(golden, FakeQuantRecord::kSrc, t, k.width, k.height, k.channels, atom,
                src.line_stride, src.surface_stride);
  const std::uint64_t bytes = surface_bytes(src, k.precision, atom);
  r.src_bytes = golden.bytes(FakeQuantRecord::kSrc, bytes);

  r.octav.type = k.precision == Precision::kInt8 ? OctavDataType::kInt8 : OctavDataType::kInt16;
  r.octav.is_unsigned = k.is_unsigned;
  r.octav.src = src;
  r.octav.bits = k.bits;
  r.octav.auto_program = OctavAutoProgram::kFakeQuant;
  r.sdp.precision = k.precision;
  r.sdp.src = src;
  r.sdp.dst = packed_surface(FakeQuantRecord::kOut, k.width, k.height, k.channels, atom);
  r.sdp.bits = k.bits;
  r.sdp.is_unsigned = k.is_unsigned;

  models::OctavOptions o;
  o.bits = k.bits;
  o.sign = k.is_unsigned ? models::Signedness::kUnsigned : models::Signedness::kSigned;
  o.max_iterations = r.octav.max_iterations;
  o.tolerance = r.octav.tolerance;
  r.clip_result = models::octav(t.values.data(), t.values.size(), o);
  r.clip = static_cast<float>(r.clip_result.clip);
  (void)models::ops::run_sdp_layer(
      fake_quant_sdp_model_config(r.sdp, static_cast<double>(r.clip), atom), golden);
  r.out_bytes = surface_bytes(r.sdp.dst, k.precision, atom);
  r.want_out = golden.bytes(FakeQuantRecord::kOut, r.out_bytes);

  trace.comment("OCTAV (AUTO_PROGRAM=FAKEQUANT) -> SDP: fake quantization at the device's clip");
  trace.mem_init_zero(FakeQuantRecord::kOut, r.out_bytes);
  trace.mem_load(FakeQuantRecord::kSrc, "fake_quant_input.dat", r.src_bytes);
  (void)program_octav_fake_quant(trace, r.octav, r.sdp, 0, 0, 0, atom);
  trace.check_crc(FakeQuantRecord::kOut, r.out_bytes,
                  models::crc32(r.want_out.data(), r.want_out.size()));
  std::uint32_t clip_bits;
  std::memcpy(&clip_bits, &r.clip, 4);
  trace.check_register(regs::OCTAV::D_CLIP_RESULT::kAddr, clip_bits);
  trace.check_register(regs::OCTAV::D_ITERATIONS::kAddr,
                       static_cast<std::uint32_t>(r.clip_result.iterations));
  return r;
}

// The cases both devices run: INT8 signed B = 4 and unsigned B = 3 on nv_small, INT16 signed
// B = 8 on nv_full.
inline FakeQuantCase int8_signed_case() {
  return FakeQuantCase{};
}
inline FakeQuantCase int8_unsigned_case() {
  FakeQuantCase k;
  k.bits = 3;
  k.is_unsigned = true;
  k.laplace_b = 20.0;
  k.seed = 2;
  return k;
}
inline FakeQuantCase int16_signed_case() {
  FakeQuantCase k;
  k.config = "nv_full";
  k.precision = firmware::Precision::kInt16;
  k.bits = 8;
  k.width = 12;
  k.height = 10;
  k.channels = 20;
  k.laplace_b = 900.0;
  k.seed = 3;
  return k;
}

}  // namespace octasim::test
