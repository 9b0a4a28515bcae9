// .npy decoding: the header (a Python dict literal), every numeric dtype, both byte orders,
// C and Fortran order.
#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "models/io/tensor_file.hpp"
#include "models/numerics/bit_cast.hpp"
#include "models/numerics/float_format.hpp"

namespace octasim::models {
namespace {

using io_detail::fail;

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(const std::string& path, std::string text) : path_(path), s_(std::move(text)) {}

  void parse(std::string& descr, bool& fortran, std::vector<std::size_t>& shape) {
    bool have_descr = false;
    bool have_fortran = false;
    bool have_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        skip_space();
        if (peek() == '[') {
          fail(path_,
               "structured arrays (a list of named fields) are not supported (expected a "
               "plain numeric dtype)");
        }
        descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        have_fortran = true;
      } else if (key == "shape") {
        shape = tuple();
        have_shape = true;
      } else {
        bad("unknown header key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_space();
      if (peek() != '}') bad("expected ',' or '}'");
    }
    if (!have_descr || !have_fortran || !have_shape) {
      bad("header lacks 'descr', 'fortran_order' or 'shape'");
    }
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail(path_, "malformed .npy header (" + what + ")");
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_])) != 0) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    const std::size_t end = s_.find(q, pos_ + 1);
    if (end == std::string::npos) bad("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    bad("expected True or False");
  }
  std::vector<std::size_t> tuple() {
    expect('(');
    std::vector<std::size_t> dims;
    while (true) {
      skip_space();
      if (peek() == ')') {
        ++pos_;
        return dims;
      }
      if (std::isdigit(static_cast<unsigned char>(peek())) == 0) bad("expected a dimension");
      std::size_t d = 0;
      while (std::isdigit(static_cast<unsigned char>(peek())) != 0) {
        const auto digit = static_cast<std::size_t>(peek() - '0');
        if (d > (std::numeric_limits<std::size_t>::max() - digit) / 10) bad("dimension too large");
        d = d * 10 + digit;
        ++pos_;
      }
      while (peek() == 'L') ++pos_;  // Python 2 long suffix
      dims.push_back(d);
      skip_space();
      if (peek() == ',') ++pos_;
    }
  }

  const std::string& path_;
  std::string s_;
  std::size_t pos_ = 0;
};

std::uint64_t load(const unsigned char* p, std::size_t bytes, bool big_endian) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    const std::size_t k = big_endian ? i : bytes - 1 - i;
    v = (v << 8) | p[k];
  }
  return v;
}

struct Dtype {
  char kind = 0;  // 'f' float, 'i' signed, 'u' unsigned integer, 'b' bool
  std::size_t width = 0;
  bool big_endian = false;
  std::string name;  // "float32", "int64", "bool", ...
};

// A descr such as '<f4', '>i8', '|u1' or '|b1'; what the caller accepts decides the rest.
Dtype parse_dtype(const std::string& path, const std::string& descr, bool integers) {
  const std::string expected = integers
                                   ? "expected float16/32/64, an integer of 8 to 64 bits or bool"
                                   : "expected float16, float32 or float64";
  Dtype d;
  const bool order = !descr.empty() && std::strchr("<>|=", descr[0]) != nullptr;
  const std::string body = order ? descr.substr(1) : descr;
  if (!body.empty() && body[0] == 'O') {
    fail(path, "object arrays (dtype '" + descr + "': pickled Python objects) are not supported (" +
                   expected + ")");
  }
  std::size_t w = 0;
  const bool digits = body.size() >= 2 && body.size() <= 3 &&
                      std::isdigit(static_cast<unsigned char>(body[1])) != 0 &&
                      (body.size() == 2 || std::isdigit(static_cast<unsigned char>(body[2])) != 0);
  if (digits) w = static_cast<std::size_t>(std::stoul(body.substr(1)));
  const char k = body.empty() ? '\0' : body[0];
  const bool valid = k == 'f'               ? (w == 2 || w == 4 || w == 8)
                     : k == 'i' || k == 'u' ? integers && (w == 1 || w == 2 || w == 4 || w == 8)
                     : k == 'b'             ? integers && w == 1
                                            : false;
  if (!order || !digits || !valid) {
    const std::string what = k == 'c' && digits ? " (complex numbers)" : "";
    fail(path, "unsupported dtype '" + descr + "'" + what + " (" + expected + ")");
  }
  d.kind = k;
  d.width = w;
  d.big_endian = descr[0] == '>';
  d.name = k == 'b'   ? "bool"
           : k == 'f' ? "float" + std::to_string(8 * w)
           : k == 'i' ? "int" + std::to_string(8 * w)
                      : "uint" + std::to_string(8 * w);
  return d;
}

float decode_value(const unsigned char* p, const Dtype& d) {
  const std::uint64_t raw = load(p, d.width, d.big_endian);
  switch (d.kind) {
    case 'b':
      return raw != 0 ? 1.0f : 0.0f;
    case 'u':
      return static_cast<float>(raw);
    case 'i': {
      const unsigned bits = static_cast<unsigned>(8 * d.width);
      const auto v = bits == 64 ? static_cast<std::int64_t>(raw)
                                : static_cast<std::int64_t>(raw << (64 - bits)) >> (64 - bits);
      return static_cast<float>(v);
    }
    default:
      break;
  }
  if (d.width == 2) return fp16_to_float(static_cast<std::uint16_t>(raw));
  if (d.width == 4) return fp32_from_bits(static_cast<std::uint32_t>(raw));
  return static_cast<float>(bit_cast<double>(raw));
}

// The element count of `shape`, refusing one whose bytes would not fit in memory's addresses.
std::size_t checked_count(const std::string& path, const std::vector<std::size_t>& shape) {
  std::size_t count = 1;
  for (const std::size_t d : shape) {
    if (d != 0 && count > std::numeric_limits<std::size_t>::max() / 8 / d) {
      std::string dims;
      for (const std::size_t e : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(e);
      fail(path, "absurd shape (" + dims + "): more elements than memory can address");
    }
    count *= d;
  }
  return count;
}

// Element i of the C-order result lies at offset(i) in a Fortran-order file: walk the C-order
// multi-index as an odometer, keeping the column-major offset.
std::vector<float> fortran_to_c(const std::vector<float>& f,
                                const std::vector<std::size_t>& shape) {
  const std::size_t rank = shape.size();
  std::vector<std::size_t> stride(rank, 1);
  for (std::size_t k = 1; k < rank; ++k) stride[k] = stride[k - 1] * shape[k - 1];
  std::vector<std::size_t> idx(rank, 0);
  std::vector<float> c(f.size());
  std::size_t off = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    c[i] = f[off];
    for (std::size_t k = rank; k-- > 0;) {
      if (++idx[k] < shape[k]) {
        off += stride[k];
        break;
      }
      off -= stride[k] * (shape[k] - 1);
      idx[k] = 0;
    }
  }
  return c;
}

}  // namespace

Tensor decode_npy(const std::string& path, const unsigned char* u, std::size_t size,
                  bool integers) {
  if (size < kNpyMagicLen + 4 || std::memcmp(u, kNpyMagic, kNpyMagicLen) != 0) {
    fail(path, "not a NumPy .npy file (expected the magic \\x93NUMPY at the start)");
  }
  const unsigned major = u[6];
  std::size_t header_len = 0;
  std::size_t header_start = 0;
  if (major == 1) {
    header_len = u[8] | (std::size_t{u[9]} << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail(path, "truncated .npy header");
    header_len = static_cast<std::size_t>(load(u + 8, 4, false));
    header_start = 12;
  } else {
    fail(path,
         "unsupported .npy format version " + std::to_string(major) + " (expected 1, 2 or 3)");
  }
  if (size - header_start < header_len) {
    fail(path, "truncated .npy header (expected " + std::to_string(header_len) +
                   " header bytes, file has " + std::to_string(size - header_start) + ")");
  }
  std::string descr;
  bool fortran = false;
  Tensor t;
  HeaderParser(path, std::string(reinterpret_cast<const char*>(u) + header_start, header_len))
      .parse(descr, fortran, t.shape);
  const Dtype d = parse_dtype(path, descr, integers);
  t.dtype = d.name;

  const std::size_t count = checked_count(path, t.shape);
  const std::size_t data_start = header_start + header_len;
  const std::size_t have = size - data_start;
  const std::size_t want = count * d.width;
  if (have < want) {
    fail(path, "truncated data (shape needs " + std::to_string(want) + " bytes of " + t.dtype +
                   ", file has " + std::to_string(have) + ")");
  }
  if (have > want) {
    fail(path, std::to_string(have - want) + " unexpected bytes after the " + std::to_string(want) +
                   "-byte data section");
  }
  t.values.resize(count);
  const unsigned char* p = u + data_start;
  for (std::size_t i = 0; i < count; ++i, p += d.width) t.values[i] = decode_value(p, d);
  if (fortran && t.shape.size() > 1) t.values = fortran_to_c(t.values, t.shape);
  return t;
}

}  // namespace octasim::models
