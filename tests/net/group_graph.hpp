// A grouped convolution for the network compiler's tests: x (1 x C x H x W) -> Conv (G groups, K
// kernels of R x R over C/G channels, stride 1, padding R/2, a bias) -> Relu [-> MaxPool 2x2
// stride 2] [-> Flatten -> Gemm of `gemm_outputs` outputs] -> y. Weights of both signs, each
// kernel's largest magnitude about the same (so the per-channel weight scales and SDP multipliers
// are alike).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net_test_graph.hpp"

namespace octasim::nettest {

struct GroupCase {
  std::int64_t channels = 64, height = 8, width = 8, kernels = 64, groups = 2, kernel = 3;
  bool max_pool = false;
  std::int64_t gemm_outputs = 0;  // 0: no Gemm
};

inline models::graph::Graph group_graph(const GroupCase& c) {
  GraphBuilder b;
  b.input("x", {1, c.channels, c.height, c.width});
  const std::int64_t per_group = c.channels / c.groups;
  const auto n = static_cast<std::size_t>(c.kernels * per_group * c.kernel * c.kernel);
  std::vector<float> w = ramp(n);
  for (float& v : w) v /= static_cast<float>(per_group * c.kernel * c.kernel) / 9.0F;
  b.constant("W", {c.kernels, per_group, c.kernel, c.kernel}, w);
  b.constant("B", {c.kernels}, ramp(static_cast<std::size_t>(c.kernels)));
  auto& conv = b.node("Conv", "conv", {"x", "W", "B"}, {"c"});
  conv.attributes["kernel_shape"] = ints_attr({c.kernel, c.kernel});
  const std::int64_t pad = c.kernel / 2;
  conv.attributes["pads"] = ints_attr({pad, pad, pad, pad});
  conv.attributes["group"] = int_attr(c.groups);
  const std::string last = c.gemm_outputs > 0 ? "features" : "y";
  b.node("Relu", "relu", {"c"}, {c.max_pool ? "r" : last});
  if (c.max_pool) {
    auto& mp = b.node("MaxPool", "pool", {"r"}, {last});
    mp.attributes["kernel_shape"] = ints_attr({2, 2});
    mp.attributes["strides"] = ints_attr({2, 2});
  }
  if (c.gemm_outputs > 0) {
    const std::int64_t side = c.max_pool ? 2 : 1;
    const std::int64_t features = c.kernels * (c.height / side) * (c.width / side);
    b.node("Flatten", "flatten", {last}, {"flat"});
    std::vector<float> fc = ramp(static_cast<std::size_t>(c.gemm_outputs * features));
    for (float& v : fc) v /= static_cast<float>(features) / 64.0F;
    b.constant("F", {c.gemm_outputs, features}, fc);
    b.constant("FB", {c.gemm_outputs}, ramp(static_cast<std::size_t>(c.gemm_outputs)));
    auto& gemm = b.node("Gemm", "fc", {"flat", "F", "FB"}, {"y"});
    gemm.attributes["transB"] = int_attr(1);
  }
  b.output("y");
  return b.graph();
}

// The ONNX MACs of the convolution: H x W outputs of K kernels over R x R x C/G.
inline std::uint64_t group_network_macs(const GroupCase& c) {
  return static_cast<std::uint64_t>(c.height * c.width * c.kernels * c.kernel * c.kernel *
                                    (c.channels / c.groups));
}

}  // namespace octasim::nettest
