// Residual blocks through the whole compiler onto the device: ResNet's basic block with and
// without a projection shortcut, MobileNetV2's inverted residual (an Add without a ReLU), and an
// Add plus a BatchNormalization that follow no convolution (residual_graphs.hpp), at INT8 and
// INT4 on nv_full (SDP with EW) and nv_small (no EW: the operand enters BN), and at FP16.
//
// Checked per network and configuration:
//   - the plan: the Add fused into a CONV layer (layer count, the layer's nodes label) and which
//     SDP unit takes the operand (EW on nv_full when no ReLU follows, else BN);
//   - the device equals the quantized reference executor (models/, run_layer_model) bit for bit,
//     every layer of every image: on the functional device here, on the cycle-level SoC
//     (soc_run.hpp; also with the overlapped schedule) in the *OnSoc tests;
//   - the device's dequantized output within a bound of the FP32 reference executor's, derived
//     here element by element from the FP32 values (models/graph/reference.hpp):
//       input    |x' - x| <= s_x / 2 (round to nearest; calibration on these images: no clip);
//       CONV     |A' - A| <= conv(|W|, d_x) + conv(dW, |x| + d_x), dW[k] = s_w[k] / 2 with
//                s_w[k] = max|W_k| / Mw (the max weight quantizer: Mw = 127, 7 at INT4), plus
//                the residual's d_e, plus s_y: half a step of rounding and less than half a step
//                of fixed point (ew_fixed_point.hpp); ReLU, Clip and saturation are 1-Lipschitz
//                and, the clip being the calibrated maximum, only move values towards the truth;
//       SDP      Add: d_x + d_e + s_y; affine map: |mul[c]| d_x + s_y; lone ReLU: d_x.
//     The worst case adds every rounding with one sign, far beyond what happens; so the error's
//     mean square must also lie within 4 times a variance model's (each rounding an independent
//     uniform error, s^2 / 12, propagated the same way: conv(W^2, v) + conv(s_w^2 / 12, x^2 +
//     v)), whose RMS is below half the output's: a wrong scale or layout fails that.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "models/graph/reference.hpp"
#include "residual_graphs.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/trace/device_mmio.hpp"
#include "sim/trace/player.hpp"
#include "soc_run.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Graph;
using models::graph::Tensor;

constexpr std::size_t kImages = 3;

enum class Net { kIdentity, kProjection, kInverted, kSdpAlone };

struct Expect {
  std::size_t layers;
  std::size_t fused_layer;  // the layer with the Add (a CONV, or the SDP layer)
  const char* label;        // its nodes
  bool relu_after;          // a ReLU follows the sum
  const char* engine;       // CONV (fused) or SDP
};

Graph graph_of(Net n) {
  switch (n) {
    case Net::kIdentity:
      return nettest::basic_block_graph(false);
    case Net::kProjection:
      return nettest::basic_block_graph(true);
    case Net::kInverted:
      return nettest::inverted_residual_graph();
    case Net::kSdpAlone:
      break;
  }
  return nettest::sdp_alone_graph();
}

Expect expect_of(Net n) {
  switch (n) {
    case Net::kIdentity:
      return {2, 1, "Conv 'b.conv2' + Add 'b.add' + Relu 'b.relu'", true, "CONV"};
    case Net::kProjection:
      return {3, 2, "Conv 'b.convs' + Add 'b.add' + Relu 'b.relu'", true, "CONV"};
    case Net::kInverted:
      return {3, 2, "Conv 'm.conv3' + Add 'm.add'", false, "CONV"};
    case Net::kSdpAlone:
      break;
  }
  return {3, 1, "Add 'add'", false, "SDP"};
}

fn::CompiledNetwork compile(const Graph& g, const HwConfig& hw, fn::NetPrecision p,
                            const Tensor& images) {
  fn::CompiledNetwork net = fn::prepare_network(g, hw);
  fn::QuantOptions o;
  o.precision = p;
  fn::quantize_network(net, hw, images, o);
  return net;
}

// The element-wise operand of layer `l`: the flying stage's or the SDP layer's.
const firmware::SdpElementwise* operand_of(const fn::NetLayer& l) {
  if (const auto* c = std::get_if<firmware::ConvLayer>(&l.hw)) {
    return c->sdp.ew ? &*c->sdp.ew : nullptr;
  }
  if (const auto* cp = std::get_if<firmware::ConvPoolLayer>(&l.hw)) {
    return cp->conv.sdp.ew ? &*cp->conv.sdp.ew : nullptr;
  }
  if (const auto* s = std::get_if<firmware::SdpLayer>(&l.hw)) return s->ew ? &*s->ew : nullptr;
  return nullptr;
}

// Every layer on the functional device and through models/, image after image; returns the
// device's dequantized output 0 per image.
std::vector<Tensor> run_functional(const fn::NetProgram& prog, const HwConfig& hw,
                                   const Tensor& images) {
  dla::FunctionalDevice device(hw);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and the CV-SRAM
  fn::load_constants(prog, memory);
  firmware::HostMemory golden;
  fn::load_constants(prog, golden);
  fn::GroupState groups;
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < kImages; ++i) {
    fn::write_input(prog, images, i, memory);
    fn::write_input(prog, images, i, golden);
    for (std::size_t l = 0; l < prog.layers.size(); ++l) {
      fn::await_layer(mmio, fn::program_layer(prog, l, mmio, groups));
      (void)fn::run_layer_model(prog, l, golden);
      const firmware::FeatureSurface& dst = *fn::layer_output(prog.layers[l]);
      const auto n = static_cast<std::size_t>(fn::tensor_bytes(prog, dst));
      EXPECT_EQ(nettest::memory_bytes(memory, dst.address, n),
                nettest::memory_bytes(golden, dst.address, n))
          << "image " << i << ": layer " << l << " (" << prog.layers[l].nodes
          << ") differs from the quantized reference executor";
    }
    out.push_back(fn::read_output(prog, 0, memory));
  }
  return out;
}

// conv node `n` of `g` with weights `w` and no bias, on `in` (the reference executor).
Tensor conv_with(const Graph& g, const models::graph::Node& n, const Tensor& in, const Tensor& w) {
  Graph one;
  one.opset = g.opset;
  one.inputs = {models::graph::ValueInfo{"in", models::graph::DType::kFloat32, in.shape}};
  one.outputs = {models::graph::ValueInfo{"out", models::graph::DType::kFloat32, {}}};
  one.initializers["w"] = w;
  models::graph::Node c = n;
  c.inputs = {"in", "w"};
  c.outputs = {"out"};
  one.nodes = {c};
  return models::graph::run_reference(one, {{"in", in}}).at("out");
}

Tensor with_values(const Tensor& like, std::vector<float> v) {
  return Tensor::floats(like.shape, std::move(v));
}

// Per element of a tensor: the worst-case bound (above) and the variance of the error when every
// rounding is an independent, uniform error of its step (s^2 / 12; a weight's s_w[k]^2 / 12).
struct ErrorModel {
  std::vector<double> bound, variance;
};

// conv(|W|, d) + conv(dW, |x| + d) and its variance conv(W^2, v) + conv(s_w^2 / 12, x^2 + v).
ErrorModel conv_error(const Graph& g, const models::graph::Node& n, const Tensor& x,
                      const ErrorModel& in, double mw) {
  const Tensor& w = g.initializers.at(n.inputs[1]);
  const std::size_t k = static_cast<std::size_t>(w.shape[0]), per = w.elements() / k;
  std::vector<float> w_abs(w.elements()), w_half(w.elements()), w_sq(w.elements()),
      w_var(w.elements());
  for (std::size_t c = 0; c < k; ++c) {
    float m = 0.0F;
    for (std::size_t j = 0; j < per; ++j) m = std::max(m, std::abs(w.f[c * per + j]));
    const double s_w = double{m} / mw;
    for (std::size_t j = 0; j < per; ++j) {
      const double v = double{w.f[c * per + j]};
      w_abs[c * per + j] = static_cast<float>(std::abs(v));
      w_sq[c * per + j] = static_cast<float>(v * v);
      w_half[c * per + j] = static_cast<float>(s_w / 2);
      w_var[c * per + j] = static_cast<float>(s_w * s_w / 12);
    }
  }
  std::vector<float> d(x.elements()), xd(x.elements()), v(x.elements()), xv(x.elements());
  for (std::size_t e = 0; e < x.elements(); ++e) {
    const double xe = double{x.f[e]};
    d[e] = static_cast<float>(in.bound[e]);
    xd[e] = static_cast<float>(std::abs(xe) + in.bound[e]);
    v[e] = static_cast<float>(in.variance[e]);
    xv[e] = static_cast<float>(xe * xe + in.variance[e]);
  }
  const auto run = [&](const std::vector<float>& a, const std::vector<float>& b) {
    return conv_with(g, n, with_values(x, a), with_values(w, b));
  };
  const Tensor b1 = run(d, w_abs), b2 = run(xd, w_half), v1 = run(v, w_sq), v2 = run(xv, w_var);
  ErrorModel out;
  for (std::size_t e = 0; e < b1.elements(); ++e) {
    out.bound.push_back(double{b1.f[e]} + double{b2.f[e]});
    out.variance.push_back(double{v1.f[e]} + double{v2.f[e]});
  }
  return out;
}

// The error model of every planned layer's output, for one image whose FP32 values are `ref`.
// Every requantizing layer adds s_y to the bound (half a step of rounding, under half of fixed
// point) and s_y^2 / 12 to the variance.
std::map<std::string, ErrorModel> error_models(const fn::CompiledNetwork& net,
                                               const models::graph::TensorMap& ref,
                                               int weight_bits) {
  const fn::NetProgram& prog = net.program;
  const double mw = (1 << (weight_bits - 1)) - 1;
  std::map<std::string, ErrorModel> m;
  const double s_x = prog.table.at(net.plan.input).step();
  const std::size_t inputs = ref.at(net.plan.input).elements();
  m[net.plan.input] = {std::vector<double>(inputs, s_x / 2),
                       std::vector<double>(inputs, s_x * s_x / 12)};
  for (const fn::PlannedLayer& l : net.plan.layers) {
    const ErrorModel& in = m.at(l.input);
    const double s_y = prog.table.at(l.output).step();
    ErrorModel out;
    if (l.kind == fn::LayerKind::kConv) {
      out = conv_error(net.graph, net.graph.nodes[l.nodes[0]], ref.at(l.input), in, mw);
      if (!l.conv.residual.empty()) {
        const ErrorModel& e = m.at(l.conv.residual);
        for (std::size_t i = 0; i < out.bound.size(); ++i) {
          out.bound[i] += e.bound[i];
          out.variance[i] += e.variance[i];
        }
      }
    } else if (l.kind == fn::LayerKind::kSdp && l.sdp.ew == fn::EwOp::kAdd) {
      out = in;
      const ErrorModel& e = m.at(l.sdp.operand);
      for (std::size_t i = 0; i < out.bound.size(); ++i) {
        out.bound[i] += e.bound[i];
        out.variance[i] += e.variance[i];
      }
    } else if (l.kind == fn::LayerKind::kSdp && !l.sdp.mul.empty()) {
      const std::size_t plane = in.bound.size() / l.sdp.mul.size();
      out = in;
      for (std::size_t i = 0; i < out.bound.size(); ++i) {
        const double mul = l.sdp.mul[i / plane];
        out.bound[i] *= std::abs(mul);
        out.variance[i] *= mul * mul;
      }
    } else {
      ADD_FAILURE() << "no error model for " << fn::layer_nodes_label(net.graph, l);
    }
    for (double& b : out.bound) b += s_y;
    for (double& v : out.variance) v += s_y * s_y / 12;
    m[l.output] = out;
  }
  return m;
}

// Every element within its worst-case bound; and, so that the check says something (the
// worst case adds every rounding with the same sign, which a wrong output can hide in), the
// error's mean square within 4 times the variance model's (independent roundings), that RMS
// under half the output's.
void check_against_fp32(const fn::CompiledNetwork& net, const Tensor& images,
                        const std::vector<Tensor>& device, int weight_bits) {
  for (std::size_t i = 0; i < device.size(); ++i) {
    const models::graph::TensorMap ref =
        models::graph::run_reference(net.graph, {{net.plan.input, fn::slice_batch(images, i, 1)}});
    const std::string& name = net.plan.outputs.at(0);
    const Tensor& y = ref.at(name);
    const ErrorModel model = error_models(net, ref, weight_bits).at(name);
    ASSERT_EQ(device[i].f.size(), y.f.size());
    double sq_err = 0.0, sq_model = 0.0, sq_y = 0.0;
    std::size_t outside = 0, nonzero = 0;
    for (std::size_t e = 0; e < y.f.size(); ++e) {
      const double err = double{device[i].f[e]} - double{y.f[e]};
      sq_err += err * err;
      sq_model += model.variance[e];
      sq_y += double{y.f[e]} * double{y.f[e]};
      nonzero += y.f[e] != 0.0F ? 1 : 0;
      if (std::abs(err) > model.bound[e] + 1e-5 && outside++ < 5) {
        ADD_FAILURE() << "image " << i << " element " << e << ": device " << device[i].f[e]
                      << ", FP32 " << y.f[e] << ", bound " << model.bound[e];
      }
    }
    EXPECT_EQ(outside, 0U) << "image " << i;
    const double n = static_cast<double>(y.f.size());
    EXPECT_LE(sq_err / n, 4.0 * sq_model / n)
        << "image " << i << ": RMS error " << std::sqrt(sq_err / n) << ", model "
        << std::sqrt(sq_model / n);
    // An output of zeros (or at a wrong scale) would have an error as large as the output: the
    // model's RMS must be below half the output's for the check above to catch it.
    EXPECT_LT(2.0 * std::sqrt(sq_model / n), std::sqrt(sq_y / n)) << "image " << i;
    EXPECT_GT(nonzero, y.f.size() / 4) << "image " << i;  // not an output of zeros
  }
}

struct Case {
  Net net;
  const char* config;
  fn::NetPrecision precision;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << static_cast<int>(c.net) << "_" << c.config << "_" << fn::precision_name(c.precision);
}

class Residual : public ::testing::TestWithParam<Case> {};

TEST_P(Residual, FusedBitExactAndWithinTheFp32Bound) {
  const Case& c = GetParam();
  const HwConfig hw = load_hw_config(c.config);
  const Graph g = graph_of(c.net);
  Expect x = expect_of(c.net);
  if (c.net == Net::kInverted && std::string(c.config) == "nv_small") {
    // The block's 3x3 depthwise convolution has 48 channels. nv_small (C' = 8 channels per atom,
    // an 8-wide MAC array) runs it as 48 / 8 = 6 block layers: one atomic operation each per
    // output pixel and tap, against the dense layer's (48 / 8) x (48 / 8) = 36 (groups.cpp). On
    // nv_full (C' 32 INT8 / 16 FP16, 64 channels wide) blocks take 2 (3) against the dense
    // layer's 1 x 2 (1 x 3): a tie, which keeps the one dense layer.
    x.layers += 5;
    x.fused_layer += 5;
  }
  fn::CompiledNetwork probe = fn::prepare_network(g, hw);
  const Tensor images = fn::random_images(probe.plan, kImages, 11);
  const fn::CompiledNetwork net = compile(g, hw, c.precision, images);
  const fn::NetProgram& prog = net.program;
  ASSERT_EQ(prog.layers.size(), x.layers);
  const fn::NetLayer& fused = prog.layers[x.fused_layer];
  EXPECT_EQ(fused.nodes, x.label);
  EXPECT_EQ(fused.engine, x.engine);
  const firmware::SdpElementwise* e = operand_of(fused);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->op, firmware::SdpEwOp::kAdd);
  // EW where the configuration has it and no ReLU follows the sum; BN otherwise.
  const bool ew = hw.dla.sdp_ew && !x.relu_after;
  EXPECT_EQ(e->unit, ew ? firmware::SdpEwUnit::kEw : firmware::SdpEwUnit::kBn);
  if (c.precision != fn::NetPrecision::kFp16) {
    // The sum has no clamp after it: 8-bit codes at INT4 too (calibrate.hpp), unsigned after a
    // ReLU; the first convolution of a basic block, ReLU and clamp, gets 4-bit codes at INT4.
    const fn::TensorQuant& q = prog.table.at(fused.output);
    EXPECT_EQ(q.bits, 8);
    EXPECT_EQ(q.is_unsigned, x.relu_after);
    if (c.net == Net::kIdentity || c.net == Net::kProjection) {
      EXPECT_EQ(prog.table.at(prog.layers[0].output).bits, fn::code_bits(c.precision));
    }
  }
  for (std::size_t l = 0; l < prog.layers.size(); ++l) {
    if (l != x.fused_layer) {
      EXPECT_EQ(operand_of(prog.layers[l]), nullptr) << l;
    }
  }

  const std::vector<Tensor> device = run_functional(prog, hw, images);
  if (c.precision == fn::NetPrecision::kFp16) {
    // FP16: a rounding of 2^-11 per operation, a handful of operations.
    for (std::size_t i = 0; i < kImages; ++i) {
      const Tensor y =
          models::graph::run_reference(net.graph, {{net.plan.input, fn::slice_batch(images, i, 1)}})
              .at(net.plan.outputs.at(0));
      double peak = 0.0, worst = 0.0;
      for (std::size_t k = 0; k < y.f.size(); ++k) {
        peak = std::max(peak, std::abs(double{y.f[k]}));
        worst = std::max(worst, std::abs(double{device[i].f[k]} - double{y.f[k]}));
      }
      EXPECT_LT(worst, 0.01 * peak) << "image " << i;
    }
    return;
  }
  check_against_fp32(net, images, device, fn::code_bits(c.precision));
}

INSTANTIATE_TEST_SUITE_P(
    Blocks, Residual,
    ::testing::Values(Case{Net::kIdentity, "nv_full", fn::NetPrecision::kInt8},
                      Case{Net::kIdentity, "nv_small", fn::NetPrecision::kInt8},
                      Case{Net::kIdentity, "nv_small", fn::NetPrecision::kInt4},
                      Case{Net::kIdentity, "nv_full", fn::NetPrecision::kFp16},
                      Case{Net::kProjection, "nv_full", fn::NetPrecision::kInt8},
                      Case{Net::kProjection, "nv_small", fn::NetPrecision::kInt8},
                      Case{Net::kProjection, "nv_full", fn::NetPrecision::kInt4},
                      Case{Net::kProjection, "nv_full", fn::NetPrecision::kFp16},
                      Case{Net::kInverted, "nv_full", fn::NetPrecision::kInt8},
                      Case{Net::kInverted, "nv_small", fn::NetPrecision::kInt8},
                      Case{Net::kInverted, "nv_small", fn::NetPrecision::kInt4},
                      Case{Net::kInverted, "nv_full", fn::NetPrecision::kFp16},
                      Case{Net::kSdpAlone, "nv_full", fn::NetPrecision::kInt8},
                      Case{Net::kSdpAlone, "nv_small", fn::NetPrecision::kInt8},
                      Case{Net::kSdpAlone, "nv_full", fn::NetPrecision::kInt4},
                      Case{Net::kSdpAlone, "nv_full", fn::NetPrecision::kFp16}));

// A fused CONV whose input exceeds nv_small's CBUF (96x96x16: 147 KiB of 128) is split in
// height (split.cpp): each band reads its rows of the residual operand.
TEST(ResidualSplit, IdentityBlockInBandsNvSmallInt8) {
  const HwConfig hw = load_hw_config("nv_small");
  const Graph g = nettest::basic_block_graph(false, 96);
  fn::CompiledNetwork probe = fn::prepare_network(g, hw);
  const Tensor images = fn::random_images(probe.plan, 1, 11);
  const fn::CompiledNetwork net = compile(g, hw, fn::NetPrecision::kInt8, images);
  const fn::NetProgram& prog = net.program;
  std::size_t bands = 0;
  for (const fn::NetLayer& l : prog.layers) {
    const firmware::SdpElementwise* e = operand_of(l);
    if (e == nullptr) continue;
    ++bands;
    EXPECT_EQ(e->surface.height, std::get<firmware::ConvLayer>(l.hw).dst.height) << l.nodes;
  }
  EXPECT_GT(bands, 1U);  // the fused layer in more than one band
  dla::FunctionalDevice device(hw);
  trace::DeviceMmio mmio(device, 500'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and the CV-SRAM
  fn::load_constants(prog, memory);
  firmware::HostMemory golden;
  fn::load_constants(prog, golden);
  fn::GroupState groups;
  const fn::ImageRun r = fn::run_image(prog, images, 0, memory, mmio, groups, golden);
  EXPECT_EQ(r.differing_output, prog.outputs.size());
  std::vector<Tensor> out{fn::read_output(prog, 0, memory)};
  check_against_fp32(net, images, out, 8);
}

// octav-device calibration: OCTAV and the SDP it programs follow each CONV, the fused one too;
// the shortcut the fused layer reads is the snapped tensor.
TEST(ResidualOctavDevice, IdentityBlockNvSmallInt4) {
  const HwConfig hw = load_hw_config("nv_small");
  const Graph g = graph_of(Net::kIdentity);
  fn::CompiledNetwork net = fn::prepare_network(g, hw);
  const Tensor images = fn::random_images(net.plan, kImages, 11);
  fn::QuantOptions o;
  o.precision = fn::NetPrecision::kInt4;
  o.calibration = fn::ClipCalibration::kOctavDevice;
  fn::quantize_network(net, hw, images, o);
  const fn::NetProgram& prog = net.program;
  ASSERT_EQ(prog.layers.size(), 6U);  // CONV, OCTAV, SDP twice
  EXPECT_EQ(prog.layers[3].nodes, expect_of(Net::kIdentity).label);
  ASSERT_NE(operand_of(prog.layers[3]), nullptr);
  dla::FunctionalDevice device(hw);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and the CV-SRAM
  fn::load_constants(prog, memory);
  firmware::HostMemory golden;
  fn::load_constants(prog, golden);
  fn::GroupState groups;
  for (std::size_t i = 0; i < kImages; ++i) {
    const fn::ImageRun r = fn::run_image(prog, images, i, memory, mmio, groups, golden);
    EXPECT_EQ(r.differing_output, prog.outputs.size()) << "image " << i;
  }
}

// ResNet-50 and MobileNetV2 (residual_graphs.hpp, at a reduced input size: the topology is what
// the fusion sees) compiled at INT8: every residual Add in a CONV layer, no SDP layer of its own;
// one image on the functional device, every layer bit for bit against models/.
void whole_network(const Graph& g, const char* config, std::size_t layers, std::size_t adds) {
  const HwConfig hw = load_hw_config(config);
  fn::CompiledNetwork probe = fn::prepare_network(g, hw);
  const Tensor images = fn::random_images(probe.plan, 1, 5);
  const fn::CompiledNetwork net = compile(g, hw, fn::NetPrecision::kInt8, images);
  const fn::NetProgram& prog = net.program;
  EXPECT_EQ(prog.layers.size(), layers);
  std::size_t fused = 0;
  // Each operand is a surface an earlier layer wrote (same address and memory: after the CV-SRAM
  // placement too), as bit-exactness alone cannot tell (models/ would read the same stale place).
  std::vector<firmware::FeatureSurface> written{prog.input.surface};
  for (const fn::NetLayer& l : prog.layers) {
    EXPECT_NE(l.engine, "SDP") << l.nodes;
    if (const firmware::SdpElementwise* e = operand_of(l)) {
      ++fused;
      EXPECT_EQ(l.engine, "CONV") << l.nodes;
      EXPECT_NE(l.nodes.find(" + Add '"), std::string::npos) << l.nodes;
      EXPECT_TRUE(std::any_of(written.begin(), written.end(),
                              [&](const firmware::FeatureSurface& w) {
                                return w.address == e->surface.address && w.ram == e->surface.ram;
                              }))
          << l.nodes << ": its operand is no earlier layer's output";
    }
    if (const firmware::FeatureSurface* out = fn::layer_output(l)) written.push_back(*out);
  }
  EXPECT_EQ(fused, adds);
  dla::FunctionalDevice device(hw);
  trace::DeviceMmio mmio(device, 500'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and the CV-SRAM
  fn::load_constants(prog, memory);
  firmware::HostMemory golden;
  fn::load_constants(prog, golden);
  fn::GroupState groups;
  const fn::ImageRun r = fn::run_image(prog, images, 0, memory, mmio, groups, golden);
  EXPECT_EQ(r.differing_output, prog.outputs.size());
}

// The 56 planned layers of ResNet-50 (plan_fuse_test.cpp) less the two pools that run on the
// fly behind their convolution (the stem's max pool; the global pool behind the last block's
// fused CONV + Add + Relu); MobileNetV2's 54 less its global pool, with its 17 depthwise
// convolutions (32, 96, 144 x 2, 192 x 3, 384 x 4, 576 x 3 and 960 x 3 channels) as their blocks
// of C' channels where blocks take fewer atomic operations of the MAC array (groups.cpp): on
// nv_full (C' = 32 INT8, 64 channels x 32 kernels an operation) above 64 channels,
// 1 + 3 + 2 x 5 + 3 x 6 + 4 x 12 + 3 x 18 + 3 x 30 = 224 layers; on nv_small (C' = 8, 8 x 8)
// all, 4 + 12 + 2 x 18 + 3 x 24 + 4 x 48 + 3 x 72 + 3 x 120 = 892 layers.
TEST(ResidualNetworks, ResNet50NvFullInt8) {
  whole_network(nettest::resnet50_graph(64), "nv_full", 54, 16);
}

TEST(ResidualNetworks, ResNet50NvSmallInt8) {
  whole_network(nettest::resnet50_graph(64), "nv_small", 54, 16);
}

TEST(ResidualNetworks, MobileNetV2NvFullInt8) {
  whole_network(nettest::mobilenet_v2_graph(64), "nv_full", 53 - 17 + 224, 10);
}

TEST(ResidualNetworks, MobileNetV2NvSmallInt8) {
  whole_network(nettest::mobilenet_v2_graph(64), "nv_small", 53 - 17 + 892, 10);
}

// The cycle-level SoC (one elaboration per process: one TEST each): every layer bit for bit
// against the quantized reference executor (soc_run.hpp), and the FP32 bound on its outputs.
void on_soc(Net n, const char* config, fn::NetPrecision p) {
  const HwConfig hw = load_hw_config(config);
  const Graph g = graph_of(n);
  fn::CompiledNetwork probe = fn::prepare_network(g, hw);
  const Tensor images = fn::random_images(probe.plan, kImages, 11);
  const fn::CompiledNetwork net = compile(g, hw, p, images);
  ASSERT_EQ(net.program.layers.size(), expect_of(n).layers);
  const nettest::SocRun run = nettest::run_on_soc(net.program, hw, images, kImages);
  EXPECT_EQ(run.differing_images, 0U);
  EXPECT_EQ(run.layers_run, net.program.layers.size() * kImages);
  check_against_fp32(net, images, run.outputs, fn::code_bits(p));
}

TEST(ResidualOnSoc, IdentityBlockNvSmallInt8) {
  on_soc(Net::kIdentity, "nv_small", fn::NetPrecision::kInt8);
}

TEST(ResidualOnSoc, ProjectionBlockNvFullInt8) {
  on_soc(Net::kProjection, "nv_full", fn::NetPrecision::kInt8);
}

TEST(ResidualOnSoc, ProjectionBlockNvSmallInt4) {
  on_soc(Net::kProjection, "nv_small", fn::NetPrecision::kInt4);
}

TEST(ResidualOnSoc, InvertedResidualNvFullInt8) {
  on_soc(Net::kInverted, "nv_full", fn::NetPrecision::kInt8);
}

TEST(ResidualOnSoc, SdpAloneNvFullInt8) {
  on_soc(Net::kSdpAlone, "nv_full", fn::NetPrecision::kInt8);
}

TEST(ResidualOnSoc, SdpAloneNvSmallInt8) {
  on_soc(Net::kSdpAlone, "nv_small", fn::NetPrecision::kInt8);
}

// The overlapped schedule (schedule.hpp): the fused layer must wait for the layer that writes its
// operand, and the buffer the operand lived in must outlive its last reader.
TEST(ResidualOnSoc, ProjectionBlockOverlappedNvFullInt8) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  const HwConfig hw = load_hw_config("nv_full");
  const Graph g = graph_of(Net::kProjection);
  fn::CompiledNetwork probe = fn::prepare_network(g, hw);
  const Tensor images = fn::random_images(probe.plan, kImages, 11);
  const fn::CompiledNetwork net = compile(g, hw, fn::NetPrecision::kInt8, images);
  const std::vector<std::vector<std::size_t>> deps = fn::layer_dependencies(net.program);
  ASSERT_EQ(deps.size(), 3U);
  // The shortcut's CONV reads conv2's output through its SDP's NRDMA/ERDMA.
  EXPECT_NE(std::find(deps[2].begin(), deps[2].end(), 1U), deps[2].end());
  soc::Soc soc("dla", hw);
  soc::HostAdapter device(soc);
  trace::DeviceMmio mmio(device, 50'000'000);
  DeviceMemory memory = trace::dma_memory(device);  // DRAM and the CV-SRAM
  fn::load_constants(net.program, memory);
  firmware::HostMemory golden;
  fn::load_constants(net.program, golden);
  fn::GroupState groups;
  for (std::size_t i = 0; i < kImages; ++i) {
    const fn::ImageRun r =
        fn::run_image(net.program, images, i, memory, mmio, groups, golden, fn::Schedule::kOverlap);
    EXPECT_EQ(r.differing_output, net.program.outputs.size()) << "image " << i;
  }
}

}  // namespace
}  // namespace octasim
