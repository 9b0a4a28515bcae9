#include "firmware/onnx/onnx_import.hpp"

#include <cstring>
#include <fstream>
#include <set>
#include <utility>

#include <onnx/onnx_pb.h>

#include "models/io/tensor_file.hpp"
#include "models/numerics/float_format.hpp"

namespace octasim::firmware {
namespace {

namespace g = models::graph;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw OnnxError(path + ": " + what);
}

g::DType dtype_of(int type, const std::string& path, const std::string& what) {
  switch (type) {
    case onnx::TensorProto_DataType_FLOAT:
      return g::DType::kFloat32;
    case onnx::TensorProto_DataType_FLOAT16:
      return g::DType::kFloat16;
    case onnx::TensorProto_DataType_DOUBLE:
      return g::DType::kFloat64;
    case onnx::TensorProto_DataType_INT8:
      return g::DType::kInt8;
    case onnx::TensorProto_DataType_UINT8:
      return g::DType::kUInt8;
    case onnx::TensorProto_DataType_INT32:
      return g::DType::kInt32;
    case onnx::TensorProto_DataType_INT64:
      return g::DType::kInt64;
    case onnx::TensorProto_DataType_BOOL:
      return g::DType::kBool;
    default:
      fail(path, what + " has element type " + std::to_string(type) +
                     " (supported: float, float16, double, int8, uint8, int32, int64, bool)");
  }
}

std::size_t element_bytes(g::DType t) {
  switch (t) {
    case g::DType::kFloat64:
    case g::DType::kInt64:
      return 8;
    case g::DType::kFloat32:
    case g::DType::kInt32:
      return 4;
    case g::DType::kFloat16:
      return 2;
    default:
      return 1;
  }
}

// One element of raw_data (little-endian) as double.
double raw_element(const std::string& raw, std::size_t k, g::DType t) {
  const char* p = raw.data() + k * element_bytes(t);
  switch (t) {
    case g::DType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case g::DType::kFloat64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case g::DType::kFloat16: {
      std::uint16_t h;
      std::memcpy(&h, p, 2);
      return models::fp16_to_float(h);
    }
    case g::DType::kInt8:
      return static_cast<std::int8_t>(*p);
    case g::DType::kUInt8:
    case g::DType::kBool:
      return static_cast<std::uint8_t>(*p);
    case g::DType::kInt32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case g::DType::kInt64: {
      std::int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
  }
  return 0;
}

// Tensors hold at most 2^31 elements (protobuf's repeated fields and messages are smaller).
constexpr std::size_t kMaxTensorElements = std::size_t{1} << 31;

// The values a TensorProto stores in the typed field of `t` (no raw_data).
std::size_t stored_values(const onnx::TensorProto& tp, g::DType t) {
  switch (t) {
    case g::DType::kFloat32:
      return static_cast<std::size_t>(tp.float_data_size());
    case g::DType::kFloat64:
      return static_cast<std::size_t>(tp.double_data_size());
    case g::DType::kInt64:
      return static_cast<std::size_t>(tp.int64_data_size());
    default:  // float16, int8, uint8, int32, bool: int32_data
      return static_cast<std::size_t>(tp.int32_data_size());
  }
}

g::Tensor convert_tensor(const onnx::TensorProto& tp, const std::string& path) {
  const std::string what = "tensor '" + tp.name() + "'";
  if (tp.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    fail(path, what + " keeps its data in an external file (not supported)");
  }
  g::Tensor t;
  t.dtype = dtype_of(tp.data_type(), path, what);
  // The element count, checked against the data the file holds before anything is allocated
  // (a shape of 10^12 elements with no data is an error, not an allocation).
  std::size_t count = 1;
  for (const std::int64_t d : tp.dims()) {
    if (d < 0) fail(path, what + " has a negative dimension");
    t.shape.push_back(d);
    const auto ud = static_cast<std::uint64_t>(d);
    count = ud != 0 && count > kMaxTensorElements / ud ? kMaxTensorElements + 1 : count * ud;
  }
  if (count > kMaxTensorElements) {
    fail(path, what + " has shape " + g::shape_string(t.shape) + ": more than 2^31 elements");
  }
  const std::size_t have = tp.has_raw_data() ? tp.raw_data().size() / element_bytes(t.dtype)
                                             : stored_values(tp, t.dtype);
  if (tp.has_raw_data() ? tp.raw_data().size() != count * element_bytes(t.dtype) : have != count) {
    fail(path, what + " has " +
                   (tp.has_raw_data() ? std::to_string(tp.raw_data().size()) + " bytes of data"
                                      : std::to_string(have) + " values") +
                   " for shape " + g::shape_string(t.shape) + " (" + std::to_string(count) + " " +
                   g::dtype_name(t.dtype) + " elements)");
  }
  const bool fl = g::is_float(t.dtype);
  (fl ? t.f.resize(count) : t.i.resize(count));
  const auto store = [&](std::size_t k, double v) {
    if (fl) {
      t.f[k] = static_cast<float>(v);
    } else {
      t.i[k] = static_cast<std::int64_t>(v);
    }
  };
  if (tp.has_raw_data()) {
    for (std::size_t k = 0; k < count; ++k) store(k, raw_element(tp.raw_data(), k, t.dtype));
    if (t.dtype == g::DType::kInt64) {  // exact beyond 2^53
      for (std::size_t k = 0; k < count; ++k) {
        std::memcpy(&t.i[k], tp.raw_data().data() + 8 * k, 8);
      }
    }
    return t;
  }
  switch (t.dtype) {  // `count` values, checked above
    case g::DType::kFloat32:
      for (std::size_t k = 0; k < count; ++k) t.f[k] = tp.float_data(static_cast<int>(k));
      break;
    case g::DType::kFloat64:
      for (std::size_t k = 0; k < count; ++k) {
        t.f[k] = static_cast<float>(tp.double_data(static_cast<int>(k)));
      }
      break;
    case g::DType::kInt64:
      for (std::size_t k = 0; k < count; ++k) t.i[k] = tp.int64_data(static_cast<int>(k));
      break;
    case g::DType::kFloat16:
      for (std::size_t k = 0; k < count; ++k) {
        t.f[k] =
            models::fp16_to_float(static_cast<std::uint16_t>(tp.int32_data(static_cast<int>(k))));
      }
      break;
    default:  // int8, uint8, int32, bool: int32_data
      for (std::size_t k = 0; k < count; ++k) t.i[k] = tp.int32_data(static_cast<int>(k));
      break;
  }
  return t;
}

g::ValueInfo convert_value_info(const onnx::ValueInfoProto& vi, const std::string& path) {
  g::ValueInfo v;
  v.name = vi.name();
  if (!vi.type().has_tensor_type()) fail(path, "graph value '" + v.name + "' is not a tensor");
  const onnx::TypeProto_Tensor& tt = vi.type().tensor_type();
  v.dtype = dtype_of(tt.elem_type(), path, "graph value '" + v.name + "'");
  for (const onnx::TensorShapeProto_Dimension& d : tt.shape().dim()) {
    v.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  return v;
}

g::Attribute convert_attribute(const onnx::AttributeProto& a, const std::string& path,
                               const std::string& node) {
  g::Attribute out;
  switch (a.type()) {
    case onnx::AttributeProto_AttributeType_INT:
      out.kind = g::Attribute::Kind::kInt;
      out.i = a.i();
      break;
    case onnx::AttributeProto_AttributeType_FLOAT:
      out.kind = g::Attribute::Kind::kFloat;
      out.f = a.f();
      break;
    case onnx::AttributeProto_AttributeType_STRING:
      out.kind = g::Attribute::Kind::kString;
      out.s = a.s();
      break;
    case onnx::AttributeProto_AttributeType_INTS:
      out.kind = g::Attribute::Kind::kInts;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto_AttributeType_FLOATS:
      out.kind = g::Attribute::Kind::kFloats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto_AttributeType_TENSOR:
      out.kind = g::Attribute::Kind::kTensor;
      out.t = convert_tensor(a.t(), path);
      break;
    default:
      fail(path, node + ": attribute '" + a.name() + "' is of an unsupported kind (" +
                     std::to_string(a.type()) + ")");
  }
  return out;
}

template <typename Message>
Message parse_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open");
  Message m;
  if (!m.ParseFromIstream(&in)) fail(path, std::string("not a valid ") + what);
  return m;
}

}  // namespace

g::Graph load_onnx(const std::string& path) {
  const auto model = parse_file<onnx::ModelProto>(path, "ONNX model (binary ModelProto)");
  g::Graph graph;
  for (const onnx::OperatorSetIdProto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") graph.opset = op.version();
  }
  if (graph.opset < kMinOpset || graph.opset > kMaxOpset) {
    fail(path, "opset " + std::to_string(graph.opset) + " is outside the supported " +
                   std::to_string(kMinOpset) + ".." + std::to_string(kMaxOpset));
  }
  const onnx::GraphProto& gp = model.graph();
  graph.name = gp.name();
  if (gp.sparse_initializer_size() > 0) fail(path, "sparse initializers are not supported");
  for (const onnx::TensorProto& t : gp.initializer()) {
    graph.initializers[t.name()] = convert_tensor(t, path);
  }
  for (const onnx::ValueInfoProto& vi : gp.input()) {
    if (graph.initializers.count(vi.name()) == 0) {
      graph.inputs.push_back(convert_value_info(vi, path));
    }
  }
  for (const onnx::ValueInfoProto& vi : gp.output()) {
    graph.outputs.push_back(convert_value_info(vi, path));
  }
  int index = 0;
  for (const onnx::NodeProto& np : gp.node()) {
    g::Node n;
    n.name = np.name().empty() ? np.op_type() + "_" + std::to_string(index) : np.name();
    n.op_type = np.op_type();
    ++index;
    if (!np.domain().empty() && np.domain() != "ai.onnx") {
      fail(path, n.label() + ": operator domain '" + np.domain() + "' is not supported");
    }
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    for (const onnx::AttributeProto& a : np.attribute()) {
      static const std::set<std::string> kLegacy = {"consumed_inputs", "is_test", "spatial",
                                                    "broadcast"};
      if (kLegacy.count(a.name()) != 0) {
        fail(path, n.label() + ": attribute '" + a.name() +
                       "' of opsets before 7 is not supported (re-export the model at opset 11+)");
      }
      n.attributes[a.name()] = convert_attribute(a, path, n.label());
    }
    if (n.op_type == "Constant") {
      const auto it = n.attributes.find("value");
      if (it == n.attributes.end() || it->second.kind != g::Attribute::Kind::kTensor ||
          n.outputs.size() != 1) {
        fail(path, n.label() + ": only a Constant with a tensor 'value' is supported");
      }
      graph.initializers[n.outputs[0]] = it->second.t;
      continue;
    }
    graph.nodes.push_back(std::move(n));
  }
  return graph;
}

g::Tensor read_tensor_pb(const std::string& path) {
  return convert_tensor(parse_file<onnx::TensorProto>(path, "ONNX TensorProto"), path);
}

g::Tensor read_tensor(const std::string& path) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0) {
    models::Tensor npy;
    try {
      npy = models::read_npy(path);
    } catch (const models::TensorFileError& e) {
      throw OnnxError(e.what());
    }
    std::vector<std::int64_t> shape(npy.shape.begin(), npy.shape.end());
    return g::Tensor::floats(std::move(shape), std::move(npy.values));
  }
  return read_tensor_pb(path);
}

}  // namespace octasim::firmware
