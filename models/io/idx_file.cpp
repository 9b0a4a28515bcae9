#include "models/io/idx_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

#include "models/numerics/bit_cast.hpp"

namespace octasim::models {
namespace {

using io_detail::fail;

bool has_gzip_magic(const unsigned char* p, std::size_t n) {
  return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

// The file's content, decompressed on the fly when it is gzip data.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Copies up to `n` bytes to `out` and returns how many: fewer only at the end of the data.
  virtual std::size_t read(unsigned char* out, std::size_t n) = 0;
};

class PlainSource final : public ByteSource {
 public:
  explicit PlainSource(const std::vector<unsigned char>& bytes) : bytes_(bytes) {}
  std::size_t read(unsigned char* out, std::size_t n) override {
    const std::size_t k = std::min(n, bytes_.size() - pos_);
    std::copy_n(bytes_.begin() + static_cast<std::ptrdiff_t>(pos_), k, out);
    pos_ += k;
    return k;
  }

 private:
  const std::vector<unsigned char>& bytes_;
  std::size_t pos_ = 0;
};

class GzipSource final : public ByteSource {
 public:
  GzipSource(const std::string& path, const std::vector<unsigned char>& bytes) : path_(path) {
    if (bytes.size() > std::numeric_limits<uInt>::max()) fail(path_, "gzip file too large (4 GiB)");
    zs_.next_in = const_cast<Bytef*>(bytes.data());  // zlib only reads it (no ZLIB_CONST here)
    zs_.avail_in = static_cast<uInt>(bytes.size());
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) fail(path_, "cannot initialise zlib");
  }
  ~GzipSource() override { inflateEnd(&zs_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  std::size_t read(unsigned char* out, std::size_t n) override {
    std::size_t done = 0;
    while (done < n && !finished_) {
      const std::size_t want = std::min<std::size_t>(n - done, std::numeric_limits<uInt>::max());
      zs_.next_out = out + done;
      zs_.avail_out = static_cast<uInt>(want);
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      done += want - zs_.avail_out;
      if (rc == Z_STREAM_END) {
        next_member();
      } else if (rc == Z_BUF_ERROR && zs_.avail_in == 0) {
        fail(path_, "gzip data ends early (truncated file)");
      } else if (rc != Z_OK) {
        fail(path_, std::string("corrupt gzip data (") +
                        (zs_.msg != nullptr ? zs_.msg : "zlib error " + std::to_string(rc)) + ")");
      }
    }
    return done;
  }

 private:
  // After a member's end: another member follows (concatenated .gz files), or nothing.
  void next_member() {
    if (zs_.avail_in == 0) {
      finished_ = true;
      return;
    }
    if (!has_gzip_magic(zs_.next_in, zs_.avail_in)) {
      fail(path_, "expected nothing or another gzip member after the gzip data, got " +
                      std::to_string(zs_.avail_in) + " other bytes");
    }
    if (inflateReset(&zs_) != Z_OK) fail(path_, "cannot reset zlib");
  }

  std::string path_;
  z_stream zs_{};
  bool finished_ = false;
};

std::size_t element_size(IdxType t) {
  switch (t) {
    case IdxType::kUInt8:
    case IdxType::kInt8:
      return 1;
    case IdxType::kInt16:
      return 2;
    case IdxType::kInt32:
    case IdxType::kFloat32:
      return 4;
    case IdxType::kFloat64:
      return 8;
  }
  return 0;
}

bool valid_type(unsigned char b) {
  return b == 0x08 || b == 0x09 || b == 0x0B || b == 0x0C || b == 0x0D || b == 0x0E;
}

std::string hex_byte(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02x", v & 0xffU);
  return buf;
}

std::string shape_text(const std::vector<std::size_t>& dims) {
  if (dims.empty()) return "() (0 dimensions)";
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

std::uint64_t big_endian(const unsigned char* p, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// Round-to-nearest-even double -> float, +-infinity beyond FP32's range (a plain conversion of
// an out-of-range double is undefined behaviour in C++).
float narrow(double d) {
  constexpr double kMax = static_cast<double>(std::numeric_limits<float>::max());
  constexpr double kHalfUlp = 0x1p103;  // FLT_MAX's ulp is 2^104; a tie rounds to even (inf)
  if (std::isfinite(d) && std::fabs(d) > kMax) {
    const float big = std::fabs(d) >= kMax + kHalfUlp ? std::numeric_limits<float>::infinity()
                                                      : std::numeric_limits<float>::max();
    return d < 0 ? -big : big;
  }
  return static_cast<float>(d);
}

struct Header {
  IdxType type = IdxType::kUInt8;
  std::vector<std::size_t> dims;
  std::size_t elements = 1;
};

Header read_header(const std::string& path, ByteSource& src) {
  unsigned char magic[4];
  const std::size_t got = src.read(magic, 4);
  if (got < 4) {
    fail(path, "expected a 4-byte IDX header (00 00 <type> <ndims>), the data ends after " +
                   std::to_string(got) + " bytes");
  }
  if (magic[0] != 0 || magic[1] != 0) {
    fail(path,
         "expected the IDX magic 00 00, got " + hex_byte(magic[0]) + " " + hex_byte(magic[1]));
  }
  if (!valid_type(magic[2])) {
    fail(path, "unknown IDX type 0x" + hex_byte(magic[2]) +
                   " (expected 0x08 ubyte, 0x09 byte, 0x0b short, 0x0c int, 0x0d float or "
                   "0x0e double)");
  }
  Header h;
  h.type = static_cast<IdxType>(magic[2]);
  const std::size_t ndims = magic[3];
  std::vector<unsigned char> raw(4 * ndims);
  const std::size_t dim_bytes = src.read(raw.data(), raw.size());
  if (dim_bytes < raw.size()) {
    fail(path, "truncated IDX header: expected " + std::to_string(ndims) +
                   " big-endian uint32 dimensions (" + std::to_string(raw.size()) +
                   " bytes), got " + std::to_string(dim_bytes) + " bytes");
  }
  const std::size_t elem = element_size(h.type);
  for (std::size_t i = 0; i < ndims; ++i) {
    const auto d = static_cast<std::size_t>(big_endian(&raw[4 * i], 4));
    h.dims.push_back(d);
    if (d != 0 && h.elements > std::numeric_limits<std::size_t>::max() / elem / d) {
      fail(path, "IDX dimensions too large to address");
    }
    h.elements *= d;
  }
  return h;
}

// Exactly `bytes` bytes of data (grown as they arrive: a lying header allocates nothing).
std::vector<unsigned char> read_data(const std::string& path, ByteSource& src, const Header& h) {
  const std::size_t bytes = h.elements * element_size(h.type);
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::vector<unsigned char> data;
  while (data.size() < bytes) {
    const std::size_t old = data.size();
    data.resize(old + std::min(kChunk, bytes - old));
    const std::size_t got = src.read(data.data() + old, data.size() - old);
    if (got < data.size() - old) {
      fail(path, "truncated IDX data: expected " + std::to_string(bytes) + " bytes for " +
                     std::string(idx_type_name(h.type)) + " " + shape_text(h.dims) + ", got " +
                     std::to_string(old + got));
    }
  }
  unsigned char extra = 0;
  if (src.read(&extra, 1) != 0) {
    fail(path, "unexpected bytes after the " + std::to_string(bytes) + " data bytes of " +
                   std::string(idx_type_name(h.type)) + " " + shape_text(h.dims));
  }
  return data;
}

void convert(const std::vector<unsigned char>& data, std::size_t count, IdxArray& out) {
  const std::size_t elem = element_size(out.type);
  if (is_float(out.type)) {
    out.floats.resize(count);
  } else {
    out.ints.resize(count);
  }
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint64_t v = big_endian(&data[k * elem], elem);
    switch (out.type) {
      case IdxType::kUInt8:
        out.ints[k] = static_cast<std::int64_t>(v);
        break;
      case IdxType::kInt8:
        out.ints[k] = static_cast<std::int8_t>(static_cast<std::uint8_t>(v));
        break;
      case IdxType::kInt16:
        out.ints[k] = static_cast<std::int16_t>(static_cast<std::uint16_t>(v));
        break;
      case IdxType::kInt32:
        out.ints[k] = static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
        break;
      case IdxType::kFloat32:
        out.floats[k] = bit_cast<float>(static_cast<std::uint32_t>(v));
        break;
      case IdxType::kFloat64:
        out.floats[k] = narrow(bit_cast<double>(v));
        break;
    }
  }
}

}  // namespace

const char* idx_type_name(IdxType t) {
  switch (t) {
    case IdxType::kUInt8:
      return "ubyte";
    case IdxType::kInt8:
      return "byte";
    case IdxType::kInt16:
      return "short";
    case IdxType::kInt32:
      return "int";
    case IdxType::kFloat32:
      return "float";
    case IdxType::kFloat64:
      return "double";
  }
  return "?";
}

std::vector<float> IdxArray::as_floats() const {
  if (is_float(type)) return floats;
  std::vector<float> out(ints.size());
  std::transform(ints.begin(), ints.end(), out.begin(),
                 [](std::int64_t v) { return static_cast<float>(v); });
  return out;
}

IdxArray read_idx(const std::string& path, std::size_t max_items) {
  const std::vector<char> file = read_file_bytes(path);
  const std::vector<unsigned char> bytes(file.begin(), file.end());
  std::unique_ptr<ByteSource> src;
  if (has_gzip_magic(bytes.data(), bytes.size())) {
    src = std::make_unique<GzipSource>(path, bytes);
  } else {
    src = std::make_unique<PlainSource>(bytes);
  }
  const Header h = read_header(path, *src);
  const std::vector<unsigned char> data = read_data(path, *src, h);

  IdxArray out;
  out.type = h.type;
  out.shape = h.dims;
  std::size_t count = h.elements;
  if (h.dims.empty()) {
    out.file_items = 1;
  } else {
    out.file_items = h.dims[0];
    if (max_items < h.dims[0]) {
      out.shape[0] = max_items;
      count = h.dims[0] == 0 ? 0 : h.elements / h.dims[0] * max_items;
    }
  }
  convert(data, count, out);
  return out;
}

}  // namespace octasim::models
