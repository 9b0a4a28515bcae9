#include "models/io/tensor_file.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <system_error>
#include <utility>

#include "models/io/atomic_file.hpp"
#include "models/io/zip_archive.hpp"
#include "models/numerics/float_format.hpp"

namespace octasim::models {
namespace {

constexpr const char* kMagic = kNpyMagic;
constexpr std::size_t kMagicLen = kNpyMagicLen;

using io_detail::fail;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::uint64_t load_le(const unsigned char* p, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = bytes; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

bool is_zip(const std::vector<char>& bytes) {
  return bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K' &&
         ((bytes[2] == 3 && bytes[3] == 4) || (bytes[2] == 5 && bytes[3] == 6));
}

// "a.npz:x" when no file of that name exists but a.npz does: the archive and the member.
std::pair<std::string, std::string> split_member(const std::string& path) {
  const std::size_t colon = path.rfind(':');
  if (colon == std::string::npos || is_file(path)) return {path, ""};
  const std::string archive = path.substr(0, colon);
  if (!ends_with(archive, ".npz")) return {path, ""};
  return {archive, path.substr(colon + 1)};
}

std::string strip_npy(const std::string& name) {
  return ends_with(name, ".npy") ? name.substr(0, name.size() - 4) : name;
}

Tensor read_npz(const std::string& archive, const std::string& member,
                const std::vector<char>& bytes, bool integers) {
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::vector<ZipMember> members = zip_members(archive, u, bytes.size());
  std::string names;
  for (const ZipMember& m : members) names += (names.empty() ? "" : ", ") + strip_npy(m.name);
  const ZipMember* chosen = nullptr;
  for (const ZipMember& m : members) {
    if (member.empty() ? members.size() == 1 : (m.name == member || strip_npy(m.name) == member)) {
      chosen = &m;
    }
  }
  if (chosen == nullptr && member.empty()) {
    fail(archive, "an .npz archive of " + std::to_string(members.size()) + " arrays (" + names +
                      "): name one as " + archive + ":NAME");
  }
  if (chosen == nullptr) {
    fail(archive, "no array '" + member + "' in the .npz archive (it holds: " + names + ")");
  }
  const std::vector<unsigned char> npy = zip_extract(archive, u, bytes.size(), *chosen);
  return decode_npy(archive + ":" + strip_npy(chosen->name), npy.data(), npy.size(), integers);
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
  const auto [file, member] = split_member(path);
  const std::vector<char> bytes = read_file_bytes(file);
  // A file named .npy is one, even when it starts like a ZIP archive.
  if (is_zip(bytes) && (!member.empty() || !ends_with(file, ".npy"))) {
    return read_npz(file, member, bytes, integers);
  }
  if (!member.empty() || ends_with(file, ".npz")) {
    fail(file, "not a NumPy .npz archive (expected a ZIP file, starting with PK)");
  }
  return decode_npy(file, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    integers);
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
    t.values[i] = fp32_from_bits(static_cast<std::uint32_t>(load_le(u + 4 * i, 4)));
  }
  return t;
}

Tensor read_tensor_file(const std::string& path, const std::vector<std::size_t>& raw_shape) {
  const std::string file = split_member(path).first;
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open file");
  char head[kMagicLen] = {};
  in.read(head, kMagicLen);
  const bool full = in.gcount() == static_cast<std::streamsize>(kMagicLen);
  const bool magic = full && (std::memcmp(head, kMagic, kMagicLen) == 0 ||
                              is_zip(std::vector<char>(head, head + kMagicLen)));
  if (magic || file != path || ends_with(path, ".npy") || ends_with(path, ".npz")) {
    if (!raw_shape.empty()) fail(path, "a shape is only for raw float32 files");
    return read_npy(path, true);
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
  write_file_atomically(path, [&](std::ostream& out) {
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
  });
}

}  // namespace octasim::models
