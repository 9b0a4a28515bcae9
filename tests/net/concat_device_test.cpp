// GoogLeNet's inception module (1x1; 1x1 -> 3x3; 1x1 -> 5x5; 3x3/1 max pool -> 1x1; the four
// concatenated on channels) through the network compiler, with a 1x1 convolution and a max pool
// reading the concatenation (and a 1x1 convolution after that pool), on the functional device
// and on the cycle-level SoC. Branch channel counts that are multiples of the atom's channels
// (32 INT8 / 16 FP16 on nv_full, 8 INT8 on nv_small) and ones that are not (GoogLeNet's
// inception 4a: 192, 208, 48, 64), whose concatenation has a padded channel layout.
//
// Checks, per network and image:
//   - every layer's output surface on the device equals the quantized reference executor's
//     (models/ ops), byte for byte, and so do the outputs' codes — layer by layer, and once more
//     under the overlapped schedule (independent branches at once);
//   - every output agrees with the FP32 reference executor (models/graph) within a bound
//     derived element by element below (FP32 reference values, the weights, each tensor's step);
//   - the layout: the pool's output (a graph output) has the concatenation's channel map, which
//     the test derives from the atom size, its unused channels hold zeros on the device, and the
//     weights of the convolutions reading the padded tensors have zero rows there and the
//     expected codes at the mapped channels (read back from device memory);
//   - INT8: the concatenation and its four inputs share one clip, the largest |value| the FP32
//     reference computes for the concatenation on the calibration images (max calibration).
//
// The bound. Per element, E bounds |device - FP32|, propagated layer by layer:
//   input      INT8: s_x / 2 (one rounding to the input's step); FP16: 2^-11 |x| + 2^-25.
//   CONV       with device weights w' = w + d, |d| <= delta (INT8: s_w[k] / 2, s_w[k] =
//              max|w_k| / 127; FP16: 2^-11 |w| + 2^-25), and device input x' = x + e, |e| <= E:
//              |w'x' - wx| <= (|w| + delta) E + delta |x|, summed over the window: P.
//              INT8 adds (program.hpp's arithmetic) the bias's rounding to the accumulator step
//              a = s_x s_w[k] times 2^alu_shift: a/2 max(1, 2|b| / (a 32767)); the INT16
//              multiplier's rounding: |m/2^t - M_k| <= 2^-(t+1) < M_max / 32766, i.e. (S + |b|)
//              (s_w,max / s_w[k]) / 32766 with S = sum (|w| + delta)(|x| + E); the output's one
//              rounding s_y / 2. FP16 adds the exact sum's FP32 rounding 2^-24 S, the bias's FP16
//              rounding 2^-11 |b| and its FP32 add 2^-24 (S + |b|), and the output's FP16 rounding
//              2^-11 (|y| + E) + 2^-25. ReLU and the clamp to the clip are 1-Lipschitz and keep
//              the FP32 value (the calibration images include the tested ones: nothing clips).
//   MaxPool    the largest E in the window (max is 1-Lipschitz in each element).
//   Concat     the inputs' E, stacked.
// SystemC elaborates once per process: one network and device per TEST.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <systemc>

#include "firmware/driver/host_memory.hpp"
#include "firmware/net/compiler.hpp"
#include "firmware/net/runtime.hpp"
#include "firmware/net/schedule.hpp"
#include "models/graph/reference.hpp"
#include "models/numerics/float_format.hpp"
#include "net_test_graph.hpp"
#include "sim/core/hw_config.hpp"
#include "sim/dla/functional_device.hpp"
#include "sim/soc/host_adapter.hpp"
#include "sim/soc/soc.hpp"
#include "sim/trace/device_mmio.hpp"

namespace octasim {
namespace {

namespace fn = firmware::net;
using models::graph::Tensor;
using nettest::GraphBuilder;
using nettest::int_attr;
using nettest::ints_attr;

constexpr std::uint32_t kSize = 8;  // H = W of the module's input
constexpr std::uint32_t kInputChannels = 32;
constexpr std::uint32_t kHeadKernels = 16, kTailKernels = 8;

// The branch widths: n1 (1x1), r2 -> n2 (3x3), r3 -> n3 (5x5), n4 (pool projection).
struct Module {
  std::uint32_t n1, r2, n2, r3, n3, n4;
};

// Deterministic weights of a K x C x R x S convolution, three in four positive (so that the
// signal, not only the worst-case error, grows with the fan-in and the bound stays informative),
// scaled by the fan-in so that activations keep their magnitude from layer to layer.
std::vector<float> weights(std::uint32_t k, std::uint32_t c, std::uint32_t r, unsigned seed) {
  const std::size_t n = std::size_t{k} * c * r * r;
  std::vector<float> v(n);
  const float scale = 2.0F / std::sqrt(static_cast<float>(c * r * r));
  for (std::size_t i = 0; i < n; ++i) {
    const auto h = static_cast<int>((i * 37 + seed * 101 + (i / (c * r * r)) * 13) % 97);
    v[i] = scale * (static_cast<float>(h) / 96.0F - 0.25F);
  }
  return v;
}

void add_conv(GraphBuilder& b, const std::string& name, const std::string& in,
              const std::string& out, std::uint32_t cin, std::uint32_t k, std::uint32_t r,
              bool relu, unsigned seed) {
  b.constant(name + "_W", {k, cin, r, r}, weights(k, cin, r, seed));
  std::vector<float> bias(k);
  // A different level per layer: a block of channels in the wrong place shows.
  for (std::uint32_t i = 0; i < k; ++i) {
    bias[i] = 0.05F * static_cast<float>(int(i % 7) - 3) + 0.1F * static_cast<float>(seed % 4);
  }
  b.constant(name + "_B", {k}, bias);
  auto& n = b.node("Conv", name, {in, name + "_W", name + "_B"}, {relu ? name + "_pre" : out});
  n.attributes["kernel_shape"] = ints_attr({r, r});
  const std::int64_t p = r / 2;
  n.attributes["pads"] = ints_attr({p, p, p, p});
  if (relu) b.node("Relu", name + "_relu", {name + "_pre"}, {out});
}

void add_max_pool(GraphBuilder& b, const std::string& name, const std::string& in,
                  const std::string& out) {
  auto& n = b.node("MaxPool", name, {in}, {out});
  n.attributes["kernel_shape"] = ints_attr({3, 3});
  n.attributes["pads"] = ints_attr({1, 1, 1, 1});
}

// x -> inception -> cat; cat -> 1x1 "head" -> y; cat -> 3x3/1 max pool -> m; m -> 1x1 "tail" +
// ReLU -> z. Outputs y, m, z.
models::graph::Graph inception_network(const Module& m) {
  GraphBuilder b;
  b.input("x", {1, kInputChannels, kSize, kSize});
  add_conv(b, "b1", "x", "b1_out", kInputChannels, m.n1, 1, true, 1);
  add_conv(b, "b2_reduce", "x", "b2_r", kInputChannels, m.r2, 1, true, 2);
  add_conv(b, "b2", "b2_r", "b2_out", m.r2, m.n2, 3, true, 3);
  add_conv(b, "b3_reduce", "x", "b3_r", kInputChannels, m.r3, 1, true, 4);
  add_conv(b, "b3", "b3_r", "b3_out", m.r3, m.n3, 5, true, 5);
  add_max_pool(b, "b4_pool", "x", "b4_p");
  add_conv(b, "b4", "b4_p", "b4_out", kInputChannels, m.n4, 1, true, 6);
  b.node("Concat", "cat", {"b1_out", "b2_out", "b3_out", "b4_out"}, {"cat"}).attributes["axis"] =
      int_attr(1);
  const std::uint32_t c = m.n1 + m.n2 + m.n3 + m.n4;
  add_conv(b, "head", "cat", "y", c, kHeadKernels, 1, false, 7);
  add_max_pool(b, "pool", "cat", "m");
  add_conv(b, "tail", "m", "z", c, kTailKernels, 1, true, 8);
  b.output("y").output("m").output("z");
  return b.graph();
}

// The concatenation's channel map as the design says it must be: each branch at the first
// multiple of `atom_channels` after the previous one's channels.
std::vector<std::uint32_t> expected_map(const Module& m, std::uint32_t atom_channels) {
  std::vector<std::uint32_t> map;
  std::uint32_t offset = 0;
  for (std::uint32_t n : {m.n1, m.n2, m.n3, m.n4}) {
    offset = (offset + atom_channels - 1) / atom_channels * atom_channels;
    for (std::uint32_t c = 0; c < n; ++c) map.push_back(offset + c);
    offset += n;
  }
  return map;
}

// A C x H x W field of FP32 reference values and of error bounds.
struct Field {
  std::uint32_t c = 0, h = kSize, w = kSize;
  std::vector<double> v, e;
  [[nodiscard]] std::size_t at(std::uint32_t ch, std::uint32_t y, std::uint32_t x) const {
    return (std::size_t{ch} * h + y) * w + x;
  }
};

struct Numerics {
  bool fp16 = false;
  const fn::CalibrationTable* table = nullptr;  // INT8: each tensor's step
  [[nodiscard]] double step(const std::string& t) const { return table->at(t).step(); }
};

Field field(const Tensor& t, std::uint32_t channels) {
  Field f;
  f.c = channels;
  f.v.assign(t.f.begin(), t.f.end());
  f.e.assign(f.v.size(), 0.0);
  return f;
}

// The bound of a stride-1, "same"-padded convolution's output `out` (FP32 values `y`).
Field conv_bound(const models::graph::Graph& g, const std::string& name, const std::string& in_t,
                 const Field& in, const std::string& out_t, const Tensor& y, const Numerics& num) {
  const Tensor& wt = g.initializers.at(name + "_W");
  const Tensor& bt = g.initializers.at(name + "_B");
  const auto k_count = static_cast<std::uint32_t>(wt.shape[0]);
  const auto r = static_cast<std::uint32_t>(wt.shape[2]);
  const std::int64_t pad = r / 2;
  Field out = field(y, k_count);
  const std::size_t per = std::size_t{in.c} * r * r;
  std::vector<double> s_w(k_count, 0.0);
  for (std::uint32_t k = 0; k < k_count; ++k) {
    for (std::size_t i = 0; i < per; ++i)
      s_w[k] = std::max(s_w[k], std::abs(double{wt.f[k * per + i]}));
    s_w[k] /= 127.0;
  }
  const double s_w_max = *std::max_element(s_w.begin(), s_w.end());
  for (std::uint32_t k = 0; k < k_count; ++k) {
    for (std::uint32_t oy = 0; oy < kSize; ++oy) {
      for (std::uint32_t ox = 0; ox < kSize; ++ox) {
        double prop = 0.0, sum = 0.0;
        for (std::uint32_t c = 0; c < in.c; ++c) {
          for (std::uint32_t ky = 0; ky < r; ++ky) {
            for (std::uint32_t kx = 0; kx < r; ++kx) {
              const std::int64_t iy = std::int64_t{oy} + ky - pad, ix = std::int64_t{ox} + kx - pad;
              if (iy < 0 || ix < 0 || iy >= kSize || ix >= kSize) continue;
              const double w =
                  std::abs(double{wt.f[((std::size_t{k} * in.c + c) * r + ky) * r + kx]});
              const double delta =
                  num.fp16 ? std::ldexp(w, -11) + std::ldexp(1.0, -25) : s_w[k] / 2;
              const std::size_t i =
                  in.at(c, static_cast<std::uint32_t>(iy), static_cast<std::uint32_t>(ix));
              const double x = std::abs(in.v[i]);
              prop += (w + delta) * in.e[i] + delta * x;
              sum += (w + delta) * (x + in.e[i]);
            }
          }
        }
        const double b = std::abs(double{bt.f[k]});
        double e = prop;
        if (num.fp16) {
          e += std::ldexp(sum, -24) + std::ldexp(b, -11) + std::ldexp(sum + b, -24);
          const std::size_t o = out.at(k, oy, ox);
          e += std::ldexp(std::abs(out.v[o]) + e, -11) + std::ldexp(1.0, -25);
          out.e[o] = e;
        } else {
          const double acc_step = num.step(in_t) * s_w[k];
          e += acc_step / 2 * std::max(1.0, 2 * b / (acc_step * 32767.0));
          e += (sum + b) * (s_w_max / s_w[k]) / 32766.0;
          e += num.step(out_t) / 2;
          out.e[out.at(k, oy, ox)] = e;
        }
      }
    }
  }
  return out;
}

Field pool_bound(const Field& in, const Tensor& y) {
  Field out = field(y, in.c);
  for (std::uint32_t c = 0; c < in.c; ++c)
    for (std::uint32_t oy = 0; oy < kSize; ++oy)
      for (std::uint32_t ox = 0; ox < kSize; ++ox) {
        double e = 0.0;
        for (std::int64_t iy = std::int64_t{oy} - 1; iy <= oy + 1; ++iy)
          for (std::int64_t ix = std::int64_t{ox} - 1; ix <= ox + 1; ++ix) {
            if (iy < 0 || ix < 0 || iy >= kSize || ix >= kSize) continue;
            e = std::max(
                e, in.e[in.at(c, static_cast<std::uint32_t>(iy), static_cast<std::uint32_t>(ix))]);
          }
        out.e[out.at(c, oy, ox)] = e;
      }
  return out;
}

// The bounds of outputs y, m, z for one image (FP32 values `ref`).
std::map<std::string, Field> output_bounds(const models::graph::Graph& g, const Module& m,
                                           const models::graph::TensorMap& ref,
                                           const Numerics& num) {
  Field x = field(ref.at("x"), kInputChannels);
  for (std::size_t i = 0; i < x.v.size(); ++i) {
    x.e[i] =
        num.fp16 ? std::ldexp(std::abs(x.v[i]), -11) + std::ldexp(1.0, -25) : num.step("x") / 2;
  }
  const auto conv = [&](const char* name, const std::string& in_t, const Field& in,
                        const std::string& out_t) {
    return conv_bound(g, name, in_t, in, out_t, ref.at(out_t), num);
  };
  const Field b1 = conv("b1", "x", x, "b1_out");
  const Field b2 = conv("b2", "b2_r", conv("b2_reduce", "x", x, "b2_r"), "b2_out");
  const Field b3 = conv("b3", "b3_r", conv("b3_reduce", "x", x, "b3_r"), "b3_out");
  const Field b4 = conv("b4", "b4_p", pool_bound(x, ref.at("b4_p")), "b4_out");
  Field cat = field(ref.at("cat"), m.n1 + m.n2 + m.n3 + m.n4);
  std::size_t at = 0;
  for (const Field* f : {&b1, &b2, &b3, &b4}) {
    std::copy(f->e.begin(), f->e.end(), cat.e.begin() + static_cast<std::ptrdiff_t>(at));
    at += f->e.size();
  }
  std::map<std::string, Field> out;
  out["y"] = conv("head", "cat", cat, "y");
  out["m"] = pool_bound(cat, ref.at("m"));
  out["z"] = conv("tail", "m", out["m"], "z");
  return out;
}

// Reads the weights of the CONV layer computing ONNX node `node` back from `mem` and checks the
// unused channels of its (padded) input have zero rows and every logical channel c holds its
// weights at map[c]: round(w / s_w) at INT8 (s_w = max|w_k| / 127), FP16's bits at FP16.
void check_weight_rows(const fn::NetProgram& prog, const models::graph::Graph& g,
                       const std::string& node, const std::vector<std::uint32_t>& map,
                       const models::ops::Memory& mem, bool fp16) {
  const firmware::ConvLayer* conv = nullptr;
  for (const fn::NetLayer& l : prog.layers) {
    if (l.nodes.find("Conv '" + node + "'") != std::string::npos) {
      conv = std::get_if<firmware::ConvLayer>(&l.hw);
    }
  }
  ASSERT_NE(conv, nullptr) << node;
  const auto physical = map.empty() ? 0U : map.back() + 1;
  if (!map.empty()) {
    ASSERT_EQ(conv->src.channels, physical) << node;
  }
  const models::ops::ConvWeights w =
      models::ops::read_weights(conv->weight_address, conv->kernels, 1, 1, conv->src.channels,
                                firmware::conv_model(*conv, prog.hw).weight_layout, mem);
  const Tensor& wt = g.initializers.at(node + "_W");
  const auto logical = static_cast<std::uint32_t>(wt.shape[1]);
  std::vector<bool> used(conv->src.channels, map.empty());
  for (std::uint32_t c : map) used[c] = true;
  std::size_t holes = 0, checked = 0;
  for (std::uint32_t k = 0; k < conv->kernels; ++k) {
    double max_w = 0.0;
    for (std::uint32_t c = 0; c < logical; ++c)
      max_w = std::max(max_w, std::abs(double{wt.f[k * logical + c]}));
    for (std::uint32_t p = 0; p < conv->src.channels; ++p) {
      if (!used[p]) {
        EXPECT_EQ(w.data[std::size_t{k} * w.channels + p], 0)
            << node << " kernel " << k << " channel " << p;
        ++holes;
      }
    }
    for (std::uint32_t c = 0; c < logical; ++c) {
      const float v = wt.f[k * logical + c];
      const double q = double{v} / (max_w / 127.0);
      const std::int32_t want =
          fp16 ? static_cast<std::int16_t>(models::fp16_from_float(v))
               : static_cast<std::int32_t>(q < 0 ? -std::floor(-q + 0.5) : std::floor(q + 0.5));
      const std::uint32_t p = map.empty() ? c : map[c];
      EXPECT_EQ(w.data[std::size_t{k} * w.channels + p], want)
          << node << " kernel " << k << " channel " << c;
      ++checked;
    }
  }
  EXPECT_EQ(holes, map.empty() ? 0U : std::size_t{conv->kernels} * (physical - logical));
  EXPECT_GT(checked, 0U);
}

enum class Device : std::uint8_t { kFunctional, kSoc };

constexpr std::size_t kImages = 2;

// Compiles the module for `config` at `precision`, runs kImages images on `device` and checks
// everything the file's comment lists.
void run_module(const char* config, fn::NetPrecision precision, const Module& m, Device device,
                bool expect_padded) {
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  const HwConfig hw = load_hw_config(config);
  const models::graph::Graph graph = inception_network(m);
  fn::CompiledNetwork net = fn::prepare_network(graph, hw);
  const Tensor images = fn::random_images(net.plan, 6, 7);  // calibration: these 6; tested: 2
  fn::QuantOptions options;
  options.precision = precision;
  // Everything in DRAM: this test reads surfaces and weights at their program addresses through
  // the device's DRAM image (placement in the CV-SRAM: cvsram_net_test.cpp).
  fn::quantize_network(net, hw, images, options, nullptr, fn::PlacementOptions{false});
  const fn::NetProgram& prog = net.program;
  const bool fp16 = precision == fn::NetPrecision::kFp16;
  // 6 convolutions and the pool of the module, the head, the pool and the tail.
  ASSERT_EQ(prog.layers.size(), 10U);
  ASSERT_EQ(prog.outputs.size(), 3U);

  // The layout, as the atom size dictates.
  const std::uint32_t atom_channels = prog.hw.atom_bytes / (fp16 ? 2U : 1U);
  const std::vector<std::uint32_t> map = expected_map(m, atom_channels);
  const bool padded = map.back() + 1 != map.size();
  ASSERT_EQ(padded, expect_padded) << "the test's channel counts do not exercise what it says";
  const fn::NetTensor& pooled = prog.outputs[1];
  EXPECT_EQ(pooled.channels(), map.size());
  EXPECT_EQ(pooled.surface.channels, map.back() + 1);
  EXPECT_EQ(pooled.channel_map, padded ? map : std::vector<std::uint32_t>{});

  // INT8: one clip for the concatenation and its inputs, max |cat| on the calibration images.
  if (!fp16) {
    const models::graph::TensorMap cal =
        models::graph::run_reference(net.graph, {{net.plan.input, images}});
    double peak = 0.0;
    for (float v : cal.at("cat").f) peak = std::max(peak, std::abs(double{v}));
    for (const char* t : {"cat", "b1_out", "b2_out", "b3_out", "b4_out", "m"}) {
      EXPECT_DOUBLE_EQ(prog.table.at(t).clip, peak) << t;
    }
    EXPECT_NE(prog.table.at("b2_r").clip, peak);  // a tensor of its own keeps its own clip
  }

  std::unique_ptr<soc::Soc> soc;
  std::unique_ptr<soc::HostAdapter> adapter;
  std::unique_ptr<dla::FunctionalDevice> functional;
  trace::Device* dev = nullptr;
  if (device == Device::kSoc) {
    soc = std::make_unique<soc::Soc>("dla", hw);
    adapter = std::make_unique<soc::HostAdapter>(*soc);
    dev = adapter.get();
  } else {
    functional = std::make_unique<dla::FunctionalDevice>(hw);
    dev = functional.get();
  }
  trace::DeviceMmio mmio(*dev, 50'000'000);
  fn::load_constants(prog, dev->memory());
  firmware::HostMemory golden;
  fn::load_constants(prog, golden);
  check_weight_rows(prog, net.graph, "head", padded ? map : std::vector<std::uint32_t>{},
                    dev->memory(), fp16);
  check_weight_rows(prog, net.graph, "tail", padded ? map : std::vector<std::uint32_t>{},
                    dev->memory(), fp16);
  fn::GroupState groups;
  Numerics num;
  num.fp16 = fp16;
  num.table = &prog.table;
  for (std::size_t i = 0; i < kImages; ++i) {
    fn::write_input(prog, images, i, dev->memory());
    fn::write_input(prog, images, i, golden);
    for (std::size_t l = 0; l < prog.layers.size(); ++l) {
      fn::await_layer(mmio, fn::program_layer(prog, l, mmio, groups));
      (void)fn::run_layer_model(prog, l, golden);
      const firmware::FeatureSurface& dst = *fn::layer_output(prog.layers[l]);
      const auto n = static_cast<std::size_t>(fn::tensor_bytes(prog, dst));
      std::vector<std::uint8_t> a(n), b(n);
      dev->memory().read(dst.address, a.data(), n);
      golden.read(dst.address, b.data(), n);
      EXPECT_TRUE(a == b) << "image " << i << ": layer " << l << " (" << prog.layers[l].engine
                          << " " << prog.layers[l].nodes << ") differs from the reference";
    }
    // The pool's output keeps the concatenation's unused channels, which hold zeros.
    const models::ops::ConvCube cube = models::ops::read_feature_cube(
        firmware::conv_model_surface(pooled.surface, prog.hw.atom_bytes),
        fp16 ? models::ops::ConvPrecision::kFp16 : models::ops::ConvPrecision::kInt8,
        dev->memory());
    std::vector<bool> used(cube.channels, false);
    for (std::uint32_t c : map) used[c] = true;
    std::size_t nonzero_holes = 0, nonzero = 0;
    for (std::uint32_t c = 0; c < cube.channels; ++c)
      for (std::int32_t v : std::vector<std::int32_t>(
               cube.data.begin() + static_cast<std::ptrdiff_t>(cube.index(0, 0, c)),
               cube.data.begin() +
                   static_cast<std::ptrdiff_t>(cube.index(0, 0, c) + kSize * kSize))) {
        (used[c] ? nonzero : nonzero_holes) += v != 0 ? 1 : 0;
      }
    EXPECT_EQ(nonzero_holes, 0U) << "image " << i;
    EXPECT_GT(nonzero, map.size());

    const models::graph::TensorMap ref =
        models::graph::run_reference(net.graph, {{net.plan.input, fn::slice_batch(images, i, 1)}});
    const std::map<std::string, Field> bounds = output_bounds(net.graph, m, ref, num);
    for (std::size_t k = 0; k < prog.outputs.size(); ++k) {
      const std::string& name = prog.outputs[k].name;
      EXPECT_EQ(fn::read_output_codes(prog, k, dev->memory()),
                fn::read_output_codes(prog, k, golden))
          << name;
      const Tensor d = fn::read_output(prog, k, dev->memory());
      const Field& f = bounds.at(name);
      ASSERT_EQ(d.f.size(), f.v.size()) << name;
      double peak = 0.0, worst_bound = 0.0, worst_error = 0.0;
      std::size_t outside = 0;
      for (std::size_t e = 0; e < f.v.size(); ++e) {
        peak = std::max(peak, std::abs(f.v[e]));
        worst_bound = std::max(worst_bound, f.e[e]);
        const double err = std::abs(double{d.f[e]} - f.v[e]);
        worst_error = std::max(worst_error, err);
        if (err > f.e[e] * (1 + 1e-9) + 1e-12) {
          if (outside++ < 3) {
            ADD_FAILURE() << name << " element " << e << ": device " << d.f[e] << ", FP32 "
                          << f.v[e] << ", bound " << f.e[e];
          }
        }
      }
      EXPECT_EQ(outside, 0U) << name << ", image " << i;
      ::testing::Test::RecordProperty(name + "_" + std::to_string(i),
                                      "peak " + std::to_string(peak) + ", largest bound " +
                                          std::to_string(worst_bound) + ", largest error " +
                                          std::to_string(worst_error));
      ASSERT_GT(peak, 0.0) << name;
      // The bound is tight enough that a misplaced channel or a wrong scale would break it.
      EXPECT_LT(worst_bound, (fp16 ? 0.01 : 0.25) * peak) << name;
    }
  }
  // Once more under the overlapped schedule (octasim net's default): the branches writing into
  // the concatenation run at once where the register groups allow; the outputs must not change.
  fn::write_input(prog, images, 0, dev->memory());
  fn::program_network(prog, mmio, groups, fn::Schedule::kOverlap);
  firmware::HostMemory serial;
  fn::load_constants(prog, serial);
  fn::write_input(prog, images, 0, serial);
  (void)fn::run_network_model(prog, serial);
  for (std::size_t k = 0; k < prog.outputs.size(); ++k) {
    EXPECT_EQ(fn::read_output_codes(prog, k, dev->memory()), fn::read_output_codes(prog, k, serial))
        << prog.outputs[k].name << " under the overlapped schedule";
  }
  const std::size_t recorded = soc ? soc->dla().layers().size() : functional->layers().size();
  std::size_t per_image = 0;
  for (const fn::NetLayer& l : prog.layers) per_image += fn::device_records(l).size();
  EXPECT_EQ(recorded, per_image * (kImages + 1));
  EXPECT_GE(per_image, prog.layers.size());
}

constexpr Module kAligned{64, 32, 128, 16, 32, 32};        // multiples of 32
constexpr Module kInception4a{192, 96, 208, 16, 48, 64};   // GoogLeNet's 4a
constexpr Module kInception4d{112, 144, 288, 32, 64, 64};  // GoogLeNet's 4d
constexpr Module kFp16Misaligned{24, 16, 40, 8, 12, 20};   // not multiples of 16
constexpr Module kSmallAligned{16, 8, 24, 8, 8, 16};       // multiples of 8
constexpr Module kSmallMisaligned{12, 8, 20, 4, 6, 10};    // not multiples of 8

TEST(ConcatFunctional, NvFullInt8Aligned) {
  run_module("nv_full", fn::NetPrecision::kInt8, kAligned, Device::kFunctional, false);
}
TEST(ConcatFunctional, NvFullInt8Inception4a) {
  run_module("nv_full", fn::NetPrecision::kInt8, kInception4a, Device::kFunctional, true);
}
TEST(ConcatFunctional, NvFullInt8Inception4d) {
  run_module("nv_full", fn::NetPrecision::kInt8, kInception4d, Device::kFunctional, true);
}
TEST(ConcatFunctional, NvFullFp16Aligned) {
  run_module("nv_full", fn::NetPrecision::kFp16, kAligned, Device::kFunctional, false);
}
TEST(ConcatFunctional, NvFullFp16Misaligned) {
  run_module("nv_full", fn::NetPrecision::kFp16, kFp16Misaligned, Device::kFunctional, true);
}
TEST(ConcatFunctional, NvSmallInt8Aligned) {
  run_module("nv_small", fn::NetPrecision::kInt8, kSmallAligned, Device::kFunctional, false);
}
TEST(ConcatFunctional, NvSmallInt8Misaligned) {
  run_module("nv_small", fn::NetPrecision::kInt8, kSmallMisaligned, Device::kFunctional, true);
}

TEST(ConcatOnSoc, NvFullInt8Aligned) {
  run_module("nv_full", fn::NetPrecision::kInt8, kAligned, Device::kSoc, false);
}
TEST(ConcatOnSoc, NvFullInt8Inception4a) {
  run_module("nv_full", fn::NetPrecision::kInt8, kInception4a, Device::kSoc, true);
}
TEST(ConcatOnSoc, NvFullFp16Misaligned) {
  run_module("nv_full", fn::NetPrecision::kFp16, kFp16Misaligned, Device::kSoc, true);
}
TEST(ConcatOnSoc, NvSmallInt8Misaligned) {
  run_module("nv_small", fn::NetPrecision::kInt8, kSmallMisaligned, Device::kSoc, true);
}

}  // namespace
}  // namespace octasim
