// A node on the PPU (program.hpp PpuNodeLayer): the kNode kernel's image (models/ops/ppu_node.hpp)
// naming the node's input surfaces and constants and its output surface, a kNode descriptor
// pointing at it and a push buffer launching it, all among the constants.
#include <algorithm>
#include <cstring>

#include <fmt/core.h>

#include "firmware/net/builder.hpp"
#include "firmware/net/calibrate.hpp"
#include "firmware/net/weights.hpp"
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

// A 2-D constant as an INT8 rows surface (models/ops/ppu_node.hpp: H = its rows, C = its
// columns, W = 1) of codes quantized per channel along `axis` (0: each row, 1: each column) by
// `quantizer`, at `address`; returns the place and fills `bytes` and each channel's step.
models::ops::TensorPlace int8_weight_surface(const models::graph::Tensor& c, int axis,
                                             WeightQuantizer quantizer, unsigned atom,
                                             std::vector<std::uint8_t>& bytes,
                                             std::vector<double>& steps) {
  namespace O = models::ops;
  const auto rows = static_cast<std::uint32_t>(c.shape.at(0));
  const auto cols = static_cast<std::uint32_t>(c.shape.at(1));
  const std::uint32_t channels = axis == 0 ? rows : cols, per = axis == 0 ? cols : rows;
  std::vector<std::int32_t> codes(c.elements());  // C order of the constant
  steps.assign(channels, 1.0);
  std::vector<float> w(per);
  std::vector<std::int32_t> q(per);
  const auto at = [&](std::uint32_t ch, std::uint32_t k) {
    return axis == 0 ? std::size_t{ch} * cols + k : std::size_t{k} * cols + ch;
  };
  for (std::uint32_t ch = 0; ch < channels; ++ch) {
    for (std::uint32_t k = 0; k < per; ++k) w[k] = static_cast<float>(c.at(at(ch, k)));
    std::fill(q.begin(), q.end(), 0);
    steps[ch] = quantize_weight_channel(w.data(), per, 8, quantizer, q.data());
    for (std::uint32_t k = 0; k < per; ++k) codes[at(ch, k)] = q[k];
  }
  O::TensorPlace p;
  p.storage = O::Storage::kSurfaceInt8;
  p.shape = c.shape;
  p.rows = true;
  p.width = 1, p.height = rows, p.channels = cols;
  p.atom_bytes = atom;
  p.line_stride = atom;
  p.surface_stride = rows * atom;
  p.step = 1.0;  // the codes as they are: the steps are the image's (MatmulQuant)
  const std::uint32_t surfaces = (cols + atom - 1) / atom;
  bytes.assign(std::size_t{surfaces} * rows * atom, 0);
  for (std::uint32_t y = 0; y < rows; ++y) {
    for (std::uint32_t x = 0; x < cols; ++x) {
      bytes[std::size_t{x / atom} * p.surface_stride + std::size_t{y} * atom + x % atom] =
          static_cast<std::uint8_t>(static_cast<std::int8_t>(codes[std::size_t{y} * cols + x]));
    }
  }
  return p;
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
  // --precision mixed: a MatMul or Gemm multiplies INT8 codes (ppu_node.hpp MatmulQuant): its
  // activation operands' calibrated steps (calibrate_matmul_operands), its constant operand per
  // output channel (A's rows, B's columns) as an INT8 surface.
  const bool int8 = options_.precision == NetPrecision::kMixed && !integer_ &&
                    int8_matmul_node(g_, n) && matmul_k(n) <= 131071;
  if (int8) image.int8_matmul.emplace();
  for (std::size_t k = 0; k < n.inputs.size(); ++k) {
    const std::string& in = n.inputs[k];
    O::TensorPlace place;
    if (in.empty()) {
      place.present = false;
    } else if (int8 && k < 2 && g_.is_constant(in)) {
      const bool gemm = n.op_type == "Gemm";
      const auto attr = [&](const char* key) {
        const auto it = n.attributes.find(key);
        return it != n.attributes.end() && it->second.i != 0;
      };
      // The output axis: A's M (Gemm's transA: axis 1), B's N (Gemm's transB: axis 0).
      const int axis = k == 0 ? (gemm && attr("transA") ? 1 : 0) : (gemm && attr("transB") ? 0 : 1);
      std::vector<std::uint8_t> bytes;
      std::vector<double>& steps = k == 0 ? image.int8_matmul->a_steps : image.int8_matmul->b_steps;
      place =
          int8_weight_surface(g_.initializers.at(in), axis, options_.weights, atom(), bytes, steps);
      place.address = constant(fmt::format("{} INT8 constant '{}'", who, in), bytes);
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
      if (int8 && k < 2) {
        const TensorQuant& q = table_.at(in);  // signed 8-bit: step = clip / 127
        (k == 0 ? image.int8_matmul->a_steps : image.int8_matmul->b_steps) = {q.step()};
        prog_.table[in] = q;  // the calibration the product uses (--save-calibration)
      }
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

std::int64_t Builder::matmul_k(const models::graph::Node& n) const {
  const std::string& a = n.inputs.at(0);
  const std::vector<std::int64_t>& s =
      g_.is_constant(a) ? g_.initializers.at(a).shape : plan_.shapes.at(a);
  if (s.empty()) return 1;
  const auto it = n.attributes.find("transA");
  const bool trans_a = n.op_type == "Gemm" && it != n.attributes.end() && it->second.i != 0;
  return trans_a ? s.front() : s.back();
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
