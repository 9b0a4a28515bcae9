#include "firmware/zoo/builder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace octasim::firmware::zoo::detail {
namespace {

void set_int(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INT);
  a->set_i(v);
}

void set_float(onnx::NodeProto& n, const std::string& name, float v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  a->set_f(v);
}

void set_ints(onnx::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (const std::int64_t x : v) a->add_ints(x);
}

void set_value_info(onnx::ValueInfoProto* vi, const std::string& name, const Shape& shape) {
  vi->set_name(name);
  onnx::TypeProto_Tensor* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  for (const std::int64_t d : shape) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

// The output size of a window `kernel` / `stride` over `in` padded by `pad` on both sides.
std::int64_t window_out(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                        bool ceil_mode) {
  const std::int64_t room = in + 2 * pad - kernel;
  if (room < 0) throw std::logic_error("zoo: a window larger than its padded input");
  return (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
}

}  // namespace

ModelBuilder::ModelBuilder(const std::string& name, const std::string& doc, std::uint64_t seed,
                           const Shape& input)
    : graph_(model_.mutable_graph()), input_("input"), rng_(seed) {
  model_.set_ir_version(7);  // ONNX 1.8, the first IR of opset 13
  onnx::OperatorSetIdProto* opset = model_.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  model_.set_producer_name("octasim zoo");
  model_.set_doc_string(doc);
  graph_->set_name(name);
  set_value_info(graph_->add_input(), input_, input);
  shapes_[input_] = input;
}

const Shape& ModelBuilder::shape(const std::string& tensor) const {
  const auto it = shapes_.find(tensor);
  if (it == shapes_.end()) throw std::logic_error("zoo: no tensor '" + tensor + "'");
  return it->second;
}

onnx::NodeProto& ModelBuilder::node(const std::string& op, const std::string& name,
                                    const std::vector<std::string>& inputs, const Shape& out) {
  if (shapes_.count(name) != 0) throw std::logic_error("zoo: tensor '" + name + "' twice");
  onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const std::string& in : inputs) n->add_input(in);
  n->add_output(name);
  shapes_[name] = out;
  return *n;
}

std::string ModelBuilder::tensor(const std::string& name, const Shape& shape,
                                 const std::vector<float>& values) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto_DataType_FLOAT);
  for (const std::int64_t d : shape) t->add_dims(d);
  // raw_data is little-endian whatever the host: the bytes are written one by one.
  std::string raw(values.size() * 4, '\0');
  for (std::size_t k = 0; k < values.size(); ++k) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[k], 4);
    for (int b = 0; b < 4; ++b) raw[4 * k + b] = static_cast<char>((bits >> (8 * b)) & 0xFF);
  }
  t->set_raw_data(std::move(raw));
  return name;
}

std::string ModelBuilder::random_tensor(const std::string& name, const Shape& shape, double scale,
                                        double offset) {
  std::size_t count = 1;
  for (const std::int64_t d : shape) count *= static_cast<std::size_t>(d);
  std::vector<float> values(count);
  for (float& v : values) v = static_cast<float>(offset + scale * double{rng_.symmetric()});
  return tensor(name, shape, values);
}

std::string ModelBuilder::conv(const std::string& x, const std::string& name,
                               const ConvSpec& spec) {
  const Shape& in = shape(x);
  if (spec.group < 1 || in[1] % spec.group != 0 || spec.out % spec.group != 0) {
    throw std::logic_error("zoo: " + name + ": groups do not divide the channels");
  }
  const std::int64_t per_group = in[1] / spec.group;
  const std::int64_t fan_in = per_group * spec.kernel * spec.kernel;
  // U[-a, a) has variance a^2 / 3: a = sqrt(6 / fan_in) gives He's 2 / fan_in.
  std::vector<std::string> inputs = {
      x, random_tensor(name + ".weight", {spec.out, per_group, spec.kernel, spec.kernel},
                       std::sqrt(6.0 / static_cast<double>(fan_in)))};
  if (spec.bias) inputs.push_back(random_tensor(name + ".bias", {spec.out}, 0.01));
  const std::int64_t oh = window_out(in[2], spec.kernel, spec.stride, spec.pad, false);
  const std::int64_t ow = window_out(in[3], spec.kernel, spec.stride, spec.pad, false);
  onnx::NodeProto& n = node("Conv", name, inputs, {in[0], spec.out, oh, ow});
  set_ints(n, "kernel_shape", {spec.kernel, spec.kernel});
  set_ints(n, "strides", {spec.stride, spec.stride});
  set_ints(n, "pads", {spec.pad, spec.pad, spec.pad, spec.pad});
  if (spec.group != 1) set_int(n, "group", spec.group);
  return name;
}

std::string ModelBuilder::batch_norm(const std::string& x, const std::string& name,
                                     float gamma_scale) {
  const Shape& in = shape(x);
  const Shape c = {in[1]};
  const std::vector<std::string> inputs = {
      x, random_tensor(name + ".weight", c, 0.1 * double{gamma_scale}, double{gamma_scale}),
      random_tensor(name + ".bias", c, 0.05), random_tensor(name + ".running_mean", c, 0.05),
      random_tensor(name + ".running_var", c, 0.1, 1.0)};
  onnx::NodeProto& n = node("BatchNormalization", name, inputs, in);
  set_float(n, "epsilon", 1e-5F);
  return name;
}

std::string ModelBuilder::relu(const std::string& x, const std::string& name) {
  node("Relu", name, {x}, shape(x));
  return name;
}

std::string ModelBuilder::relu6(const std::string& x, const std::string& name) {
  // One pair of scalar bounds, shared by every Clip.
  if (shapes_.count("relu6.min") == 0) {
    tensor("relu6.min", {}, {0.0F});
    tensor("relu6.max", {}, {6.0F});
    shapes_["relu6.min"] = shapes_["relu6.max"] = {};
  }
  node("Clip", name, {x, "relu6.min", "relu6.max"}, shape(x));
  return name;
}

std::string ModelBuilder::pooled(const std::string& op, const std::string& x,
                                 const std::string& name, std::int64_t kernel, std::int64_t stride,
                                 std::int64_t pad, bool ceil_mode) {
  const Shape& in = shape(x);
  const Shape out = {in[0], in[1], window_out(in[2], kernel, stride, pad, ceil_mode),
                     window_out(in[3], kernel, stride, pad, ceil_mode)};
  onnx::NodeProto& n = node(op, name, {x}, out);
  set_ints(n, "kernel_shape", {kernel, kernel});
  set_ints(n, "strides", {stride, stride});
  if (pad != 0) set_ints(n, "pads", {pad, pad, pad, pad});
  if (ceil_mode) set_int(n, "ceil_mode", 1);
  return name;
}

std::string ModelBuilder::max_pool(const std::string& x, const std::string& name,
                                   std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                                   bool ceil_mode) {
  return pooled("MaxPool", x, name, kernel, stride, pad, ceil_mode);
}

std::string ModelBuilder::average_pool(const std::string& x, const std::string& name,
                                       std::int64_t kernel, std::int64_t stride) {
  return pooled("AveragePool", x, name, kernel, stride, 0, false);
}

std::string ModelBuilder::global_average_pool(const std::string& x, const std::string& name) {
  const Shape& in = shape(x);
  node("GlobalAveragePool", name, {x}, {in[0], in[1], 1, 1});
  return name;
}

std::string ModelBuilder::lrn(const std::string& x, const std::string& name) {
  onnx::NodeProto& n = node("LRN", name, {x}, shape(x));
  set_int(n, "size", 5);
  set_float(n, "alpha", 1e-4F);
  set_float(n, "beta", 0.75F);
  set_float(n, "bias", 1.0F);
  return name;
}

std::string ModelBuilder::add(const std::string& a, const std::string& b, const std::string& name) {
  if (shape(a) != shape(b)) throw std::logic_error("zoo: " + name + ": operands differ in shape");
  node("Add", name, {a, b}, shape(a));
  return name;
}

std::string ModelBuilder::concat(const std::vector<std::string>& xs, const std::string& name,
                                 std::int64_t axis) {
  Shape out = shape(xs.at(0));
  if (axis < 0 || axis >= static_cast<std::int64_t>(out.size())) {
    throw std::logic_error("zoo: " + name + ": no axis " + std::to_string(axis));
  }
  const auto a = static_cast<std::size_t>(axis);
  out[a] = 0;
  for (const std::string& x : xs) {
    Shape s = shape(x);
    out[a] += s.at(a);
    s[a] = out[a];
    if (s != out) throw std::logic_error("zoo: " + name + ": operands differ off the axis");
  }
  onnx::NodeProto& n = node("Concat", name, xs, out);
  set_int(n, "axis", axis);
  return name;
}

std::string ModelBuilder::flatten(const std::string& x, const std::string& name) {
  const Shape& in = shape(x);
  std::int64_t inner = 1;
  for (std::size_t d = 1; d < in.size(); ++d) inner *= in[d];
  onnx::NodeProto& n = node("Flatten", name, {x}, {in[0], inner});
  set_int(n, "axis", 1);
  return name;
}

std::string ModelBuilder::gemm(const std::string& x, const std::string& name, std::int64_t out) {
  const Shape& in = shape(x);
  if (in.size() != 2) throw std::logic_error("zoo: " + name + ": Gemm of a non-matrix");
  const std::vector<std::string> inputs = {
      x, random_tensor(name + ".weight", {out, in[1]}, std::sqrt(6.0 / static_cast<double>(in[1]))),
      random_tensor(name + ".bias", {out}, 0.01)};
  onnx::NodeProto& n = node("Gemm", name, inputs, {in[0], out});
  set_int(n, "transB", 1);
  return name;
}

std::string ModelBuilder::int64_tensor(const std::string& name, const Shape& shape,
                                       const std::vector<std::int64_t>& values) {
  if (shapes_.count(name) != 0) throw std::logic_error("zoo: tensor '" + name + "' twice");
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto_DataType_INT64);
  for (const std::int64_t d : shape) t->add_dims(d);
  std::string raw(values.size() * 8, '\0');
  for (std::size_t k = 0; k < values.size(); ++k) {
    const auto bits = static_cast<std::uint64_t>(values[k]);
    for (int b = 0; b < 8; ++b) raw[8 * k + b] = static_cast<char>((bits >> (8 * b)) & 0xFF);
  }
  t->set_raw_data(std::move(raw));
  shapes_[name] = shape;
  return name;
}

std::string ModelBuilder::parameter(const std::string& name, const Shape& shape, double scale,
                                    double offset) {
  if (shapes_.count(name) != 0) throw std::logic_error("zoo: tensor '" + name + "' twice");
  random_tensor(name, shape, scale, offset);
  shapes_[name] = shape;
  return name;
}

std::string ModelBuilder::scalar(const std::string& name, float value) {
  if (shapes_.count(name) == 0) {
    tensor(name, {}, {value});
    shapes_[name] = {};
  }
  return name;
}

std::string ModelBuilder::binary(const std::string& op, const std::string& a, const std::string& b,
                                 const std::string& name) {
  // NumPy broadcasting: shapes aligned on the right, a dimension of 1 stretched.
  const Shape& sa = shape(a);
  const Shape& sb = shape(b);
  Shape out(std::max(sa.size(), sb.size()), 1);
  for (std::size_t k = 0; k < out.size(); ++k) {
    const std::int64_t da = k < sa.size() ? sa[sa.size() - 1 - k] : 1;
    const std::int64_t db = k < sb.size() ? sb[sb.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1) {
      throw std::logic_error("zoo: " + name + ": operands do not broadcast");
    }
    out[out.size() - 1 - k] = da == 1 ? db : da;
  }
  node(op, name, {a, b}, out);
  return name;
}

std::string ModelBuilder::linear(const std::string& x, const std::string& name, std::int64_t out) {
  Shape y = shape(x);
  const std::int64_t in = y.back();
  y.back() = out;
  const std::string w =
      random_tensor(name + ".weight", {in, out}, std::sqrt(6.0 / static_cast<double>(in)));
  node("MatMul", name + ".matmul", {x, w}, y);
  return binary("Add", name + ".matmul", parameter(name + ".bias", {out}, 0.01), name);
}

std::string ModelBuilder::matmul(const std::string& a, const std::string& b,
                                 const std::string& name) {
  const Shape& sa = shape(a);
  const Shape& sb = shape(b);
  if (sa.size() < 2 || sa.size() != sb.size() || sa[sa.size() - 1] != sb[sb.size() - 2] ||
      !std::equal(sa.begin(), sa.end() - 2, sb.begin())) {
    throw std::logic_error("zoo: " + name + ": the operands do not multiply");
  }
  Shape out = sa;
  out.back() = sb.back();
  node("MatMul", name, {a, b}, out);
  return name;
}

std::string ModelBuilder::transpose(const std::string& x, const std::string& name,
                                    const std::vector<std::int64_t>& perm) {
  const Shape& in = shape(x);
  if (perm.size() != in.size()) throw std::logic_error("zoo: " + name + ": perm of another rank");
  Shape out;
  for (const std::int64_t p : perm) out.push_back(in.at(static_cast<std::size_t>(p)));
  onnx::NodeProto& n = node("Transpose", name, {x}, out);
  set_ints(n, "perm", perm);
  return name;
}

std::string ModelBuilder::reshape(const std::string& x, const std::string& name, const Shape& to) {
  std::int64_t from = 1, into = 1;
  for (const std::int64_t d : shape(x)) from *= d;
  for (const std::int64_t d : to) into *= d;
  if (from != into) throw std::logic_error("zoo: " + name + ": Reshape changes the size");
  const std::string spec =
      int64_tensor(name + ".shape", {static_cast<std::int64_t>(to.size())}, to);
  node("Reshape", name, {x, spec}, to);
  return name;
}

std::string ModelBuilder::gather(const std::string& x, const std::string& name, std::int64_t axis,
                                 std::int64_t index) {
  Shape out = shape(x);
  if (axis < 0 || axis >= static_cast<std::int64_t>(out.size()) || index < 0 ||
      index >= out[static_cast<std::size_t>(axis)]) {
    throw std::logic_error("zoo: " + name + ": Gather out of range");
  }
  out.erase(out.begin() + axis);
  const std::string indices = int64_tensor(name + ".index", {}, {index});
  onnx::NodeProto& n = node("Gather", name, {x, indices}, out);
  set_int(n, "axis", axis);
  return name;
}

std::string ModelBuilder::softmax(const std::string& x, const std::string& name) {
  onnx::NodeProto& n = node("Softmax", name, {x}, shape(x));
  set_int(n, "axis", -1);
  return name;
}

std::string ModelBuilder::layer_norm(const std::string& x, const std::string& name) {
  const std::int64_t features = shape(x).back();
  const auto mean_of = [this](const std::string& in, const std::string& out) {
    Shape s = shape(in);
    s.back() = 1;
    onnx::NodeProto& n = node("ReduceMean", out, {in}, s);
    set_ints(n, "axes", {-1});  // keepdims = 1 by default
    return out;
  };
  const std::string centred = binary("Sub", x, mean_of(x, name + ".mean"), name + ".sub");
  const std::string squares = binary("Pow", centred, scalar("layer_norm.two", 2.0F), name + ".pow");
  const std::string var = binary("Add", mean_of(squares, name + ".var"),
                                 scalar("layer_norm.eps", 1e-5F), name + ".var_eps");
  const std::string std_dev = name + ".sqrt";
  node("Sqrt", std_dev, {var}, shape(var));
  const std::string normed = binary("Div", centred, std_dev, name + ".div");
  const std::string gamma = parameter(name + ".weight", {features}, 0.1, 1.0);
  const std::string beta = parameter(name + ".bias", {features}, 0.05);
  return binary("Add", binary("Mul", normed, gamma, name + ".mul"), beta, name);
}

std::string ModelBuilder::gelu(const std::string& x, const std::string& name) {
  const std::string scaled =
      binary("Div", x, scalar("gelu.sqrt2", static_cast<float>(std::sqrt(2.0))), name + ".div");
  const std::string erf = name + ".erf";
  node("Erf", erf, {scaled}, shape(scaled));
  const std::string plus_one = binary("Add", erf, scalar("gelu.one", 1.0F), name + ".add");
  return binary("Mul", binary("Mul", x, plus_one, name + ".mul"), scalar("gelu.half", 0.5F), name);
}

onnx::ModelProto ModelBuilder::finish(const std::string& output) {
  set_value_info(graph_->add_output(), output, shape(output));
  return std::move(model_);
}

}  // namespace octasim::firmware::zoo::detail
