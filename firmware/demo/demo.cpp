#include "firmware/demo/demo.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <system_error>
#include <utility>

#include <fmt/core.h>

#include "firmware/dla/cdp.hpp"
#include "firmware/dla/octav.hpp"
#include "firmware/dla/sdp.hpp"
#include "firmware/driver/host_memory.hpp"
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

// The pseudo-random data of the network, drawn in this order from one mt19937.
struct DemoData {
  models::ops::ConvCube input{kWidth, kHeight, kChannels};
  models::ops::ConvWeights weights{kKernels, 3, 3, kChannels};
  std::vector<std::int16_t> bias = std::vector<std::int16_t>(kKernels);
};

DemoData demo_data(std::uint32_t seed) {
  std::mt19937 rng(seed);
  const auto int8 = [&rng] { return static_cast<std::int32_t>(static_cast<std::int8_t>(rng())); };
  DemoData d;
  // Input: a 16x16x8 INT8 cube, uniformly random over [-128, 127]; 3x3x8 INT8 kernels likewise.
  for (auto& v : d.input.data) v = int8();
  for (auto& v : d.weights.data) v = int8();
  // Per-channel bias in [-2000, 2000], applied as bias << 4 to the INT32 sums.
  for (auto& b : d.bias) b = static_cast<std::int16_t>(static_cast<int>(rng() % 4001) - 2000);
  return d;
}

// Layer 1: the 3x3 convolution with its flying SDP stage (bias, ReLU, requantization to INT8).
ConvLayer demo_conv(unsigned atom) {
  ConvLayer conv;
  conv.precision = Precision::kInt8;
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
  return conv;
}

// Layer 2: 2x2 pooling, stride 2, of the convolution's output.
PdpLayer demo_pdp(const ConvLayer& conv, PoolMethod method, unsigned atom) {
  PdpLayer pdp;
  pdp.precision = Precision::kInt8;
  pdp.src = conv.dst;
  pdp.method = method;
  pdp.kernel_width = pdp.kernel_height = 2;
  pdp.stride_x = pdp.stride_y = 2;
  pdp.dst = packed_surface(kPdpOut, pdp_output_size(kWidth, 2, 2, 0, 0),
                           pdp_output_size(kHeight, 2, 2, 0, 0), kKernels, atom);
  return pdp;
}

// Layer 3: AlexNet's LRN (n = 5, k = 2, alpha = 1e-4, beta = 0.75) of the pooled output.
struct DemoCdp {
  LrnParams lrn;
  LrnLut lut;
  CdpLayer layer;
};

DemoCdp demo_cdp(const PdpLayer& pdp, unsigned atom) {
  DemoCdp c;
  c.lut = make_lrn_lut(c.lrn, Precision::kInt8);
  CdpLayer& cdp = c.layer;
  cdp.precision = Precision::kInt8;
  cdp.src = pdp.dst;
  cdp.dst = packed_surface(kCdpOut, pdp.dst.width, pdp.dst.height, kKernels, atom);
  cdp.local_size = c.lrn.local_size;
  cdp.out_cvt = CdpConvertor{0, 1, c.lut.fraction_bits};  // y = x * f at the input's scale
  cdp.lut = c.lut.config;
  cdp.lut_tables = c.lut.tables;
  return c;
}

// Layers 4 and 5: OCTAV computes the MSE-optimal clipping scalar of the CONV+SDP output for
// 4-bit unsigned codes (ReLU made it non-negative) and auto-programs SDP, which requantizes it;
// then the same SDP with max-scaling fields (s = max |x|) for comparison. Holds the golden
// answers and the comparison of the two.
struct DemoQuantization {
  OctavLayer octav;
  ClipSdpLayer octav_sdp, max_sdp;
  models::ClipResult clip;
  float clip_f = 0.0f;  // D_CLIP_RESULT holds FP32
  double max_abs = 0.0;
  double mse_octav = 0.0, mse_max = 0.0;
  std::size_t values = 0, clipped = 0;
};

// Builds layers 4 and 5 and runs their golden ops on `golden` (which holds the CONV output).
DemoQuantization demo_quantization(const ConvLayer& conv, HostMemory& golden, unsigned atom) {
  DemoQuantization q;
  OctavLayer& octav = q.octav;
  octav.type = OctavDataType::kInt8;
  octav.is_unsigned = true;
  octav.src = conv.dst;
  octav.bits = kCodeBits;
  octav.auto_program = OctavAutoProgram::kSdp;
  octav.auto_clamp = true;
  q.octav_sdp.precision = Precision::kInt8;
  q.octav_sdp.src = conv.dst;
  q.octav_sdp.dst = packed_surface(kOctavOut, kWidth, kHeight, kKernels, atom);
  const std::vector<double> activations = int8_values(golden, conv.dst, atom);
  const std::vector<float> activations_f(activations.begin(), activations.end());
  models::OctavOptions oo;
  oo.bits = kCodeBits;
  oo.sign = models::Signedness::kUnsigned;
  oo.max_iterations = octav.max_iterations;
  oo.tolerance = octav.tolerance;
  q.clip = models::octav(activations_f.data(), activations_f.size(), oo);
  q.clip_f = static_cast<float>(q.clip.clip);
  const SdpClip octav_fields = sdp_clip_fields(static_cast<double>(q.clip_f), kCodeBits, true);
  (void)models::ops::run_sdp_layer(clip_sdp_model_config(q.octav_sdp, octav_fields, atom), golden);
  for (const double v : activations) q.max_abs = std::max(q.max_abs, std::fabs(v));
  q.max_sdp = q.octav_sdp;
  q.max_sdp.dst = packed_surface(kMaxOut, kWidth, kHeight, kKernels, atom);
  q.max_sdp.clip = sdp_clip_fields(q.max_abs, kCodeBits, true);
  (void)models::ops::run_sdp_layer(clip_sdp_model_config(q.max_sdp, *q.max_sdp.clip, atom), golden);
  q.mse_octav =
      dequantized_mse(int8_values(golden, q.octav_sdp.dst, atom), octav_fields.cvt, activations);
  q.mse_max =
      dequantized_mse(int8_values(golden, q.max_sdp.dst, atom), q.max_sdp.clip->cvt, activations);
  for (const double v : activations) q.clipped += v > static_cast<double>(q.clip_f) ? 1 : 0;
  q.values = activations.size();
  return q;
}

std::vector<std::string> layer_descriptions(const ConvLayer& conv, const PdpLayer& pdp,
                                            PoolMethod pool, const DemoCdp& cdp,
                                            const DemoQuantization& q) {
  const char* pool_name = pool == PoolMethod::kAverage ? "average"
                          : pool == PoolMethod::kMin   ? "min"
                                                       : "max";
  const LrnParams& lrn = cdp.lrn;
  return {
      fmt::format("CONV {}x{}x{} INT8 * 3x3x{}x{} INT8 kernels, padding 1 -> {}x{}x{} INT32 sums",
                  kWidth, kHeight, kChannels, kChannels, kKernels, kWidth, kHeight, kKernels),
      fmt::format("SDP  (flying, fed by CACC) per-channel bias + ReLU, requantize to INT8: "
                  "y = sat(round((x * {}) >> {}))",
                  conv.sdp.cvt.scale, conv.sdp.cvt.shift),
      fmt::format("PDP  2x2 {} pooling, stride 2 -> {}x{}x{}", pool_name, pdp.dst.width,
                  pdp.dst.height, kKernels),
      fmt::format("CDP  LRN over {} channels, y = x * ({:g} + {:g}/{} * sum x^2)^-{:g} "
                  "(LUT: LE exponent + LO linear, entries x 2^{})",
                  lrn.local_size, lrn.k, lrn.alpha, lrn.local_size, lrn.beta,
                  cdp.lut.fraction_bits),
      fmt::format("OCTAV clipping scalar of the CONV+SDP output for {}-bit unsigned codes "
                  "(Newton-Raphson in the device), auto-programs SDP",
                  kCodeBits),
      fmt::format("SDP  requantize to {}-bit codes with OCTAV's clip; then with max-scaling "
                  "(s = max = {:g}) for comparison",
                  kCodeBits, q.max_abs),
  };
}

}  // namespace

DemoSummary build_demo(TraceWriter& trace, const DemoOptions& options) {
  const Precision p = Precision::kInt8;
  const ConvHardware& hw = options.hw;
  const unsigned atom = hw.atom_bytes;
  const DemoData data = demo_data(options.seed);
  const ConvLayer conv = demo_conv(atom);
  const PdpLayer pdp = demo_pdp(conv, options.pool, atom);
  const DemoCdp lrn = demo_cdp(pdp, atom);
  const CdpLayer& cdp = lrn.layer;

  // Golden output: the models/ reference ops on a host memory image, layer after layer.
  const std::vector<std::uint8_t> input_bytes = conv_feature_image(data.input, conv.src, p, atom);
  const std::vector<std::uint8_t> weight_bytes = conv_weight_image(data.weights, p, hw);
  const std::vector<std::uint8_t> bias_bytes = sdp_per_channel_table(data.bias, p, atom);
  HostMemory golden;
  golden.write(kInput, input_bytes.data(), input_bytes.size());
  golden.write(kWeights, weight_bytes.data(), weight_bytes.size());
  golden.write(kBias, bias_bytes.data(), bias_bytes.size());
  const ConvGolden conv_run = run_conv_model(conv, hw, golden);
  (void)models::ops::run_pdp_layer(pdp_model_params(pdp, atom), golden);
  models::LutTables tables;
  tables.le = cdp.lut_tables.le;
  tables.lo = cdp.lut_tables.lo;
  const models::ops::CdpLayerResult cdp_run =
      models::ops::run_cdp_layer(cdp_model_params(cdp, atom), tables, golden);
  const DemoQuantization q = demo_quantization(conv, golden, atom);
  std::vector<std::string> layers = layer_descriptions(conv, pdp, options.pool, lrn, q);

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
  trace.mem_init_zero(q.octav_sdp.dst.address, surface_bytes(q.octav_sdp.dst, p, atom));
  trace.mem_init_zero(q.max_sdp.dst.address, surface_bytes(q.max_sdp.dst, p, atom));
  // After the convolution (SDP and SDP_RDMA ran group 0: its SDP read the bias), both are at
  // group 1; OCTAV at 0.
  const OctavSdpBits octav_bits = program_octav_sdp(trace, q.octav, q.octav_sdp, 0, 1, 1, atom);
  (void)octav_bits;
  trace.check_register(regs::OCTAV::D_CLIP_RESULT::kAddr, models::fp32_bits_from_double(q.clip_f));
  trace.check_register(regs::OCTAV::D_ITERATIONS::kAddr,
                       static_cast<std::uint32_t>(q.clip.iterations));
  check_output(trace, golden, q.octav_sdp.dst, p, atom);
  trace.comment("layer 5: SDP with max-scaling fields (firmware-computed), for comparison");
  trace.wait_interrupt(program_clip_sdp(trace, q.max_sdp, 0, 0, atom));
  check_output(trace, golden, q.max_sdp.dst, p, atom);

  DemoSummary summary;
  summary.quantization = fmt::format(
      "{}-bit unsigned codes of the CONV+SDP output ({} values), MSE against those INT8 values:\n"
      "    {:<22} {:>10} {:>10} {:>8} {:>10}\n"
      "    {:<22} {:>10.4f} {:>10} {:>8} {:>10.4f}\n"
      "    {:<22} {:>10.4f} {:>10} {:>8} {:>10.4f}\n"
      "    OCTAV's clip and iterations are checked against the device's D_CLIP_RESULT and "
      "D_ITERATIONS; its cycles are layer 4 (OCTAV) in the summary below",
      kCodeBits, q.values, "method", "clip s", "iterations", "clipped", "MSE",
      "OCTAV (in the device)", q.clip_f, q.clip.iterations, q.clipped, q.mse_octav, "max-scaling",
      q.max_abs, "-", 0, q.mse_max);
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
