// A node on the PPU (program.hpp PpuNodeLayer): the kNode kernel's image (models/ops/ppu_node.hpp)
// naming the node's input surfaces and constants and its output surface, a kNode descriptor
// pointing at it and a push buffer launching it, all among the constants.
#include <cstring>

#include <fmt/core.h>

#include "firmware/net/builder.hpp"
#include "firmware/ppu/commands.hpp"

namespace octasim::firmware::net {

using models::graph::GraphError;

namespace {

// A dense constant as the kernel reads it: FP32 for the float types, INT64 for the others.
std::vector<std::uint8_t> dense_bytes(const models::graph::Tensor& t, bool floats) {
  std::vector<std::uint8_t> bytes;
  const std::size_t n = t.elements();
  bytes.resize(n * (floats ? 4 : 8));
  for (std::size_t k = 0; k < n; ++k) {
    if (floats) {
      const float v = static_cast<float>(t.at(k));
      std::memcpy(bytes.data() + 4 * k, &v, 4);
    } else {
      const std::int64_t v = t.i.at(k);
      std::memcpy(bytes.data() + 8 * k, &v, 8);
    }
  }
  // An empty constant still gets an address of its own.
  if (bytes.empty()) bytes.assign(4, 0);
  return bytes;
}

}  // namespace

namespace detail {

PpuNodeLayer Builder::lower_ppu_node(const PlannedLayer& l, const std::string& who) {
  const models::graph::Node& n = g_.nodes.at(l.nodes.at(0));
  namespace O = models::ops;
  // An integer network's surfaces hold INT16 codes that are the values (step 1): the kernel reads
  // them as the tensor's ONNX type (the plan's dtypes) and writes integers.
  const auto surface_place = [&](const std::string& name, const NetTensor& t,
                                 const std::vector<std::int64_t>& shape) {
    O::TensorPlace p;
    if (integer_) {
      const auto type = plan_.dtypes.find(name);
      if (t.precision != Precision::kInt16 || type == plan_.dtypes.end() ||
          models::graph::is_float(type->second)) {
        throw GraphError(fmt::format("{}: tensor '{}' is not an INT16 integer surface", who, name));
      }
      p.storage = O::Storage::kSurfaceInt16;
      p.dtype = type->second;
    } else {
      p.storage = fp16() ? O::Storage::kSurfaceFp16 : O::Storage::kSurfaceInt8;
      if (!fp16()) p.step = t.quant.step();
    }
    p.address = t.surface.address;
    p.shape = shape;
    p.width = t.surface.width;
    p.height = t.surface.height;
    p.channels = t.surface.channels;
    p.line_stride = t.surface.line_stride;
    p.surface_stride = t.surface.surface_stride;
    p.atom_bytes = atom();
    p.rows = t.rows;
    p.channel_map = t.channel_map;
    return p;
  };
  PpuNodeLayer p;
  p.precision = elem();
  O::NodeImage& image = p.image;
  image.op_type = n.op_type;
  image.name = n.name;
  image.opset = g_.opset;
  image.attributes = n.attributes;
  for (const std::string& in : n.inputs) {
    O::TensorPlace place;
    if (in.empty()) {
      place.present = false;
    } else if (g_.is_constant(in)) {
      const models::graph::Tensor& c = g_.initializers.at(in);
      const bool floats = models::graph::is_float(c.dtype);
      place.storage = floats                                    ? O::Storage::kDenseFp32
                      : c.dtype == models::graph::DType::kInt64 ? O::Storage::kDenseInt64
                                                                : O::Storage::kDenseTyped;
      place.dtype = c.dtype;
      place.shape = c.shape;
      place.address = constant(fmt::format("{} constant '{}'", who, in), dense_bytes(c, floats));
    } else {
      const NetTensor& t = tensor(plan_.resolve(in));
      place = surface_place(in, t, plan_.shapes.at(in));
      p.srcs.push_back(t.surface);
    }
    image.inputs.push_back(std::move(place));
  }
  const NetTensor& dst = tensor(l.output);
  image.outputs.push_back(surface_place(l.output, dst, plan_.shapes.at(l.output)));
  p.dst = dst.surface;
  const std::vector<std::uint8_t> bytes = O::encode_node(image);
  // The PPU decodes the image at LAUNCH and stops the channel on one it refuses: refuse it here,
  // naming the node, instead.
  try {
    (void)O::decode_node(bytes.data(), bytes.size());
  } catch (const O::NodeImageError& e) {
    throw GraphError(fmt::format("{}: the PPU would refuse its kernel image: {}", who, e.what()));
  }
  p.image_bytes = static_cast<std::uint32_t>(bytes.size());
  p.image_address = constant(who + " kernel image", bytes);
  const PpuLaunch launch =
      ppu_launch(who + " node", ppu_format::node_descriptor(p.image_address, p.image_bytes));
  p.push_buffer = launch.push_buffer;
  p.push_buffer_bytes = launch.push_buffer_bytes;
  p.channel = launch.channel;
  return p;
}

Builder::PpuLaunch Builder::ppu_launch(const std::string& what, const ppu_format::Descriptor& d) {
  namespace F = ppu_format;
  const std::uint64_t descriptor = constant(what + " descriptor", d.bytes());
  F::PushBuffer pb;
  pb.launch(descriptor);
  pb.interrupt();
  const std::vector<std::uint8_t> bytes = pb.bytes();
  PpuLaunch l;
  l.push_buffer_bytes = static_cast<std::uint32_t>(bytes.size());
  l.push_buffer = constant(what + " push buffer", bytes);
  l.channel = ppu_layers_++ % F::kChannels;
  return l;
}

}  // namespace detail
}  // namespace octasim::firmware::net
