// LeNet-5, AlexNet and GoogLeNet: convolutions, ReLU, pooling and LRN, no normalisation layers.
#include <array>
#include <string>

#include "firmware/zoo/builder.hpp"
#include "firmware/zoo/networks.hpp"

namespace octasim::firmware::zoo::detail {

// LeCun et al. 1998 on a 32x32 image, with ReLU and max pooling in place of the original's
// scaled tanh and trainable subsampling, and C3 fully connected to S2 (no connection table).
onnx::ModelProto lenet5(std::uint64_t seed) {
  ModelBuilder b("lenet5",
                 "LeNet-5 (LeCun et al. 1998) on 1x1x32x32 with ReLU and max pooling; "
                 "deterministic untrained weights",
                 seed, {1, 1, 32, 32});
  std::string x = b.relu(b.conv(b.input(), "conv1", {6, 5}), "relu1");
  x = b.max_pool(x, "pool1", 2, 2);
  x = b.relu(b.conv(x, "conv2", {16, 5}), "relu2");
  x = b.flatten(b.max_pool(x, "pool2", 2, 2), "flatten");
  x = b.relu(b.gemm(x, "fc1", 120), "relu3");
  x = b.relu(b.gemm(x, "fc2", 84), "relu4");
  return b.finish(b.gemm(x, "fc3", 10));
}

// Caffe's BVLC AlexNet (bvlc_alexnet/deploy.prototxt): the grouped conv2, conv4 and conv5 of
// the two-GPU original, LRN after conv1 and conv2; Dropout and the Softmax left out.
onnx::ModelProto alexnet(std::uint64_t seed) {
  ModelBuilder b("alexnet",
                 "BVLC AlexNet (Krizhevsky et al. 2012, Caffe) on 1x3x227x227, grouped conv2/4/5, "
                 "LRN, logits out; deterministic untrained weights",
                 seed, {1, 3, 227, 227});
  std::string x = b.relu(b.conv(b.input(), "conv1", {96, 11, 4}), "relu1");
  x = b.max_pool(b.lrn(x, "norm1"), "pool1", 3, 2);
  x = b.relu(b.conv(x, "conv2", {256, 5, 1, 2, 2}), "relu2");
  x = b.max_pool(b.lrn(x, "norm2"), "pool2", 3, 2);
  x = b.relu(b.conv(x, "conv3", {384, 3, 1, 1}), "relu3");
  x = b.relu(b.conv(x, "conv4", {384, 3, 1, 1, 2}), "relu4");
  x = b.relu(b.conv(x, "conv5", {256, 3, 1, 1, 2}), "relu5");
  x = b.flatten(b.max_pool(x, "pool5", 3, 2), "flatten");
  x = b.relu(b.gemm(x, "fc6", 4096), "relu6");
  x = b.relu(b.gemm(x, "fc7", 4096), "relu7");
  return b.finish(b.gemm(x, "fc8", 1000));
}

namespace {

// One inception module of Szegedy et al. 2014, table 1: #1x1, #3x3 reduce, #3x3, #5x5 reduce,
// #5x5, pool proj.
using Inception = std::array<std::int64_t, 6>;

std::string conv_relu(ModelBuilder& b, const std::string& x, const std::string& name,
                      const ConvSpec& spec) {
  return b.relu(b.conv(x, name, spec), name + "/relu");
}

std::string inception(ModelBuilder& b, const std::string& x, const std::string& name,
                      const Inception& c) {
  const std::string p = "inception_" + name + "/";
  const std::string b1 = conv_relu(b, x, p + "1x1", {c[0], 1});
  const std::string b3 =
      conv_relu(b, conv_relu(b, x, p + "3x3_reduce", {c[1], 1}), p + "3x3", {c[2], 3, 1, 1});
  const std::string b5 =
      conv_relu(b, conv_relu(b, x, p + "5x5_reduce", {c[3], 1}), p + "5x5", {c[4], 5, 1, 2});
  const std::string bp =
      conv_relu(b, b.max_pool(x, p + "pool", 3, 1, 1), p + "pool_proj", {c[5], 1});
  return b.concat({b1, b3, b5, bp}, p + "output");
}

}  // namespace

// Caffe's BVLC GoogLeNet (bvlc_googlenet/deploy.prototxt): pools in ceil mode as Caffe rounds,
// no auxiliary classifiers, Dropout and Softmax left out.
onnx::ModelProto googlenet(std::uint64_t seed) {
  ModelBuilder b("googlenet",
                 "BVLC GoogLeNet (Szegedy et al. 2014) on 1x3x224x224, 9 inception modules, no "
                 "auxiliary classifiers, logits out; deterministic untrained weights",
                 seed, {1, 3, 224, 224});
  std::string x = conv_relu(b, b.input(), "conv1/7x7_s2", {64, 7, 2, 3});
  x = b.lrn(b.max_pool(x, "pool1/3x3_s2", 3, 2, 0, true), "pool1/norm1");
  x = conv_relu(b, x, "conv2/3x3_reduce", {64, 1});
  x = conv_relu(b, x, "conv2/3x3", {192, 3, 1, 1});
  x = b.max_pool(b.lrn(x, "conv2/norm2"), "pool2/3x3_s2", 3, 2, 0, true);
  x = inception(b, x, "3a", {64, 96, 128, 16, 32, 32});
  x = inception(b, x, "3b", {128, 128, 192, 32, 96, 64});
  x = b.max_pool(x, "pool3/3x3_s2", 3, 2, 0, true);
  x = inception(b, x, "4a", {192, 96, 208, 16, 48, 64});
  x = inception(b, x, "4b", {160, 112, 224, 24, 64, 64});
  x = inception(b, x, "4c", {128, 128, 256, 24, 64, 64});
  x = inception(b, x, "4d", {112, 144, 288, 32, 64, 64});
  x = inception(b, x, "4e", {256, 160, 320, 32, 128, 128});
  x = b.max_pool(x, "pool4/3x3_s2", 3, 2, 0, true);
  x = inception(b, x, "5a", {256, 160, 320, 32, 128, 128});
  x = inception(b, x, "5b", {384, 192, 384, 48, 128, 128});
  x = b.flatten(b.average_pool(x, "pool5/7x7_s1", 7, 1), "flatten");
  return b.finish(b.gemm(x, "loss3/classifier", 1000));
}

}  // namespace octasim::firmware::zoo::detail
