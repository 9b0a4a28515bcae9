// The zoo's networks (private to firmware/zoo): classic.cpp holds the plain convolutional ones
// (LeNet-5, AlexNet, GoogLeNet), residual.cpp those with residual connections and batch
// normalisation (ResNet-50, MobileNetV2), transformer.cpp the transformers (ViT, BERT).
#pragma once

#include <cstdint>

#include <onnx/onnx_pb.h>

namespace octasim::firmware::zoo::detail {

[[nodiscard]] onnx::ModelProto lenet5(std::uint64_t seed);
[[nodiscard]] onnx::ModelProto alexnet(std::uint64_t seed);
[[nodiscard]] onnx::ModelProto googlenet(std::uint64_t seed);
[[nodiscard]] onnx::ModelProto resnet50(std::uint64_t seed);
[[nodiscard]] onnx::ModelProto mobilenet_v2(std::uint64_t seed);
[[nodiscard]] onnx::ModelProto vit_tiny(std::uint64_t seed);
[[nodiscard]] onnx::ModelProto bert_tiny(std::uint64_t seed);

}  // namespace octasim::firmware::zoo::detail
