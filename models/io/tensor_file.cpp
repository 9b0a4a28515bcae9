#include "models/io/tensor_file.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>

#include "models/numerics/bit_cast.hpp"
#include "models/numerics/float_format.hpp"

namespace octasim::models {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw TensorFileError(path + ": " + what);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

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

std::uint64_t load_le(const unsigned char* p, std::size_t bytes, bool big_endian) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) {
    const std::size_t k = big_endian ? i : bytes - 1 - i;
    v = (v << 8) | p[k];
  }
  return v;
}

}  // namespace

std::vector<char> read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open file");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) fail(path, "cannot read file");
  in.seekg(0, std::ios::beg);
  std::vector<char> bytes(static_cast<std::size_t>(size));
  if (size > 0 && !in.read(bytes.data(), size)) fail(path, "cannot read file");
  return bytes;
}

Tensor read_npy(const std::string& path, bool integers) {
  const std::vector<char> bytes = read_file_bytes(path);
  if (bytes.size() < kMagicLen + 4 || std::memcmp(bytes.data(), kMagic, kMagicLen) != 0) {
    fail(path, "not a NumPy .npy file (expected the magic \\x93NUMPY at the start)");
  }
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  const unsigned major = u[6];
  std::size_t header_len = 0;
  std::size_t header_start = 0;
  if (major == 1) {
    header_len = u[8] | (std::size_t{u[9]} << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail(path, "truncated .npy header");
    header_len =
        u[8] | (std::size_t{u[9]} << 8) | (std::size_t{u[10]} << 16) | (std::size_t{u[11]} << 24);
    header_start = 12;
  } else {
    fail(path,
         "unsupported .npy format version " + std::to_string(major) + " (expected 1, 2 or 3)");
  }
  if (bytes.size() < header_start + header_len) {
    fail(path, "truncated .npy header (expected " + std::to_string(header_len) +
                   " header bytes, file has " + std::to_string(bytes.size() - header_start) + ")");
  }
  std::string descr;
  bool fortran = false;
  Tensor t;
  HeaderParser(path, std::string(bytes.data() + header_start, header_len))
      .parse(descr, fortran, t.shape);

  std::size_t width = 0;
  bool big_endian = false;
  char kind = 0;  // 'f' float, 'i' signed, 'u' unsigned integer
  if (descr.size() == 3 &&
      (descr[0] == '<' || descr[0] == '>' || descr[0] == '=' || descr[0] == '|') &&
      (descr[1] == 'f' || descr[1] == 'i' || descr[1] == 'u') && descr[2] >= '1' &&
      descr[2] <= '8') {
    big_endian = descr[0] == '>';
    kind = descr[1];
    const std::size_t w = static_cast<std::size_t>(descr[2] - '0');
    const bool valid = kind == 'f' ? (w == 2 || w == 4 || w == 8)
                                   : integers && (w == 1 || w == 2 || w == 4 || w == 8);
    if (valid) {
      width = w;
      t.dtype = (kind == 'f' ? "float" : kind == 'i' ? "int" : "uint") + std::to_string(8 * w);
    }
  }
  if (width == 0) {
    fail(path, "unsupported dtype '" + descr +
                   (integers ? "' (expected float16/32/64 or an integer of 8 to 64 bits)"
                             : "' (expected float16, float32 or float64)"));
  }
  if (fortran) fail(path, "Fortran-order arrays are not supported (expected C order)");

  std::size_t count = 1;
  for (const std::size_t d : t.shape) {
    if (d != 0 && count > std::numeric_limits<std::size_t>::max() / 8 / d) {
      fail(path, "shape too large");
    }
    count *= d;
  }
  const std::size_t data_start = header_start + header_len;
  const std::size_t have = bytes.size() - data_start;
  const std::size_t want = count * width;
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
  for (std::size_t i = 0; i < count; ++i, p += width) {
    const std::uint64_t raw = load_le(p, width, big_endian);
    if (kind == 'u') {
      t.values[i] = static_cast<float>(raw);
    } else if (kind == 'i') {
      const unsigned bits = static_cast<unsigned>(8 * width);
      const auto v = bits == 64 ? static_cast<std::int64_t>(raw)
                                : static_cast<std::int64_t>(raw << (64 - bits)) >> (64 - bits);
      t.values[i] = static_cast<float>(v);
    } else if (width == 2) {
      t.values[i] = fp16_to_float(static_cast<std::uint16_t>(raw));
    } else if (width == 4) {
      t.values[i] = fp32_from_bits(static_cast<std::uint32_t>(raw));
    } else {
      t.values[i] = static_cast<float>(bit_cast<double>(raw));
    }
  }
  return t;
}

Tensor read_raw_float32(const std::string& path, const std::vector<std::size_t>& shape) {
  const std::vector<char> bytes = read_file_bytes(path);
  if (bytes.size() % 4 != 0) {
    fail(path,
         "raw float32 file size " + std::to_string(bytes.size()) + " is not a multiple of 4 bytes");
  }
  Tensor t;
  t.dtype = "float32";
  const std::size_t count = bytes.size() / 4;
  if (shape.empty()) {
    t.shape = {count};
  } else {
    std::size_t want = 1;
    for (const std::size_t d : shape) want *= d;
    if (want != count) {
      fail(path, "raw file holds " + std::to_string(count) + " float32 values, shape needs " +
                     std::to_string(want));
    }
    t.shape = shape;
  }
  t.values.resize(count);
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = 0; i < count; ++i) {
    t.values[i] = fp32_from_bits(static_cast<std::uint32_t>(load_le(u + 4 * i, 4, false)));
  }
  return t;
}

Tensor read_tensor_file(const std::string& path, const std::vector<std::size_t>& raw_shape) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open file");
  char head[kMagicLen] = {};
  in.read(head, kMagicLen);
  const bool magic = in.gcount() == static_cast<std::streamsize>(kMagicLen) &&
                     std::memcmp(head, kMagic, kMagicLen) == 0;
  if (magic || ends_with(path, ".npy")) {
    if (!raw_shape.empty()) fail(path, "a shape is only for raw float32 files");
    return read_npy(path);
  }
  return read_raw_float32(path, raw_shape);
}

void write_npy_float32(const std::string& path, const std::vector<std::size_t>& shape,
                       const std::vector<float>& values) {
  std::string dims;
  for (const std::size_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() == 1) {
    dims.pop_back();  // "(5,)": Python's one-element tuple
  } else if (shape.size() > 1) {
    dims.resize(dims.size() - 2);  // "(2, 3)"
  }
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const std::size_t total = kMagicLen + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(path, "cannot create file");
  out.write(kMagic, kMagicLen);
  const char version[2] = {1, 0};
  out.write(version, 2);
  const char len[2] = {static_cast<char>(header.size() & 0xff),
                       static_cast<char>((header.size() >> 8) & 0xff)};
  out.write(len, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const float v : values) {
    const std::uint32_t b = fp32_to_bits(v);
    const char le[4] = {static_cast<char>(b & 0xff), static_cast<char>((b >> 8) & 0xff),
                        static_cast<char>((b >> 16) & 0xff), static_cast<char>(b >> 24)};
    out.write(le, 4);
  }
  if (!out) fail(path, "write failed");
}

}  // namespace octasim::models
