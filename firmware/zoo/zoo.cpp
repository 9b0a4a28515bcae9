#include "firmware/zoo/zoo.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "firmware/zoo/networks.hpp"
#include "models/io/atomic_file.hpp"

namespace octasim::firmware::zoo {
namespace {

using Build = onnx::ModelProto (*)(std::uint64_t);

struct Entry {
  ModelInfo info;
  Build build;
};

// FNV-1a of the name: each model's own seed, fixed forever.
std::uint64_t seed_of(const std::string& name) {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (const char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001B3ULL;
  }
  return h;
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"lenet5",
        "LeNet-5 (LeCun 1998), 32x32 grey; ReLU and max pooling, not tanh/subsampling",
        {1, 1, 32, 32}},
       detail::lenet5},
      {{"alexnet", "BVLC AlexNet (Caffe), 227x227; grouped conv2/4/5, LRN, 3 FC", {1, 3, 227, 227}},
       detail::alexnet},
      {{"googlenet",
        "BVLC GoogLeNet (Inception v1), 224x224; 9 inception modules (Concat), LRN",
        {1, 3, 224, 224}},
       detail::googlenet},
      {{"resnet50",
        "ResNet-50 v1.5 (torchvision), 224x224; bottlenecks, BatchNormalization, Add",
        {1, 3, 224, 224}},
       detail::resnet50},
      {{"mobilenet_v2",
        "MobileNetV2 1.0 (torchvision), 224x224; depthwise convs, ReLU6 as Clip",
        {1, 3, 224, 224}},
       detail::mobilenet_v2},
      {{"vit_tiny",
        "ViT in miniature, 32x32, 4x4 patches; 2 pre-norm layers of 64, 4 heads, GELU MLP",
        {1, 3, 32, 32}},
       detail::vit_tiny},
      {{"bert_tiny",
        "BERT-like encoder on an embedded 1x32x64 sequence; 2 post-norm layers, 4 heads",
        {1, 32, 64}},
       detail::bert_tiny},
  };
  return table;
}

const Entry& entry(const std::string& name) {
  std::string known;
  for (const Entry& e : entries()) {
    if (e.info.name == name) return e;
    known += (known.empty() ? "" : ", ") + e.info.name;
  }
  throw ZooError("unknown model '" + name + "' (known: " + known + ")");
}

}  // namespace

const std::vector<ModelInfo>& models() {
  static const std::vector<ModelInfo> list = [] {
    std::vector<ModelInfo> v;
    for (const Entry& e : entries()) v.push_back(e.info);
    return v;
  }();
  return list;
}

const ModelInfo& model_info(const std::string& name) {
  return entry(name).info;
}

onnx::ModelProto build_model(const std::string& name) {
  return entry(name).build(seed_of(name));
}

std::string serialize_model(const std::string& name) {
  const onnx::ModelProto model = build_model(name);
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    out.SetSerializationDeterministic(true);
    if (!model.SerializeToCodedStream(&out)) {
      throw ZooError("model '" + name + "' could not be serialized");
    }
  }
  return bytes;
}

void write_model(const std::string& name, const std::string& path) {
  const std::string bytes = serialize_model(name);
  try {
    models::write_file_atomically(path, bytes);
  } catch (const models::OutputFileError& e) {
    throw ZooError(path + ": cannot write (" + e.reason() + ")");
  }
}

}  // namespace octasim::firmware::zoo
