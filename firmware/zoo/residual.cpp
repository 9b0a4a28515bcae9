// ResNet-50 and MobileNetV2 as torchvision defines them: convolutions without bias, each
// followed by BatchNormalization (which octasim's compiler folds into it), residual Adds.
#include <array>
#include <string>

#include "firmware/zoo/builder.hpp"
#include "firmware/zoo/networks.hpp"

namespace octasim::firmware::zoo::detail {
namespace {

// The last BatchNormalization of a residual branch starts at a smaller scale (as torchvision's
// zero_init_residual option does, but not zero), so that the sum of branch and shortcut does
// not double the activations' variance at every block.
constexpr float kResidualGamma = 0.25F;

std::string conv_bn(ModelBuilder& b, const std::string& x, const std::string& name, ConvSpec spec,
                    float gamma = 1.0F) {
  spec.bias = false;
  return b.batch_norm(b.conv(x, name, spec), name + ".bn", gamma);
}

// torchvision's Bottleneck (ResNet v1.5: the stride on the 3x3); a projection shortcut (1x1
// conv + BN) when the block changes the shape.
std::string bottleneck(ModelBuilder& b, const std::string& x, const std::string& name,
                       std::int64_t width, std::int64_t stride) {
  const std::int64_t out = 4 * width;
  std::string y = b.relu(conv_bn(b, x, name + ".conv1", {width, 1}), name + ".relu1");
  y = b.relu(conv_bn(b, y, name + ".conv2", {width, 3, stride, 1}), name + ".relu2");
  y = conv_bn(b, y, name + ".conv3", {out, 1}, kResidualGamma);
  std::string shortcut = x;
  if (stride != 1 || b.channels(x) != out) {
    shortcut = conv_bn(b, x, name + ".downsample", {out, 1, stride});
  }
  return b.relu(b.add(y, shortcut, name + ".add"), name + ".relu");
}

// torchvision's InvertedResidual: 1x1 expansion (none when t = 1), 3x3 depthwise, linear 1x1
// projection; the shortcut when the stride is 1 and the channels stay.
std::string inverted_residual(ModelBuilder& b, const std::string& x, const std::string& name,
                              std::int64_t out, std::int64_t stride, std::int64_t expand) {
  const std::int64_t in = b.channels(x), hidden = in * expand;
  const bool residual = stride == 1 && in == out;
  std::string y = x;
  if (expand != 1) y = b.relu6(conv_bn(b, y, name + ".expand", {hidden, 1}), name + ".relu6a");
  y = b.relu6(conv_bn(b, y, name + ".depthwise", {hidden, 3, stride, 1, hidden}), name + ".relu6b");
  y = conv_bn(b, y, name + ".project", {out, 1}, residual ? kResidualGamma : 1.0F);
  return residual ? b.add(y, x, name + ".add") : y;
}

}  // namespace

onnx::ModelProto resnet50(std::uint64_t seed) {
  ModelBuilder b("resnet50",
                 "ResNet-50 v1.5 (He et al. 2016, torchvision) on 1x3x224x224, BatchNormalization "
                 "after every conv, logits out; deterministic untrained weights",
                 seed, {1, 3, 224, 224});
  std::string x = b.relu(conv_bn(b, b.input(), "conv1", {64, 7, 2, 3}), "relu");
  x = b.max_pool(x, "maxpool", 3, 2, 1);
  const std::array<std::int64_t, 4> blocks = {3, 4, 6, 3};
  for (std::size_t stage = 0; stage < blocks.size(); ++stage) {
    const std::int64_t width = std::int64_t{64} << stage;
    for (std::int64_t k = 0; k < blocks[stage]; ++k) {
      const std::int64_t stride = stage > 0 && k == 0 ? 2 : 1;
      x = bottleneck(b, x, "layer" + std::to_string(stage + 1) + "." + std::to_string(k), width,
                     stride);
    }
  }
  x = b.flatten(b.global_average_pool(x, "avgpool"), "flatten");
  return b.finish(b.gemm(x, "fc", 1000));
}

onnx::ModelProto mobilenet_v2(std::uint64_t seed) {
  ModelBuilder b("mobilenet_v2",
                 "MobileNetV2 (Sandler et al. 2018, torchvision, width 1.0) on 1x3x224x224, "
                 "depthwise convs, ReLU6 as Clip, logits out; deterministic untrained weights",
                 seed, {1, 3, 224, 224});
  std::string x = b.relu6(conv_bn(b, b.input(), "features.0", {32, 3, 2, 1}), "features.0.relu6");
  // Sandler et al. table 2: expansion t, channels c, repeats n, first stride s.
  struct Stage {
    std::int64_t t, c, n, s;
  };
  const std::array<Stage, 7> stages = {{{1, 16, 1, 1},
                                        {6, 24, 2, 2},
                                        {6, 32, 3, 2},
                                        {6, 64, 4, 2},
                                        {6, 96, 3, 1},
                                        {6, 160, 3, 2},
                                        {6, 320, 1, 1}}};
  int index = 1;
  for (const Stage& st : stages) {
    for (std::int64_t k = 0; k < st.n; ++k, ++index) {
      x = inverted_residual(b, x, "features." + std::to_string(index), st.c, k == 0 ? st.s : 1,
                            st.t);
    }
  }
  const std::string last = "features." + std::to_string(index);
  x = b.relu6(conv_bn(b, x, last, {1280, 1}), last + ".relu6");
  x = b.flatten(b.global_average_pool(x, "avgpool"), "flatten");
  return b.finish(b.gemm(x, "classifier", 1000));
}

}  // namespace octasim::firmware::zoo::detail
