// Residual networks built node by node as an ONNX exporter (torch.onnx) writes them, for the
// tests of the element-wise Add on SDP: ResNet's basic block (conv-bn-relu, conv-bn, Add of the
// shortcut, relu; the shortcut the block's input or a projection conv-bn, which the exporter
// writes after the main branch), MobileNetV2's inverted residual block (1x1 expand + Clip(0, 6),
// depthwise 3x3 + Clip(0, 6), 1x1 project, Add without a ReLU), an Add and a BatchNormalization
// that follow no convolution, and the ResNet-50 / MobileNetV2 topologies. Weights are
// deterministic (std::mt19937), He-scaled so that activations stay near 1.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "net_test_graph.hpp"

namespace octasim::nettest {

class ResidualBuilder {
 public:
  explicit ResidualBuilder(unsigned seed = 1) : rng_(seed) {}

  GraphBuilder& graph() { return b_; }

  std::vector<float> uniform(std::size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng_);
    return v;
  }

  // Conv (with a bias) from `in` (cin channels) to cout channels; group > 1: grouped.
  std::string conv(const std::string& name, const std::string& in, int cin, int cout, int k,
                   int stride = 1, int group = 1) {
    const int per_group = cin / group;
    const float scale = std::sqrt(6.0F / static_cast<float>(per_group * k * k));
    b_.constant(name + ".W", {cout, per_group, k, k},
                uniform(static_cast<std::size_t>(cout) * per_group * k * k, -scale, scale));
    b_.constant(name + ".B", {cout}, uniform(static_cast<std::size_t>(cout), -0.1F, 0.1F));
    Node& n = b_.node("Conv", name, {in, name + ".W", name + ".B"}, {name + ".out"});
    n.attributes["kernel_shape"] = ints_attr({k, k});
    n.attributes["strides"] = ints_attr({stride, stride});
    const int pad = k / 2;
    n.attributes["pads"] = ints_attr({pad, pad, pad, pad});
    if (group > 1) n.attributes["group"] = int_attr(group);
    return name + ".out";
  }

  std::string batch_norm(const std::string& name, const std::string& in, int c) {
    const auto n = static_cast<std::size_t>(c);
    b_.constant(name + ".scale", {c}, uniform(n, 0.5F, 1.5F));
    b_.constant(name + ".bias", {c}, uniform(n, -0.2F, 0.2F));
    b_.constant(name + ".mean", {c}, uniform(n, -0.1F, 0.1F));
    b_.constant(name + ".var", {c}, uniform(n, 0.5F, 1.5F));
    b_.node("BatchNormalization", name,
            {in, name + ".scale", name + ".bias", name + ".mean", name + ".var"}, {name + ".out"});
    return name + ".out";
  }

  std::string relu(const std::string& name, const std::string& in) {
    b_.node("Relu", name, {in}, {name + ".out"});
    return name + ".out";
  }

  std::string relu6(const std::string& name, const std::string& in) {
    b_.constant(name + ".min", {}, {0.0F});
    b_.constant(name + ".max", {}, {6.0F});
    b_.node("Clip", name, {in, name + ".min", name + ".max"}, {name + ".out"});
    return name + ".out";
  }

  std::string add(const std::string& name, const std::string& a, const std::string& b) {
    b_.node("Add", name, {a, b}, {name + ".out"});
    return name + ".out";
  }

  // ResNet's basic block: conv3x3-bn-relu, conv3x3-bn, + shortcut (the input, or conv1x1-bn when
  // the shape changes, written after the main branch), relu.
  std::string basic_block(const std::string& p, const std::string& in, int cin, int cout,
                          int stride) {
    std::string t =
        relu(p + "relu1", batch_norm(p + "bn1", conv(p + "conv1", in, cin, cout, 3, stride), cout));
    t = batch_norm(p + "bn2", conv(p + "conv2", t, cout, cout, 3), cout);
    std::string shortcut = in;
    if (stride != 1 || cin != cout) {
      shortcut = batch_norm(p + "bns", conv(p + "convs", in, cin, cout, 1, stride), cout);
    }
    return relu(p + "relu", add(p + "add", t, shortcut));
  }

  // ResNet-50's bottleneck: 1x1 (width) - 3x3 (width, stride) - 1x1 (4 width), each with bn,
  // relu after the first two; + shortcut (projection when the shape changes); relu.
  std::string bottleneck(const std::string& p, const std::string& in, int cin, int width,
                         int stride) {
    const int cout = 4 * width;
    std::string t =
        relu(p + "relu1", batch_norm(p + "bn1", conv(p + "conv1", in, cin, width, 1), width));
    t = relu(p + "relu2",
             batch_norm(p + "bn2", conv(p + "conv2", t, width, width, 3, stride), width));
    t = batch_norm(p + "bn3", conv(p + "conv3", t, width, cout, 1), cout);
    std::string shortcut = in;
    if (stride != 1 || cin != cout) {
      shortcut = batch_norm(p + "bns", conv(p + "convs", in, cin, cout, 1, stride), cout);
    }
    return relu(p + "relu", add(p + "add", t, shortcut));
  }

  // MobileNetV2's inverted residual: 1x1 expand (t x) + relu6, depthwise 3x3 + relu6, 1x1
  // project (linear), + the input when stride 1 and cin == cout (no ReLU after the sum).
  std::string inverted_residual(const std::string& p, const std::string& in, int cin, int cout,
                                int stride, int expand) {
    const int hidden = cin * expand;
    std::string t = in;
    if (expand != 1) {
      t = relu6(p + "relu1", batch_norm(p + "bn1", conv(p + "conv1", t, cin, hidden, 1), hidden));
    }
    t = relu6(p + "relu2",
              batch_norm(p + "bn2", conv(p + "dw", t, hidden, hidden, 3, stride, hidden), hidden));
    t = batch_norm(p + "bn3", conv(p + "conv3", t, hidden, cout, 1), cout);
    if (stride == 1 && cin == cout) t = add(p + "add", t, in);
    return t;
  }

 private:
  GraphBuilder b_;
  std::mt19937 rng_;
};

// One ResNet basic block on a 1 x cin x size x size input; `projection`: 8 -> 16 channels at
// stride 2 (the shortcut a conv-bn), else 16 -> 16 (the shortcut the input).
inline Graph basic_block_graph(bool projection, int size = 8) {
  ResidualBuilder r(projection ? 2 : 1);
  const int cin = projection ? 8 : 16;
  r.graph().input("x", {1, cin, size, size});
  r.graph().output(r.basic_block("b.", "x", cin, 16, projection ? 2 : 1));
  return r.graph().graph();
}

// MobileNetV2's inverted residual block with its Add (16 -> 16 channels, expansion 3).
inline Graph inverted_residual_graph() {
  ResidualBuilder r(3);
  r.graph().input("x", {1, 16, 8, 8});
  r.graph().output(r.inverted_residual("m.", "x", 16, 16, 1, 3));
  return r.graph().graph();
}

// An Add and a BatchNormalization after no convolution: conv3x3 + relu (its ReLU is before the
// sum, so the Add is not fused), Add of the input, BatchNormalization, ReLU (pre-activation
// style).
inline Graph sdp_alone_graph() {
  ResidualBuilder r(4);
  r.graph().input("x", {1, 16, 8, 8});
  const std::string a = r.relu("relu1", r.conv("conv1", "x", 16, 16, 3));
  const std::string s = r.add("add", a, "x");
  r.graph().output(r.relu("relu2", r.batch_norm("bn", s, 16)));
  return r.graph().graph();
}

// ResNet-50 (torchvision's layout: 7x7/2 stem, 3x3/2 max pool, 3-4-6-3 bottlenecks of widths
// 64-128-256-512, the stride on the 3x3, global average pool, fully connected 2048 -> 1000) on a
// 1 x 3 x size x size input.
inline Graph resnet50_graph(int size) {
  ResidualBuilder r(50);
  GraphBuilder& b = r.graph();
  b.input("x", {1, 3, size, size});
  std::string t = r.relu("relu0", r.batch_norm("bn0", r.conv("conv0", "x", 3, 64, 7, 2), 64));
  Node& pool = b.node("MaxPool", "pool0", {t}, {"pool0.out"});
  pool.attributes["kernel_shape"] = ints_attr({3, 3});
  pool.attributes["strides"] = ints_attr({2, 2});
  pool.attributes["pads"] = ints_attr({1, 1, 1, 1});
  t = "pool0.out";
  int cin = 64;
  const int blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const int width = 64 << stage;
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string p = "s" + std::to_string(stage + 1) + "b" + std::to_string(i) + ".";
      t = r.bottleneck(p, t, cin, width, i == 0 && stage > 0 ? 2 : 1);
      cin = 4 * width;
    }
  }
  b.node("GlobalAveragePool", "gap", {t}, {"gap.out"});
  b.node("Flatten", "flatten", {"gap.out"}, {"flat"});
  b.constant("fc.W", {1000, 2048}, r.uniform(1000 * 2048, -0.05F, 0.05F));
  b.constant("fc.B", {1000}, r.uniform(1000, -0.1F, 0.1F));
  b.node("Gemm", "fc", {"flat", "fc.W", "fc.B"}, {"logits"}).attributes["transB"] = int_attr(1);
  b.output("logits");
  return b.graph();
}

// MobileNetV2 (width 1.0: 32-channel stem, 17 inverted residuals (t, c, n, s) = (1,16,1,1),
// (6,24,2,2), (6,32,3,2), (6,64,4,2), (6,96,3,1), (6,160,3,2), (6,320,1,1), 1x1 to 1280, global
// average pool, fully connected to 1000) on a 1 x 3 x size x size input: 10 residual Adds.
inline Graph mobilenet_v2_graph(int size) {
  ResidualBuilder r(2);
  GraphBuilder& b = r.graph();
  b.input("x", {1, 3, size, size});
  std::string t = r.relu6("relu0", r.batch_norm("bn0", r.conv("conv0", "x", 3, 32, 3, 2), 32));
  struct Stage {
    int t, c, n, s;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int cin = 32, block = 0;
  for (const Stage& st : stages) {
    for (int i = 0; i < st.n; ++i) {
      t = r.inverted_residual("ir" + std::to_string(block++) + ".", t, cin, st.c, i == 0 ? st.s : 1,
                              st.t);
      cin = st.c;
    }
  }
  t = r.relu6("relu_last", r.batch_norm("bn_last", r.conv("conv_last", t, cin, 1280, 1), 1280));
  b.node("GlobalAveragePool", "gap", {t}, {"gap.out"});
  b.node("Flatten", "flatten", {"gap.out"}, {"flat"});
  b.constant("fc.W", {1000, 1280}, r.uniform(1000 * 1280, -0.05F, 0.05F));
  b.constant("fc.B", {1000}, r.uniform(1000, -0.1F, 0.1F));
  b.node("Gemm", "fc", {"flat", "fc.W", "fc.B"}, {"logits"}).attributes["transB"] = int_attr(1);
  b.output("logits");
  return b.graph();
}

}  // namespace octasim::nettest
