// The quantized convolution end to end (firmware/dla/octav.hpp: conv -> OCTAV -> SDP), recorded
// as an NVDLA trace whose expected values all come from models/: the convolution
// (firmware::run_conv_model), OCTAV on its output (models::octav), the clip -> fields mapping
// (models::clip_to_convertor / clip_to_clamp) and the SDP (models::ops::run_sdp_layer). The
// same trace then runs max-scaling (s = max |A|, fields from firmware) through the same SDP
// stage, for comparison. Shared by the functional and the cycle-level tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "firmware/dla/conv.hpp"
#include "firmware/dla/octav.hpp"
#include "firmware/driver/host_memory.hpp"
#include "firmware/driver/trace_writer.hpp"
#include "models/numerics/crc32.hpp"
#include "models/ops/sdp.hpp"
#include "models/quant/octav.hpp"
#include "octasim/regs/nvdla.hpp"
#include "sim/core/hw_config.hpp"

namespace octasim::test {

// INT16 elements of a feature surface in C order [C, H, W], read by the layout rule.
inline std::vector<std::int16_t> read_int16_surface(const models::ops::Memory& mem,
                                                    const firmware::FeatureSurface& s,
                                                    unsigned atom) {
  std::vector<std::int16_t> v(std::size_t{s.width} * s.height * s.channels);
  const unsigned cpa = atom / 2;
  for (std::uint32_t c = 0; c < s.channels; ++c) {
    for (std::uint32_t h = 0; h < s.height; ++h) {
      for (std::uint32_t w = 0; w < s.width; ++w) {
        std::uint8_t b[2];
        mem.read(s.address + std::uint64_t{c / cpa} * s.surface_stride +
                     std::uint64_t{h} * s.line_stride + std::uint64_t{w} * atom + (c % cpa) * 2,
                 b, 2);
        v[(std::size_t{c} * s.height + h) * s.width + w] =
            static_cast<std::int16_t>(b[0] | b[1] << 8);
      }
    }
  }
  return v;
}

struct QuantizedConvCase {
  static constexpr std::uint64_t kInput = 0x80000000, kWeights = 0x80100000, kA = 0x80200000,
                                 kOctavOut = 0x80300000, kMaxOut = 0x80400000;
  int bits = 4;
  firmware::QuantizedConvLayer layer;
  firmware::ClipSdpLayer max_sdp;  // max-scaling through the same SDP stage
  // Golden values (models/).
  std::vector<double> reference;  // the convolution's exact result (= A: no saturation)
  double max_abs = 0.0;
  models::ClipResult octav;
  float clip = 0.0f;  // OCTAV's FP32 result
  firmware::SdpClip octav_fields, max_fields;
  std::vector<std::int16_t> octav_codes, max_codes;
  std::uint64_t out_bytes = 0;
};

// Builds the case on `hwc` (INT16: nv_full), computes the golden and records the trace.
inline QuantizedConvCase record_quantized_conv(const HwConfig& hwc, firmware::TraceWriter& trace) {
  using namespace firmware;
  QuantizedConvCase q;
  const ConvHardware hw = firmware::conv_hardware(hwc);
  const unsigned atom = hw.atom_bytes;
  constexpr std::uint32_t kW = 12, kH = 10, kC = 16, kK = 16;
  ConvLayer& l = q.layer.conv;
  l.precision = Precision::kInt16;
  l.src = packed_surface(QuantizedConvCase::kInput, kW, kH, kC, atom);
  l.weight_address = QuantizedConvCase::kWeights;
  l.kernels = kK;
  l.sdp.cvt = SdpConvertor{0, 1, 0};  // A = the INT32 sums, which stay inside INT16
  l.dst = packed_surface(QuantizedConvCase::kA, kW, kH, kK, atom);
  q.layer.bits = q.bits;
  q.layer.sdp_out = packed_surface(QuantizedConvCase::kOctavOut, kW, kH, kK, atom);

  // Laplace inputs (heavy tails: where clipping pays) and a 1x1 kernel mixing two channels.
  std::mt19937 rng(2026);
  std::exponential_distribution<double> mag(1.0 / 350.0);
  models::ops::ConvCube in(kW, kH, kC);
  for (auto& v : in.data) {
    const double x = std::min(mag(rng), 32000.0) * (rng() % 2 ? 1.0 : -1.0);
    v = static_cast<std::int32_t>(std::lround(x));
  }
  models::ops::ConvWeights w(kK, 1, 1, kC);
  for (std::uint32_t k = 0; k < kK; ++k) {
    w.at(k, 0, 0, k) = 2;
    w.at(k, 0, 0, (k + 5) % kC) = k % 2 ? 1 : -1;
  }
  HostMemory golden;
  const auto input_bytes = conv_feature_image(in, l.src, l.precision, atom);
  const auto weight_bytes = conv_weight_image(w, l.precision, hw);
  golden.write(QuantizedConvCase::kInput, input_bytes.data(), input_bytes.size());
  golden.write(QuantizedConvCase::kWeights, weight_bytes.data(), weight_bytes.size());
  const ConvGolden cg = run_conv_model(l, hw, golden);
  if (cg.sdp_saturation != 0 || cg.cacc_saturation != 0) {
    throw std::logic_error("the case's convolution saturates; A would not be exact");
  }
  // The exact result, from models' convolution directly (the reference OCTAV's output is
  // measured against).
  const std::vector<std::int16_t> a = read_int16_surface(golden, l.dst, atom);
  q.reference.assign(a.begin(), a.end());
  std::vector<float> af(a.begin(), a.end());
  for (double v : q.reference) q.max_abs = std::max(q.max_abs, std::fabs(v));

  // OCTAV as the unit runs it, then its fields through the same SDP stage.
  models::OctavOptions o;
  o.bits = q.bits;
  o.max_iterations = q.layer.max_iterations;
  o.tolerance = q.layer.tolerance;
  q.octav = models::octav(af.data(), af.size(), o);
  q.clip = static_cast<float>(q.octav.clip);
  q.octav_fields = sdp_clip_fields(static_cast<double>(q.clip), q.bits, false);
  ClipSdpLayer octav_sdp;
  octav_sdp.src = l.dst;
  octav_sdp.dst = q.layer.sdp_out;
  (void)models::ops::run_sdp_layer(clip_sdp_model_config(octav_sdp, q.octav_fields, atom), golden);
  q.octav_codes = read_int16_surface(golden, q.layer.sdp_out, atom);

  q.max_fields = sdp_clip_fields(q.max_abs, q.bits, false);
  q.max_sdp.src = l.dst;
  q.max_sdp.dst = packed_surface(QuantizedConvCase::kMaxOut, kW, kH, kK, atom);
  q.max_sdp.clip = q.max_fields;
  (void)models::ops::run_sdp_layer(clip_sdp_model_config(q.max_sdp, q.max_fields, atom), golden);
  q.max_codes = read_int16_surface(golden, q.max_sdp.dst, atom);

  // The trace: conv -> OCTAV -> SDP, then max-scaling through SDP, each output CRC-checked.
  q.out_bytes = surface_bytes(q.layer.sdp_out, Precision::kInt16, atom);
  const std::uint64_t a_bytes = surface_bytes(l.dst, Precision::kInt16, atom);
  trace.comment("conv (INT16) -> OCTAV (B = 4, auto-program SDP) -> SDP, then max-scaling");
  trace.mem_init_zero(QuantizedConvCase::kA, a_bytes);
  trace.mem_init_zero(QuantizedConvCase::kOctavOut, q.out_bytes);
  trace.mem_init_zero(QuantizedConvCase::kMaxOut, q.out_bytes);
  trace.mem_load(QuantizedConvCase::kInput, "quant_input.dat", input_bytes);
  trace.mem_load(QuantizedConvCase::kWeights, "quant_weights.dat", weight_bytes);
  (void)program_quantized_conv(trace, q.layer, hw, 0, 0);
  const auto crc = [&](std::uint64_t addr, std::uint64_t size) {
    const std::vector<std::uint8_t> b = golden.bytes(addr, static_cast<std::size_t>(size));
    return models::crc32(b.data(), b.size());
  };
  trace.check_crc(QuantizedConvCase::kA, a_bytes, crc(QuantizedConvCase::kA, a_bytes));
  trace.check_crc(QuantizedConvCase::kOctavOut, q.out_bytes,
                  crc(QuantizedConvCase::kOctavOut, q.out_bytes));
  std::uint32_t clip_bits;
  std::memcpy(&clip_bits, &q.clip, 4);
  trace.check_register(regs::OCTAV::D_CLIP_RESULT::kAddr, clip_bits);
  trace.check_register(regs::OCTAV::D_ITERATIONS::kAddr,
                       static_cast<std::uint32_t>(q.octav.iterations));
  trace.check_register(regs::OCTAV::D_CONVERGED::kAddr, q.octav.converged ? 1u : 0u);
  // Max-scaling: SDP's next group (0; SDP_RDMA's is 1) with the fields firmware computes from
  // max |A|.
  trace.wait_interrupt(program_clip_sdp(trace, q.max_sdp, 0, 1, atom));
  trace.check_crc(QuantizedConvCase::kMaxOut, q.out_bytes,
                  crc(QuantizedConvCase::kMaxOut, q.out_bytes));
  return q;
}

// firmware::dequantized_mse of INT16 codes.
inline double dequantized_mse(const std::vector<std::int16_t>& codes, const firmware::SdpClip& f,
                              const std::vector<double>& reference) {
  return firmware::dequantized_mse({codes.begin(), codes.end()}, f.cvt, reference);
}

}  // namespace octasim::test
