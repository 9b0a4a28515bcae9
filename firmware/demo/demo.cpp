#include "firmware/demo/demo.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <system_error>
#include <utility>

#include <fmt/core.h>

#include "firmware/demo/host_memory.hpp"
#include "firmware/dla/cdp.hpp"
#include "firmware/dla/octav.hpp"
#include "firmware/dla/sdp.hpp"
#include "models/numerics/crc32.hpp"
#include "models/quant/octav.hpp"
#include "octasim/regs/nvdla.hpp"

namespace octasim::firmware {
namespace {

constexpr std::uint32_t kWidth = 16, kHeight = 16, kChannels = 8, kKernels = 16;
constexpr std::uint64_t kInput = 0x80000000, kWeights = 0x80010000, kBias = 0x80018000,
                        kConvOut = 0x80020000, kPdpOut = 0x80030000, kCdpOut = 0x80040000,
                        kOctavOut = 0x80050000, kMaxOut = 0x80060000;
constexpr int kCodeBits = 4;  // the requantization of layer 4

void check_output(TraceWriter& trace, const HostMemory& golden, const FeatureSurface& s,
                  Precision p, unsigned atom) {
  const std::uint64_t size = surface_bytes(s, p, atom);
  const std::vector<std::uint8_t> bytes = golden.bytes(s.address, static_cast<std::size_t>(size));
  trace.check_crc(s.address, size, models::crc32(bytes.data(), bytes.size()));
}

// The INT8 values of a packed feature surface in golden memory, in cube order.
std::vector<double> int8_values(const HostMemory& golden, const FeatureSurface& s, unsigned atom) {
  const models::ops::ConvCube cube = models::ops::read_feature_cube(
      conv_model_surface(s, atom), models::ops::ConvPrecision::kInt8, golden);
  return {cube.data.begin(), cube.data.end()};
}

}  // namespace

DemoSummary build_demo(TraceWriter& trace, const DemoOptions& options) {
  const Precision p = Precision::kInt8;
  const ConvHardware& hw = options.hw;
  const unsigned atom = hw.atom_bytes;
  std::mt19937 rng(options.seed);
  const auto int8 = [&rng] { return static_cast<std::int32_t>(static_cast<std::int8_t>(rng())); };

  // Input: a 16x16x8 INT8 cube, uniformly random over [-128, 127]; 3x3x8 INT8 kernels likewise.
  models::ops::ConvCube input(kWidth, kHeight, kChannels);
  for (auto& v : input.data) v = int8();
  models::ops::ConvWeights weights(kKernels, 3, 3, kChannels);
  for (auto& v : weights.data) v = int8();
  // Per-channel bias in [-2000, 2000], applied as bias << 4 to the INT32 sums.
  std::vector<std::int16_t> bias(kKernels);
  for (auto& b : bias) b = static_cast<std::int16_t>(static_cast<int>(rng() % 4001) - 2000);

  ConvLayer conv;
  conv.precision = p;
  conv.src = packed_surface(kInput, kWidth, kHeight, kChannels, atom);
  conv.weight_address = kWeights;
  conv.kernels = kKernels;
  conv.kernel_width = conv.kernel_height = 3;
  conv.pad_left = conv.pad_right = conv.pad_top = conv.pad_bottom = 1;
  conv.pad_value = 0;
  conv.sdp.bias = SdpPerChannel{kBias, 4};
  conv.sdp.relu = true;
  // A sum of 72 products of uniform INT8 values spreads about 74^2 * sqrt(72) = 46000:
  // y = (x * 30) >> 16, about x / 2185, puts it at about 21 (no INT8 saturation).
  conv.sdp.cvt = SdpConvertor{0, 30, 16};
  conv.dst = packed_surface(kConvOut, kWidth, kHeight, kKernels, atom);

  PdpLayer pdp;
  pdp.precision = p;
  pdp.src = conv.dst;
  pdp.method = options.pool;
  pdp.kernel_width = pdp.kernel_height = 2;
  pdp.stride_x = pdp.stride_y = 2;
  pdp.dst = packed_surface(kPdpOut, pdp_output_size(kWidth, 2, 2, 0, 0),
                           pdp_output_size(kHeight, 2, 2, 0, 0), kKernels, atom);

  LrnParams lrn;  // AlexNet's LRN: n = 5, k = 2, alpha = 1e-4, beta = 0.75
  const LrnLut lut = make_lrn_lut(lrn, p);
  CdpLayer cdp;
  cdp.precision = p;
  cdp.src = pdp.dst;
  cdp.dst = packed_surface(kCdpOut, pdp.dst.width, pdp.dst.height, kKernels, atom);
  cdp.local_size = lrn.local_size;
  cdp.out_cvt = CdpConvertor{0, 1, lut.fraction_bits};  // y = x * f at the input's scale
  cdp.lut = lut.config;
  cdp.lut_tables = lut.tables;

  // Golden output: the models/ reference ops on a host memory image, layer after layer.
  const std::vector<std::uint8_t> input_bytes = conv_feature_image(input, conv.src, p, atom);
  const std::vector<std::uint8_t> weight_bytes = conv_weight_image(weights, p, hw);
  const std::vector<std::uint8_t> bias_bytes = sdp_per_channel_table(bias, p, atom);
  HostMemory golden;
  golden.write(kInput, input_bytes.data(), input_bytes.size());
  golden.write(kWeights, weight_bytes.data(), weight_bytes.size());
  golden.write(kBias, bias_bytes.data(), bias_bytes.size());
  const ConvGolden conv_run = run_conv_model(conv, hw, golden);
  (void)models::ops::run_pdp_layer(pdp_model_layer(pdp, atom), golden);
  models::LutTables tables;
  tables.le = cdp.lut_tables.le;
  tables.lo = cdp.lut_tables.lo;
  const models::ops::CdpLayerResult cdp_run =
      models::ops::run_cdp_layer(cdp_model_layer(cdp, atom), tables, golden);

  // Layer 4: OCTAV computes the MSE-optimal clipping scalar of the CONV+SDP output for 4-bit
  // unsigned codes (ReLU made it non-negative) and auto-programs SDP, which requantizes it;
  // layer 5: the same SDP with max-scaling fields (s = max |x|) for comparison.
  OctavLayer octav;
  octav.type = OctavDataType::kInt8;
  octav.is_unsigned = true;
  octav.src = conv.dst;
  octav.bits = kCodeBits;
  octav.auto_program = OctavAutoProgram::kSdp;
  octav.auto_clamp = true;
  ClipSdpLayer octav_sdp;
  octav_sdp.precision = p;
  octav_sdp.src = conv.dst;
  octav_sdp.dst = packed_surface(kOctavOut, kWidth, kHeight, kKernels, atom);
  const std::vector<double> activations = int8_values(golden, conv.dst, atom);
  const std::vector<float> activations_f(activations.begin(), activations.end());
  models::OctavOptions oo;
  oo.bits = kCodeBits;
  oo.sign = models::Signedness::kUnsigned;
  oo.max_iterations = octav.max_iterations;
  oo.tolerance = octav.tolerance;
  const models::ClipResult clip = models::octav(activations_f.data(), activations_f.size(), oo);
  const auto clip_f = static_cast<float>(clip.clip);  // D_CLIP_RESULT holds FP32
  const SdpClip octav_fields = sdp_clip_fields(static_cast<double>(clip_f), kCodeBits, true);
  (void)models::ops::run_sdp_layer(clip_sdp_model_config(octav_sdp, octav_fields, atom), golden);
  double max_abs = 0.0;
  for (const double v : activations) max_abs = std::max(max_abs, std::fabs(v));
  ClipSdpLayer max_sdp = octav_sdp;
  max_sdp.dst = packed_surface(kMaxOut, kWidth, kHeight, kKernels, atom);
  max_sdp.clip = sdp_clip_fields(max_abs, kCodeBits, true);
  (void)models::ops::run_sdp_layer(clip_sdp_model_config(max_sdp, *max_sdp.clip, atom), golden);
  const double mse_octav =
      dequantized_mse(int8_values(golden, octav_sdp.dst, atom), octav_fields.cvt, activations);
  const double mse_max =
      dequantized_mse(int8_values(golden, max_sdp.dst, atom), max_sdp.clip->cvt, activations);
  std::size_t clipped = 0;
  for (const double v : activations) clipped += v > static_cast<double>(clip_f) ? 1 : 0;

  const char* pool_name = options.pool == PoolMethod::kAverage ? "average"
                          : options.pool == PoolMethod::kMin   ? "min"
                                                               : "max";
  std::vector<std::string> layers = {
      fmt::format("CONV {}x{}x{} INT8 * 3x3x{}x{} INT8 kernels, padding 1 -> {}x{}x{} INT32 sums",
                  kWidth, kHeight, kChannels, kChannels, kKernels, kWidth, kHeight, kKernels),
      fmt::format("SDP  (flying, fed by CACC) per-channel bias + ReLU, requantize to INT8: "
                  "y = sat(round((x * {}) >> {}))",
                  conv.sdp.cvt.scale, conv.sdp.cvt.shift),
      fmt::format("PDP  2x2 {} pooling, stride 2 -> {}x{}x{}", pool_name, pdp.dst.width,
                  pdp.dst.height, kKernels),
      fmt::format("CDP  LRN over {} channels, y = x * ({:g} + {:g}/{} * sum x^2)^-{:g} "
                  "(LUT: LE exponent + LO linear, entries x 2^{})",
                  lrn.local_size, lrn.k, lrn.alpha, lrn.local_size, lrn.beta, lut.fraction_bits),
      fmt::format("OCTAV clipping scalar of the CONV+SDP output for {}-bit unsigned codes "
                  "(Newton-Raphson in the device), auto-programs SDP",
                  kCodeBits),
      fmt::format("SDP  requantize to {}-bit codes with OCTAV's clip; then with max-scaling "
                  "(s = max = {:g}) for comparison",
                  kCodeBits, max_abs),
  };

  trace.comment("octasim demo trace, generated by octasim's firmware (firmware/demo/demo.cpp)");
  for (const auto& l : layers) trace.comment(l);
  trace.comment(
      "golden CRCs and counters: models/ reference ops (run_conv_int, run_sdp/pdp/"
      "cdp_layer)");
  trace.mem_init_zero(conv.dst.address, surface_bytes(conv.dst, p, atom));
  trace.mem_init_zero(pdp.dst.address, surface_bytes(pdp.dst, p, atom));
  trace.mem_init_zero(cdp.dst.address, surface_bytes(cdp.dst, p, atom));
  trace.mem_load(kInput, "input.dat", input_bytes);
  trace.mem_load(kWeights, "conv_weights.dat", weight_bytes);
  trace.mem_load(kBias, "sdp_bias.dat", bias_bytes);

  trace.comment("layer 1: CONV (CDMA, CSC, CMAC, CACC) -> SDP in flying mode");
  trace.wait_interrupt(program_conv(trace, conv, 0, hw));
  check_output(trace, golden, conv.dst, p, atom);
  trace.check_register(regs::CACC::D_OUT_SATURATION::kAddr, conv_run.cacc_saturation);
  trace.check_register(regs::SDP::D_PERF_OUT_SATURATION::kAddr, conv_run.sdp_saturation);

  trace.comment("layer 2: PDP");
  trace.wait_interrupt(program_pdp(trace, pdp, 0, atom));
  check_output(trace, golden, pdp.dst, p, atom);

  trace.comment("layer 3: CDP");
  trace.wait_interrupt(program_cdp(trace, cdp, 0, atom));
  check_output(trace, golden, cdp.dst, p, atom);
  trace.check_register(regs::CDP::D_OUT_SATURATION::kAddr, cdp_run.stats.out_saturation.value());
  trace.check_register(regs::CDP::D_PERF_LUT_UFLOW::kAddr, cdp_run.stats.lut.uflow.value());
  trace.check_register(regs::CDP::D_PERF_LUT_HYBRID::kAddr, cdp_run.stats.lut.hybrid.value());
  trace.check_register(regs::CDP::D_PERF_LUT_LE_HIT::kAddr, cdp_run.stats.lut.le_hit.value());
  trace.check_register(regs::CDP::D_PERF_LUT_LO_HIT::kAddr, cdp_run.stats.lut.lo_hit.value());
  trace.comment("layer 4: OCTAV -> SDP (auto-programmed with the device's clipping scalar)");
  trace.mem_init_zero(octav_sdp.dst.address, surface_bytes(octav_sdp.dst, p, atom));
  trace.mem_init_zero(max_sdp.dst.address, surface_bytes(max_sdp.dst, p, atom));
  // After the convolution (SDP and SDP_RDMA ran group 0: its SDP read the bias), both are at
  // group 1; OCTAV at 0.
  const OctavSdpBits octav_bits = program_octav_sdp(trace, octav, octav_sdp, 0, 1, 1, atom);
  (void)octav_bits;
  trace.check_register(regs::OCTAV::D_CLIP_RESULT::kAddr, models::fp32_bits_from_double(clip_f));
  trace.check_register(regs::OCTAV::D_ITERATIONS::kAddr,
                       static_cast<std::uint32_t>(clip.iterations));
  check_output(trace, golden, octav_sdp.dst, p, atom);
  trace.comment("layer 5: SDP with max-scaling fields (firmware-computed), for comparison");
  trace.wait_interrupt(program_clip_sdp(trace, max_sdp, 0, 0, atom));
  check_output(trace, golden, max_sdp.dst, p, atom);

  DemoSummary summary;
  summary.quantization = fmt::format(
      "{}-bit unsigned codes of the CONV+SDP output ({} values), MSE against those INT8 values:\n"
      "    {:<22} {:>10} {:>10} {:>8} {:>10}\n"
      "    {:<22} {:>10.4f} {:>10} {:>8} {:>10.4f}\n"
      "    {:<22} {:>10.4f} {:>10} {:>8} {:>10.4f}\n"
      "    OCTAV's clip and iterations are checked against the device's D_CLIP_RESULT and "
      "D_ITERATIONS; its cycles are layer 4 (OCTAV) in the summary below",
      kCodeBits, activations.size(), "method", "clip s", "iterations", "clipped", "MSE",
      "OCTAV (in the device)", clip_f, clip.iterations, clipped, mse_octav, "max-scaling", max_abs,
      "-", 0, mse_max);
  summary.layers = std::move(layers);
  summary.counters = fmt::format(
      "CACC D_OUT_SATURATION {}, SDP D_PERF_OUT_SATURATION {}, CDP D_OUT_SATURATION {}, "
      "CDP LUT uflow {} / hybrid {} / LE hit {} / LO hit {}",
      conv_run.cacc_saturation, conv_run.sdp_saturation, cdp_run.stats.out_saturation.value(),
      cdp_run.stats.lut.uflow.value(), cdp_run.stats.lut.hybrid.value(),
      cdp_run.stats.lut.le_hit.value(), cdp_run.stats.lut.lo_hit.value());
  return summary;
}

DemoFiles write_demo(const std::string& dir, const DemoOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw FirmwareError(fmt::format("cannot create directory '{}': {}", dir,
                                    ec ? ec.message() : "a file of that name exists"));
  }
  TraceWriter trace;
  DemoFiles files;
  files.summary = build_demo(trace, options);
  files.trace_path = trace.save(dir, kDemoTraceName);
  return files;
}

}  // namespace octasim::firmware
