#include "models/ops/ppu_node.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>

#include "models/graph/op_registry.hpp"
#include "models/numerics/float_format.hpp"

namespace octasim::models::ops {

namespace {

using graph::Attribute;
using graph::DType;
using graph::GraphError;
using graph::Tensor;

constexpr std::uint32_t kMaxString = 4096;
constexpr std::uint32_t kMaxAttributes = 64;
constexpr std::uint32_t kMaxInputs = 16;
constexpr std::uint32_t kMaxOutputs = 16;
constexpr std::uint32_t kMaxRank = 8;
constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 26;
constexpr std::uint32_t kMaxCube = std::uint32_t{1} << 24;  // width, height, channels
// A surface's span (strides included): keeps run_node's buffers and the simulator's reads bounded.
constexpr std::uint64_t kMaxSurfaceBytes = std::uint64_t{1} << 30;
constexpr std::uint16_t kFp16Nan = 0x7e00;
constexpr std::uint32_t kMatmulQuantTag = 0x384d4d51;  // "QMM8"
// The longest sum of INT8 products that cannot overflow INT32: |q| <= 128, 2^31 / 2^14 - 1.
constexpr std::int64_t kMaxInt8K = 131071;

// ---- Encoding ---------------------------------------------------------------------------------

class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(v); }
  void u32(std::uint32_t v) { le(v, 4); }
  void u64(std::uint64_t v) { le(v, 8); }
  void i64(std::int64_t v) { le(static_cast<std::uint64_t>(v), 8); }
  void f32(float v) {
    std::uint32_t b = 0;
    std::memcpy(&b, &v, 4);
    u32(b);
  }
  void f64(double v) {
    std::uint64_t b = 0;
    std::memcpy(&b, &v, 8);
    u64(b);
  }
  void count(std::size_t n, std::uint32_t limit, const char* what) {
    if (n > limit) {
      throw NodeImageError(std::string("encode_node: ") + what + " " + std::to_string(n) +
                           " exceeds " + std::to_string(limit));
    }
    u32(static_cast<std::uint32_t>(n));
  }
  void str(const std::string& s, const char* what) {
    count(s.size(), kMaxString, what);
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<std::uint8_t> take() { return std::move(out_); }

 private:
  void le(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  std::vector<std::uint8_t> out_;
};

void encode_place(Writer& w, const TensorPlace& p) {
  w.u8(static_cast<std::uint8_t>(p.storage));
  w.u64(p.address);
  w.count(p.shape.size(), kMaxRank, "rank");
  for (const std::int64_t d : p.shape) w.i64(d);
  if (p.storage == Storage::kDenseTyped) w.u8(static_cast<std::uint8_t>(p.dtype));
  if (!p.surface()) return;
  for (const std::uint32_t v :
       {p.width, p.height, p.channels, p.line_stride, p.surface_stride, p.atom_bytes}) {
    w.u32(v);
  }
  w.u8(p.rows ? 1 : 0);
  w.count(p.channel_map.size(), std::numeric_limits<std::uint32_t>::max(), "channel map");
  for (const std::uint32_t c : p.channel_map) w.u32(c);
  w.f64(p.step);
  if (p.storage == Storage::kSurfaceInt16) w.u8(static_cast<std::uint8_t>(p.dtype));
}

// ---- Decoding ---------------------------------------------------------------------------------

class Reader {
 public:
  Reader(const std::uint8_t* bytes, std::size_t size) : p_(bytes), size_(size) {}

  [[nodiscard]] std::size_t offset() const { return off_; }
  [[nodiscard]] std::size_t left() const { return size_ - off_; }
  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw NodeImageError("node image: " + what + " at byte " + std::to_string(at));
  }
  std::uint64_t le(int bytes, const char* field) {
    if (left() < static_cast<std::size_t>(bytes)) {
      fail(off_, std::string(field) + ": the image ends (" + std::to_string(left()) +
                     " bytes left, " + std::to_string(bytes) + " needed)");
    }
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t{p_[off_ + i]} << (8 * i);
    off_ += static_cast<std::size_t>(bytes);
    return v;
  }
  std::uint8_t u8(const char* field) { return static_cast<std::uint8_t>(le(1, field)); }
  std::uint32_t u32(const char* field) { return static_cast<std::uint32_t>(le(4, field)); }
  std::uint64_t u64(const char* field) { return le(8, field); }
  std::int64_t i64(const char* field) { return static_cast<std::int64_t>(le(8, field)); }
  float f32(const char* field) {
    const auto b = static_cast<std::uint32_t>(le(4, field));
    float v = 0.0F;
    std::memcpy(&v, &b, 4);
    return v;
  }
  double f64(const char* field) {
    const std::uint64_t b = le(8, field);
    double v = 0.0;
    std::memcpy(&v, &b, 8);
    return v;
  }
  // A count of items of at least `item_bytes` each: within `limit` and within the image (so no
  // allocation is larger than the image).
  std::uint32_t count(const char* field, std::uint32_t limit, std::size_t item_bytes) {
    const std::size_t at = off_;
    const std::uint32_t n = u32(field);
    if (n > limit) {
      fail(at, std::string(field) + " " + std::to_string(n) + " exceeds " + std::to_string(limit));
    }
    if (item_bytes > 0 && std::uint64_t{n} * item_bytes > left()) {
      fail(at, std::string(field) + " " + std::to_string(n) + " runs past the end of the image");
    }
    return n;
  }
  std::string str(const char* field) {
    const std::uint32_t n = count(field, kMaxString, 1);
    std::string s(reinterpret_cast<const char*>(p_ + off_), n);
    off_ += n;
    return s;
  }

 private:
  const std::uint8_t* p_;
  std::size_t size_;
  std::size_t off_ = 0;
};

bool valid_dtype(std::uint8_t t) {
  return t <= static_cast<std::uint8_t>(DType::kBool);
}

Tensor decode_tensor(Reader& r) {
  Tensor t;
  const std::size_t at = r.offset();
  const std::uint8_t dtype = r.u8("tensor dtype");
  if (!valid_dtype(dtype)) r.fail(at, "tensor dtype " + std::to_string(dtype));
  t.dtype = static_cast<DType>(dtype);
  const std::uint32_t rank = r.count("tensor rank", kMaxRank, 8);
  std::uint64_t elements = 1;
  for (std::uint32_t k = 0; k < rank; ++k) {
    const std::size_t dim_at = r.offset();
    const std::int64_t d = r.i64("tensor dim");
    if (d < 0 || d > kMaxDim) r.fail(dim_at, "tensor dim " + std::to_string(d) + " (0 .. 2^24)");
    t.shape.push_back(d);
    elements *= static_cast<std::uint64_t>(d);
    if (elements > kMaxElements) r.fail(dim_at, "tensor elements beyond 2^26");
  }
  const bool fl = graph::is_float(t.dtype);
  const std::uint64_t bytes = elements * (fl ? 4 : 8);
  if (bytes > r.left()) {
    r.fail(r.offset(),
           "tensor of " + std::to_string(elements) + " elements runs past the end of the image");
  }
  if (fl) {
    t.f.resize(elements);
    for (float& v : t.f) v = r.f32("tensor element");
  } else {
    t.i.resize(elements);
    for (std::int64_t& v : t.i) v = r.i64("tensor element");
  }
  return t;
}

Attribute decode_attribute(Reader& r) {
  Attribute a;
  const std::size_t at = r.offset();
  const std::uint8_t kind = r.u8("attribute kind");
  if (kind > static_cast<std::uint8_t>(Attribute::Kind::kTensor)) {
    r.fail(at, "attribute kind " + std::to_string(kind) + " (0 .. 5)");
  }
  a.kind = static_cast<Attribute::Kind>(kind);
  switch (a.kind) {
    case Attribute::Kind::kInt:
      a.i = r.i64("int attribute");
      break;
    case Attribute::Kind::kFloat:
      a.f = r.f32("float attribute");
      break;
    case Attribute::Kind::kString:
      a.s = r.str("string attribute");
      break;
    case Attribute::Kind::kInts: {
      const std::uint32_t n = r.count("ints attribute count", kMaxElements, 8);
      a.ints.resize(n);
      for (std::int64_t& v : a.ints) v = r.i64("ints attribute");
      break;
    }
    case Attribute::Kind::kFloats: {
      const std::uint32_t n = r.count("floats attribute count", kMaxElements, 4);
      a.floats.resize(n);
      for (float& v : a.floats) v = r.f32("floats attribute");
      break;
    }
    case Attribute::Kind::kTensor:
      a.t = decode_tensor(r);
      break;
  }
  return a;
}

bool power_of_two(std::uint32_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

unsigned element_bytes(Storage s) {
  switch (s) {
    case Storage::kSurfaceFp16:
      return 2;
    case Storage::kSurfaceInt8:
      return 1;
    case Storage::kDenseFp32:
      return 4;
    case Storage::kDenseInt64:
    case Storage::kDenseTyped:
      return 8;
    case Storage::kSurfaceInt16:
      return 2;
  }
  return 1;
}

std::uint64_t elements_of(const std::vector<std::int64_t>& shape) {
  std::uint64_t n = 1;
  for (const std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

std::uint32_t surfaces(const TensorPlace& p) {
  const std::uint32_t cpa = p.atom_bytes / element_bytes(p.storage);
  return (p.channels + cpa - 1) / cpa;
}

// The logical channels of a surface place (the map's entries, or the cube's channels).
std::uint64_t logical_channels(const TensorPlace& p) {
  return p.channel_map.empty() ? p.channels : p.channel_map.size();
}

TensorPlace decode_place(Reader& r) {
  TensorPlace p;
  const std::size_t at = r.offset();
  const std::uint8_t storage = r.u8("storage");
  if (storage > static_cast<std::uint8_t>(Storage::kDenseTyped)) {
    r.fail(at, "storage " + std::to_string(storage) + " (0 .. 5)");
  }
  p.storage = static_cast<Storage>(storage);
  p.address = r.u64("address");
  const std::uint32_t rank = r.count("rank", kMaxRank, 8);
  std::uint64_t elements = 1;
  for (std::uint32_t k = 0; k < rank; ++k) {
    const std::size_t dim_at = r.offset();
    const std::int64_t d = r.i64("dim");
    // A dense constant may be empty (ReduceSum's axes = []: every axis); a surface may not.
    const std::int64_t least = p.surface() ? 1 : 0;
    if (d < least || d > kMaxDim) {
      r.fail(dim_at, "dim " + std::to_string(d) + (p.surface() ? " (1 .. 2^24)" : " (0 .. 2^24)"));
    }
    p.shape.push_back(d);
    elements *= static_cast<std::uint64_t>(d);
    if (elements > kMaxElements) r.fail(dim_at, "elements beyond 2^26");
  }
  if (p.storage == Storage::kDenseTyped) {
    const std::size_t dtype_at = r.offset();
    const std::uint8_t dtype = r.u8("dense dtype");
    if (!valid_dtype(dtype) || graph::is_float(static_cast<DType>(dtype)) ||
        static_cast<DType>(dtype) == DType::kInt64) {
      r.fail(dtype_at, "dense dtype " + std::to_string(dtype) +
                           " (an integer type but int64, or bool: int64 is storage 3)");
    }
    p.dtype = static_cast<DType>(dtype);
  }
  if (p.surface()) {
    const std::size_t cube_at = r.offset();
    p.width = r.u32("width");
    p.height = r.u32("height");
    p.channels = r.u32("channels");
    for (const auto& [name, v] : {std::pair<const char*, std::uint32_t>{"width", p.width},
                                  {"height", p.height},
                                  {"channels", p.channels}}) {
      if (v < 1 || v > kMaxCube) {
        r.fail(cube_at, std::string("surface ") + name + " " + std::to_string(v) + " (1 .. 2^24)");
      }
    }
    const std::size_t strides_at = r.offset();
    p.line_stride = r.u32("line stride");
    p.surface_stride = r.u32("surface stride");
    const std::size_t atom_at = r.offset();
    p.atom_bytes = r.u32("atom bytes");
    const unsigned eb = element_bytes(p.storage);
    if (!power_of_two(p.atom_bytes) || p.atom_bytes < eb || p.atom_bytes > 128) {
      r.fail(atom_at, "atom of " + std::to_string(p.atom_bytes) + " bytes (a power of two, " +
                          std::to_string(eb) + " .. 128)");
    }
    const std::uint64_t line = std::uint64_t{p.width} * p.atom_bytes;
    if (p.height > 1 && p.line_stride < line) {
      r.fail(strides_at, "line stride " + std::to_string(p.line_stride) + " below a line of " +
                             std::to_string(line) + " bytes");
    }
    const std::uint64_t plane = std::uint64_t{p.height - 1} * p.line_stride + line;
    if (surfaces(p) > 1 && p.surface_stride < plane) {
      r.fail(strides_at + 4, "surface stride " + std::to_string(p.surface_stride) +
                                 " below a surface of " + std::to_string(plane) + " bytes");
    }
    const std::size_t rows_at = r.offset();
    const std::uint8_t rows = r.u8("rows");
    if (rows > 1) r.fail(rows_at, "rows " + std::to_string(rows) + " (0 or 1)");
    p.rows = rows == 1;
    const std::size_t map_at = r.offset();
    const std::uint32_t entries = r.count("channel map", kMaxCube, 4);
    p.channel_map.resize(entries);
    for (std::uint32_t& c : p.channel_map) {
      const std::size_t c_at = r.offset();
      c = r.u32("channel map entry");
      if (c >= p.channels) {
        r.fail(c_at, "channel map entry " + std::to_string(c) + " beyond the surface's " +
                         std::to_string(p.channels) + " channels");
      }
    }
    const std::size_t step_at = r.offset();
    p.step = r.f64("step");
    if (p.storage == Storage::kSurfaceInt8 && !(std::isfinite(p.step) && p.step > 0.0)) {
      r.fail(step_at, "INT8 step " + std::to_string(p.step) + " (finite, > 0)");
    }
    if (p.storage == Storage::kSurfaceInt16) {
      // The codes are the values: step 1, one encoding per image.
      if (p.step != 1.0) r.fail(step_at, "INT16 step " + std::to_string(p.step) + " (must be 1)");
      const std::size_t dtype_at = r.offset();
      const std::uint8_t dtype = r.u8("INT16 dtype");
      if (!valid_dtype(dtype) || graph::is_float(static_cast<DType>(dtype))) {
        r.fail(dtype_at, "INT16 dtype " + std::to_string(dtype) + " (an integer type or bool)");
      }
      p.dtype = static_cast<DType>(dtype);
    }
    // The cube holds the shape: elements = C * H * W (rows: H * C with W = 1).
    const std::uint64_t lc = logical_channels(p);
    if (p.rows && p.width != 1)
      r.fail(cube_at, "a rows surface of width " + std::to_string(p.width) + " (must be 1)");
    const std::uint64_t held = lc * p.height * p.width;
    if (held != elements) {
      r.fail(entries > 0 ? map_at : cube_at,
             "the surface (" + std::to_string(lc) + " channels x " + std::to_string(p.height) +
                 " x " + std::to_string(p.width) + ") does not hold the shape's " +
                 std::to_string(elements) + " elements");
    }
    const std::uint64_t span = place_bytes(p);
    if (span > kMaxSurfaceBytes) {
      r.fail(strides_at, "the surface spans " + std::to_string(span) + " bytes, more than 2^30");
    }
  }
  if (p.address > std::numeric_limits<std::uint64_t>::max() - place_bytes(p)) {
    r.fail(at + 1, "the tensor runs past the end of the address space");
  }
  return p;
}

// The INT8 matrix product's trailer (after the outputs), checked against the image it ends.
MatmulQuant decode_matmul_quant(Reader& r, const NodeImage& image) {
  const std::size_t at = r.offset();
  if (const std::uint32_t tag = r.u32("INT8 matmul tag"); tag != kMatmulQuantTag) {
    r.fail(at, "INT8 matmul tag " + std::to_string(tag) + " (expected 'QMM8' or the image's end)");
  }
  if (image.op_type != "MatMul" && image.op_type != "Gemm") {
    r.fail(at, "an INT8 matrix product of a " + image.op_type + " node (MatMul or Gemm)");
  }
  if (image.inputs.size() < 2) r.fail(at, "an INT8 matrix product of fewer than 2 inputs");
  for (std::size_t k = 0; k < 2; ++k) {
    const TensorPlace& p = image.inputs[k];
    if (!p.present || p.storage == Storage::kDenseInt64) {
      r.fail(at, "INT8 matrix product: input " + std::to_string(k) + " is " +
                     (p.present ? "INT64" : "absent"));
    }
    if (p.storage == Storage::kSurfaceInt8 && p.step != 1.0) {
      r.fail(at, "INT8 matrix product: input " + std::to_string(k) +
                     " is an INT8 surface of step " + std::to_string(p.step) +
                     " (1: its steps are the trailer's)");
    }
  }
  if (image.outputs.size() != 1 || image.outputs[0].storage != Storage::kSurfaceFp16) {
    r.fail(at, "INT8 matrix product: its one output must be an FP16 surface");
  }
  MatmulQuant q;
  for (std::vector<double>* steps : {&q.a_steps, &q.b_steps}) {
    const std::uint32_t n = r.count("INT8 matmul steps", kMaxCube, 8);
    if (n == 0) r.fail(r.offset() - 4, "INT8 matmul steps 0 (1 .. 2^24)");
    steps->resize(n);
    for (double& v : *steps) {
      const std::size_t v_at = r.offset();
      v = r.f64("INT8 matmul step");
      if (!(std::isfinite(v) && v > 0.0)) {
        r.fail(v_at, "INT8 matmul step " + std::to_string(v) + " (finite, > 0)");
      }
    }
  }
  return q;
}

// ---- Tensors in memory ------------------------------------------------------------------------

// Where ONNX element i of a surface lives in read_surface's packed atoms (one run of W atoms per
// surface line, surface line l = s * H + y at l * W * atom_bytes: the stride gaps left out).
std::uint64_t packed_offset(const TensorPlace& p, std::uint64_t i) {
  std::uint64_t c = 0, y = 0, x = 0;
  const std::uint64_t lc = logical_channels(p);
  if (p.rows) {
    y = i / lc, c = i % lc;
  } else {
    const std::uint64_t hw = std::uint64_t{p.height} * p.width;
    c = i / hw, y = i % hw / p.width, x = i % p.width;
  }
  const std::uint64_t pc = p.channel_map.empty() ? c : p.channel_map[c];
  const unsigned eb = element_bytes(p.storage);
  const std::uint64_t cpa = p.atom_bytes / eb;
  return ((pc / cpa * p.height + y) * p.width + x) * p.atom_bytes + pc % cpa * eb;
}

template <typename F>
void for_each_run(const TensorPlace& p, F&& f) {
  const std::uint64_t run = std::uint64_t{p.width} * p.atom_bytes;
  for (std::uint32_t s = 0; s < surfaces(p); ++s) {
    for (std::uint32_t y = 0; y < p.height; ++y) {
      const std::uint64_t off =
          std::uint64_t{s} * p.surface_stride + std::uint64_t{y} * p.line_stride;
      f(off, (std::uint64_t{s} * p.height + y) * run, run);
    }
  }
}

std::vector<std::uint8_t> read_surface(const TensorPlace& p, const Memory& mem) {
  std::vector<std::uint8_t> b(std::uint64_t{surfaces(p)} * p.height * p.width * p.atom_bytes);
  for_each_run(p, [&](std::uint64_t off, std::uint64_t packed, std::uint64_t run) {
    mem.read(p.address + off, b.data() + packed, run);
  });
  return b;
}

void write_surface(const TensorPlace& p, const std::vector<std::uint8_t>& b, Memory& mem) {
  for_each_run(p, [&](std::uint64_t off, std::uint64_t packed, std::uint64_t run) {
    mem.write(p.address + off, b.data() + packed, run);
  });
}

Tensor read_tensor(const TensorPlace& p, const Memory& mem) {
  const std::uint64_t n = elements_of(p.shape);
  Tensor t;
  t.shape = p.shape;
  switch (p.storage) {
    case Storage::kSurfaceFp16:
    case Storage::kSurfaceInt8: {
      const std::vector<std::uint8_t> b = read_surface(p, mem);
      t.dtype = DType::kFloat32;
      t.f.resize(n);
      const auto step = static_cast<float>(p.step);
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t k = packed_offset(p, i);
        if (p.storage == Storage::kSurfaceFp16) {
          t.f[i] = fp16_to_float(static_cast<std::uint16_t>(b[k] | b[k + 1] << 8));
        } else {
          t.f[i] = static_cast<float>(static_cast<std::int8_t>(b[k])) * step;
        }
      }
      break;
    }
    case Storage::kSurfaceInt16: {
      const std::vector<std::uint8_t> b = read_surface(p, mem);
      t.dtype = p.dtype;
      t.i.resize(n);
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t k = packed_offset(p, i);
        const auto code =
            static_cast<std::int16_t>(static_cast<std::uint16_t>(b[k] | b[k + 1] << 8));
        t.i[i] = p.dtype == DType::kBool ? (code != 0 ? 1 : 0) : code;
      }
      break;
    }
    case Storage::kDenseFp32: {
      t.dtype = DType::kFloat32;
      t.f.resize(n);
      if (n == 0) break;  // an empty constant (Resize's roi = []): nothing to read
      std::vector<std::uint8_t> b(n * 4);
      mem.read(p.address, b.data(), b.size());
      std::memcpy(t.f.data(), b.data(), b.size());
      break;
    }
    case Storage::kDenseInt64:
    case Storage::kDenseTyped: {
      t.dtype = p.storage == Storage::kDenseTyped ? p.dtype : DType::kInt64;
      t.i.resize(n);
      if (n == 0) break;  // ReduceSum's axes = []
      std::vector<std::uint8_t> b(n * 8);
      mem.read(p.address, b.data(), b.size());
      std::memcpy(t.i.data(), b.data(), b.size());
      break;
    }
  }
  return t;
}

std::uint8_t int8_code(double v, double step) {
  if (std::isnan(v)) return 0;
  const double q = std::round(v / step);  // half away from zero
  return static_cast<std::uint8_t>(static_cast<std::int8_t>(std::clamp(q, -128.0, 127.0)));
}

// A surface's elements (ONNX's C order), element i the value value(i) (a double).
template <typename F>
void write_surface_values(const TensorPlace& p, F&& value, Memory& mem) {
  const std::uint64_t n = elements_of(p.shape);
  // Without a map every lane of the atoms is the tensor's or padding (zero); with one the
  // lanes it does not name keep their bytes.
  std::vector<std::uint8_t> b =
      p.channel_map.empty() ? std::vector<std::uint8_t>(
                                  std::uint64_t{surfaces(p)} * p.height * p.width * p.atom_bytes, 0)
                            : read_surface(p, mem);
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t k = packed_offset(p, i);
    const double v = value(i);
    if (p.storage == Storage::kSurfaceFp16) {
      const std::uint16_t h = std::isnan(v) ? kFp16Nan : fp16_from_double(v);
      b[k] = static_cast<std::uint8_t>(h), b[k + 1] = static_cast<std::uint8_t>(h >> 8);
    } else if (p.storage == Storage::kSurfaceInt16) {
      // An integer network's exact values (integers: a double holds them exactly), saturated.
      const auto code =
          static_cast<std::uint16_t>(static_cast<std::int16_t>(std::clamp(v, -32768.0, 32767.0)));
      b[k] = static_cast<std::uint8_t>(code), b[k + 1] = static_cast<std::uint8_t>(code >> 8);
    } else {
      b[k] = int8_code(v, p.step);
    }
  }
  write_surface(p, b, mem);
}

void write_tensor(const TensorPlace& p, const Tensor& t, Memory& mem) {
  const std::uint64_t n = elements_of(p.shape);
  switch (p.storage) {
    case Storage::kSurfaceFp16:
    case Storage::kSurfaceInt8:
    case Storage::kSurfaceInt16:
      if (p.storage == Storage::kSurfaceInt16 && graph::is_float(t.dtype)) {
        throw GraphError("a " + std::string(graph::dtype_name(t.dtype)) +
                         " output in an INT16 surface (an integer network's values)");
      }
      write_surface_values(
          p, [&](std::uint64_t i) { return t.at(i); }, mem);
      break;
    case Storage::kDenseFp32: {
      std::vector<float> f(n);
      for (std::uint64_t i = 0; i < n; ++i) f[i] = static_cast<float>(t.at(i));
      mem.write(p.address, reinterpret_cast<const std::uint8_t*>(f.data()), n * 4);
      break;
    }
    case Storage::kDenseInt64:
    case Storage::kDenseTyped: {
      if (graph::is_float(t.dtype)) {
        throw GraphError("a " + std::string(graph::dtype_name(t.dtype)) +
                         " output in a dense INT64 place");
      }
      mem.write(p.address, reinterpret_cast<const std::uint8_t*>(t.i.data()), n * 8);
      break;
    }
  }
}

graph::Node make_node(const NodeImage& image) {
  graph::Node node;
  node.name = image.name;
  node.op_type = image.op_type;
  node.attributes = image.attributes;
  for (std::size_t k = 0; k < image.inputs.size(); ++k) {
    node.inputs.push_back(image.inputs[k].present ? "in" + std::to_string(k) : std::string());
  }
  for (std::size_t k = 0; k < image.outputs.size(); ++k) {
    node.outputs.push_back("out" + std::to_string(k));
  }
  return node;
}

// FP32 operations per output element besides the MACs, by operator: 1 for an add, a compare, a
// select or a copy; a transcendental costs what its polynomial and range reduction take on the
// FMA lanes (the SFU is not modelled). Operators not listed cost 1.
std::uint64_t op_cost_per_element(std::string_view op) {
  struct Entry {
    const char* op;
    std::uint64_t ops;
  };
  static constexpr Entry kTable[] = {
      {"Sub", 1},
      {"Add", 1},
      {"Mul", 1},
      {"Max", 1},
      {"Relu", 1},
      {"Neg", 1},
      {"Abs", 1},
      {"Clip", 2},
      {"LeakyRelu", 2},
      {"PRelu", 2},
      {"HardSigmoid", 3},
      {"HardSwish", 4},
      {"BatchNormalization", 2},
      {"QuantizeLinear", 3},
      {"DequantizeLinear", 2},
      {"Div", 4},
      {"Reciprocal", 4},
      {"Sqrt", 4},
      {"Exp", 6},
      {"Log", 6},
      {"Sigmoid", 8},
      {"Tanh", 10},
      {"Erf", 10},
      {"Pow", 12},
      {"Gelu", 14},
      {"Softmax", 9},  // max 1, exp and sum 6, divide 2 (sim/ppu/softmax_kernel.cpp)
  };
  for (const Entry& e : kTable) {
    if (op == e.op) return e.ops;
  }
  return 1;
}

// ---- The INT8 matrix product ------------------------------------------------------------------

std::int64_t int_attribute(const NodeImage& image, const char* key, std::int64_t fallback) {
  const auto it = image.attributes.find(key);
  return it == image.attributes.end() ? fallback : it->second.i;
}

double float_attribute(const NodeImage& image, const char* key, double fallback) {
  const auto it = image.attributes.find(key);
  return it == image.attributes.end() ? fallback : double{it->second.f};
}

// Operand `t` (read from `p`) as codes, each element's step steps[channel] (one step: all).
// The channel of element i is (i / inner) % count: the index of its output axis.
std::vector<std::int32_t> operand_codes(const TensorPlace& p, const Tensor& t,
                                        const std::vector<double>& steps, std::int64_t axis,
                                        const std::string& who) {
  const std::vector<std::int64_t>& shape = t.shape;
  std::uint64_t inner = 1, count = 1;
  if (axis >= 0) {
    count = static_cast<std::uint64_t>(shape[static_cast<std::size_t>(axis)]);
    for (std::size_t k = static_cast<std::size_t>(axis) + 1; k < shape.size(); ++k) {
      inner *= static_cast<std::uint64_t>(shape[k]);
    }
  }
  if (steps.size() != 1 && steps.size() != count) {
    throw GraphError(who + ": " + std::to_string(steps.size()) + " steps for an output axis of " +
                     std::to_string(count) + " (1 or one each)");
  }
  const std::size_t n = t.f.size();
  std::vector<std::int32_t> q(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = t.f[i];
    if (p.storage == Storage::kSurfaceInt8) {  // codes (step 1): as they are
      q[i] = static_cast<std::int32_t>(x);
      continue;
    }
    if (std::isnan(x)) continue;
    const double s = steps.size() == 1 ? steps[0] : steps[(i / inner) % count];
    q[i] = static_cast<std::int32_t>(std::clamp(std::round(x / s), -127.0, 127.0));
  }
  return q;
}

void run_int8_matmul(const NodeImage& image, Memory& mem) {
  const MatmulQuant& mq = *image.int8_matmul;
  const std::string who = make_node(image).label() + " (INT8)";
  const bool gemm = image.op_type == "Gemm";
  const Tensor a = read_tensor(image.inputs[0], mem), b = read_tensor(image.inputs[1], mem);
  std::vector<std::int64_t> as = a.shape, bs = b.shape;
  std::int64_t a_axis = -1, b_axis = -1;
  bool trans_a = false, trans_b = false;
  std::vector<std::int64_t> out_shape;
  std::vector<std::int64_t> batch;  // MatMul's broadcast batch axes
  std::int64_t m = 1, k = 1, n = 1;
  if (gemm) {
    if (as.size() != 2 || bs.size() != 2) throw GraphError(who + ": Gemm of operands not 2-D");
    trans_a = int_attribute(image, "transA", 0) != 0;
    trans_b = int_attribute(image, "transB", 0) != 0;
    a_axis = trans_a ? 1 : 0, b_axis = trans_b ? 0 : 1;
    m = as[trans_a ? 1 : 0], k = as[trans_a ? 0 : 1];
    n = bs[trans_b ? 0 : 1];
    if (bs[trans_b ? 1 : 0] != k) throw GraphError(who + ": Gemm operands' K differ");
    out_shape = {m, n};
  } else {
    if (as.empty() || bs.empty()) throw GraphError(who + ": MatMul of a scalar");
    const bool a1 = as.size() == 1, b1 = bs.size() == 1;
    if (!a1) a_axis = static_cast<std::int64_t>(as.size()) - 2;
    if (!b1) b_axis = static_cast<std::int64_t>(bs.size()) - 1;
    if (a1) as.insert(as.begin(), 1);
    if (b1) bs.push_back(1);
    m = as[as.size() - 2], k = as.back(), n = bs.back();
    if (bs[bs.size() - 2] != k) throw GraphError(who + ": MatMul operands' K differ");
    const std::size_t rank = std::max(as.size(), bs.size()) - 2;
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t da = d + as.size() - 2 >= rank ? as[d + as.size() - 2 - rank] : 1;
      const std::int64_t db = d + bs.size() - 2 >= rank ? bs[d + bs.size() - 2 - rank] : 1;
      if (da != db && da != 1 && db != 1) throw GraphError(who + ": batch axes do not broadcast");
      batch.push_back(std::max(da, db));
    }
    out_shape = batch;
    if (!a1) out_shape.push_back(m);
    if (!b1) out_shape.push_back(n);
  }
  if (k > kMaxInt8K) {
    throw GraphError(who + ": K = " + std::to_string(k) +
                     " could overflow INT32 sums (<= " + std::to_string(kMaxInt8K) + ")");
  }
  const TensorPlace& out = image.outputs[0];
  if (out.shape != out_shape) {
    throw GraphError(who + ": the product is " + graph::shape_string(out_shape) +
                     ", the image places " + graph::shape_string(out.shape));
  }
  const std::vector<std::int32_t> qa = operand_codes(image.inputs[0], a, mq.a_steps, a_axis, who);
  const std::vector<std::int32_t> qb = operand_codes(image.inputs[1], b, mq.b_steps, b_axis, who);
  const auto step_a = [&](std::int64_t i) {
    return mq.a_steps.size() == 1 ? mq.a_steps[0] : mq.a_steps[i];
  };
  const auto step_b = [&](std::int64_t j) {
    return mq.b_steps.size() == 1 ? mq.b_steps[0] : mq.b_steps[j];
  };
  std::vector<double> y(elements_of(out_shape));
  if (gemm) {
    const double alpha = float_attribute(image, "alpha", 1.0);
    const double beta = float_attribute(image, "beta", 1.0);
    Tensor c;
    const bool has_c = image.inputs.size() > 2 && image.inputs[2].present;
    if (has_c) c = read_tensor(image.inputs[2], mem);
    // C broadcast to M x N (ONNX's unidirectional broadcast): its axes aligned to the right.
    std::int64_t cm = 1, cn = 1;
    if (has_c) {
      if (c.shape.size() > 2) throw GraphError(who + ": Gemm's C of rank > 2");
      cn = c.shape.empty() ? 1 : c.shape.back();
      cm = c.shape.size() == 2 ? c.shape[0] : 1;
      if ((cm != 1 && cm != m) || (cn != 1 && cn != n)) {
        throw GraphError(who + ": Gemm's C " + graph::shape_string(c.shape) +
                         " does not broadcast to the product");
      }
    }
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        std::int32_t acc = 0;
        for (std::int64_t l = 0; l < k; ++l) {
          const std::int32_t x = qa[static_cast<std::size_t>(trans_a ? l * m + i : i * k + l)];
          const std::int32_t w = qb[static_cast<std::size_t>(trans_b ? j * k + l : l * n + j)];
          acc += x * w;
        }
        double v = alpha * step_a(i) * step_b(j) * acc;
        if (has_c)
          v += beta *
               double{c.f[static_cast<std::size_t>((cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j))]};
        y[static_cast<std::size_t>(i * n + j)] = v;
      }
    }
  } else {
    // Each operand's batch strides, 0 along an axis it broadcasts.
    const std::size_t rank = batch.size();
    const auto strides = [&](const std::vector<std::int64_t>& s) {
      std::vector<std::int64_t> st(rank, 0);
      const std::size_t own = s.size() - 2;  // the operand's batch axes, aligned to the right
      std::int64_t step = s[own] * s[own + 1];
      for (std::size_t d = 0; d < own; ++d) {
        const std::int64_t dim = s[own - 1 - d];
        st[rank - 1 - d] = dim == 1 ? 0 : step;
        step *= dim;
      }
      return st;
    };
    const std::vector<std::int64_t> sa = strides(as), sb = strides(bs);
    const std::uint64_t batches = elements_of(batch);
    for (std::uint64_t t = 0; t < batches; ++t) {
      std::int64_t ao = 0, bo = 0;
      std::uint64_t rest = t;
      for (std::size_t d = rank; d-- > 0;) {
        const auto idx = static_cast<std::int64_t>(rest % static_cast<std::uint64_t>(batch[d]));
        rest /= static_cast<std::uint64_t>(batch[d]);
        ao += idx * sa[d], bo += idx * sb[d];
      }
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          std::int32_t acc = 0;
          for (std::int64_t l = 0; l < k; ++l) {
            acc += qa[static_cast<std::size_t>(ao + i * k + l)] *
                   qb[static_cast<std::size_t>(bo + l * n + j)];
          }
          y[static_cast<std::size_t>((static_cast<std::int64_t>(t) * m + i) * n + j)] =
              step_a(i) * step_b(j) * acc;
        }
      }
    }
  }
  write_surface_values(
      out, [&](std::uint64_t i) { return y[i]; }, mem);
}

}  // namespace

std::vector<std::uint8_t> encode_node(const NodeImage& image) {
  Writer w;
  w.u32(kNodeImageMagic);
  w.u32(kNodeImageVersion);
  w.str(image.op_type, "op_type");
  w.str(image.name, "name");
  w.i64(image.opset);
  w.count(image.attributes.size(), kMaxAttributes, "attributes");
  for (const auto& [key, a] : image.attributes) {
    w.str(key, "attribute key");
    w.u8(static_cast<std::uint8_t>(a.kind));
    switch (a.kind) {
      case Attribute::Kind::kInt:
        w.i64(a.i);
        break;
      case Attribute::Kind::kFloat:
        w.f32(a.f);
        break;
      case Attribute::Kind::kString:
        w.str(a.s, "string attribute");
        break;
      case Attribute::Kind::kInts:
        w.count(a.ints.size(), std::numeric_limits<std::uint32_t>::max(), "ints");
        for (const std::int64_t v : a.ints) w.i64(v);
        break;
      case Attribute::Kind::kFloats:
        w.count(a.floats.size(), std::numeric_limits<std::uint32_t>::max(), "floats");
        for (const float v : a.floats) w.f32(v);
        break;
      case Attribute::Kind::kTensor: {
        const Tensor& t = a.t;
        const bool fl = graph::is_float(t.dtype);
        if ((fl ? t.f.size() : t.i.size()) != t.elements()) {
          throw NodeImageError("encode_node: tensor attribute '" + key + "' holds " +
                               std::to_string(fl ? t.f.size() : t.i.size()) + " values for " +
                               std::to_string(t.elements()) + " elements");
        }
        w.u8(static_cast<std::uint8_t>(t.dtype));
        w.count(t.shape.size(), kMaxRank, "tensor rank");
        for (const std::int64_t d : t.shape) w.i64(d);
        if (fl) {
          for (const float v : t.f) w.f32(v);
        } else {
          for (const std::int64_t v : t.i) w.i64(v);
        }
        break;
      }
    }
  }
  w.count(image.inputs.size(), kMaxInputs, "inputs");
  for (const TensorPlace& p : image.inputs) {
    w.u8(p.present ? 1 : 0);
    if (p.present) encode_place(w, p);
  }
  w.count(image.outputs.size(), kMaxOutputs, "outputs");
  for (const TensorPlace& p : image.outputs) encode_place(w, p);
  if (image.int8_matmul) {
    w.u32(kMatmulQuantTag);
    for (const std::vector<double>* steps :
         {&image.int8_matmul->a_steps, &image.int8_matmul->b_steps}) {
      w.count(steps->size(), kMaxCube, "INT8 matmul steps");
      for (const double v : *steps) w.f64(v);
    }
  }
  return w.take();
}

NodeImage decode_node(const std::uint8_t* bytes, std::size_t size) {
  if (bytes == nullptr && size != 0) throw NodeImageError("node image: no bytes at byte 0");
  Reader r(bytes, size);
  NodeImage image;
  if (const std::uint32_t magic = r.u32("magic"); magic != kNodeImageMagic) {
    r.fail(0, "magic " + std::to_string(magic) + " (expected 'PNOD')");
  }
  if (const std::uint32_t v = r.u32("version"); v != kNodeImageVersion) {
    r.fail(4, "version " + std::to_string(v) + " (expected 1)");
  }
  image.op_type = r.str("op_type");
  image.name = r.str("name");
  image.opset = r.i64("opset");
  const std::uint32_t attributes = r.count("attributes", kMaxAttributes, 6);
  for (std::uint32_t k = 0; k < attributes; ++k) {
    const std::size_t key_at = r.offset();
    std::string key = r.str("attribute key");
    Attribute a = decode_attribute(r);
    // Keys strictly ascending, as encode_node writes them: one encoding per image.
    if (!image.attributes.empty() && !(image.attributes.rbegin()->first < key)) {
      r.fail(key_at, "attribute key '" + key + "' not after '" + image.attributes.rbegin()->first +
                         "' (keys are unique and sorted)");
    }
    image.attributes.emplace(std::move(key), std::move(a));
  }
  const std::uint32_t inputs = r.count("inputs", kMaxInputs, 1);
  for (std::uint32_t k = 0; k < inputs; ++k) {
    const std::size_t at = r.offset();
    const std::uint8_t present = r.u8("input present");
    if (present > 1) r.fail(at, "input present " + std::to_string(present) + " (0 or 1)");
    if (present == 1) {
      image.inputs.push_back(decode_place(r));
    } else {
      TensorPlace absent;
      absent.present = false;
      image.inputs.push_back(absent);
    }
  }
  const std::size_t outputs_at = r.offset();
  const std::uint32_t outputs = r.count("outputs", kMaxOutputs, 13);
  if (outputs == 0) r.fail(outputs_at, "no outputs (1 .. 16)");
  for (std::uint32_t k = 0; k < outputs; ++k) image.outputs.push_back(decode_place(r));
  if (r.left() != 0) image.int8_matmul = decode_matmul_quant(r, image);
  if (r.left() != 0) {
    r.fail(r.offset(), std::to_string(r.left()) + " trailing bytes after the last output");
  }
  return image;
}

std::uint64_t place_bytes(const TensorPlace& p) {
  if (!p.present) return 0;
  if (!p.surface()) return elements_of(p.shape) * element_bytes(p.storage);
  return std::uint64_t{surfaces(p) - 1} * p.surface_stride +
         std::uint64_t{p.height - 1} * p.line_stride + std::uint64_t{p.width} * p.atom_bytes;
}

void run_node(const NodeImage& image, Memory& mem) {
  if (image.int8_matmul) {
    run_int8_matmul(image, mem);
    return;
  }
  const graph::Node node = make_node(image);
  std::vector<Tensor> values;
  values.reserve(image.inputs.size());
  for (const TensorPlace& p : image.inputs) {
    values.push_back(p.present ? read_tensor(p, mem) : Tensor{});
  }
  graph::Inputs in;
  for (const Tensor& t : values) in.push_back(&t);
  const std::vector<Tensor> out = graph::run_op(node, in, image.opset);
  if (out.size() < image.outputs.size()) {
    throw GraphError(node.label() + ": the kernel returns " + std::to_string(out.size()) +
                     " outputs, the image places " + std::to_string(image.outputs.size()));
  }
  for (std::size_t k = 0; k < image.outputs.size(); ++k) {
    if (out[k].shape != image.outputs[k].shape) {
      throw GraphError(node.label() + ": output " + std::to_string(k) + " is " +
                       graph::shape_string(out[k].shape) + ", the image places " +
                       graph::shape_string(image.outputs[k].shape));
    }
  }
  for (std::size_t k = 0; k < image.outputs.size(); ++k)
    write_tensor(image.outputs[k], out[k], mem);
}

NodeCost node_cost(const NodeImage& image) {
  NodeCost c;
  const graph::Node node = make_node(image);
  graph::ShapeMap shapes;
  std::uint64_t in_elements = 0;
  for (std::size_t k = 0; k < image.inputs.size(); ++k) {
    const TensorPlace& p = image.inputs[k];
    if (!p.present) continue;
    shapes[node.inputs[k]] = p.shape;
    c.bytes_read += place_bytes(p);
  }
  if (!image.inputs.empty() && image.inputs[0].present) {
    in_elements = elements_of(image.inputs[0].shape);
  }
  for (std::size_t k = 0; k < image.outputs.size(); ++k) {
    shapes[node.outputs[k]] = image.outputs[k].shape;
    c.output_elements += elements_of(image.outputs[k].shape);
    c.bytes_written += place_bytes(image.outputs[k]);
  }
  const graph::OpSchema* schema = graph::find_op(image.op_type);
  if (schema != nullptr && schema->macs != nullptr) {
    try {
      c.macs = schema->macs(node, shapes);
    } catch (const GraphError&) {
      c.macs = 0;  // a node the kernel will refuse: run_node reports it
    }
  }
  const std::string& op = image.op_type;
  const std::uint64_t first_out =
      image.outputs.empty() ? 1 : std::max<std::uint64_t>(1, elements_of(image.outputs[0].shape));
  const std::uint64_t per_out = std::max<std::uint64_t>(1, in_elements / first_out);
  if (op.rfind("Reduce", 0) == 0 || op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    c.ops_per_element = per_out + 1;  // every input element once, then the mean's scale
  } else if (op == "MaxPool" || op == "AveragePool") {
    std::uint64_t window = 1;
    if (const auto it = image.attributes.find("kernel_shape"); it != image.attributes.end()) {
      for (const std::int64_t d : it->second.ints)
        window *= static_cast<std::uint64_t>(std::max<std::int64_t>(1, d));
    }
    c.ops_per_element = std::min<std::uint64_t>(window, kMaxElements) + 1;
  } else if (op == "LRN") {
    const auto it = image.attributes.find("size");
    const std::int64_t size = it == image.attributes.end() ? 1 : it->second.i;
    c.ops_per_element = static_cast<std::uint64_t>(std::clamp<std::int64_t>(size, 1, 1024)) + 14;
  } else {
    c.ops_per_element = op_cost_per_element(op);
  }
  if (image.int8_matmul) {
    c.int8_macs = true;
    std::uint64_t float_elements = 0;
    for (std::size_t k = 0; k < 2 && k < image.inputs.size(); ++k) {
      const TensorPlace& p = image.inputs[k];
      if (p.present && p.storage != Storage::kSurfaceInt8) float_elements += elements_of(p.shape);
    }
    const bool bias = image.inputs.size() > 2 && image.inputs[2].present;
    c.ops_per_element = (bias ? 3 : 2) + (3 * float_elements + first_out - 1) / first_out;
  }
  return c;
}

}  // namespace octasim::models::ops
