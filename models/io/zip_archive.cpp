#include "models/io/zip_archive.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "models/io/tensor_file.hpp"  // TensorFileError
#include "models/numerics/crc32.hpp"

namespace octasim::models {
namespace {

constexpr std::uint32_t kEndOfDirectory = 0x06054b50;
constexpr std::uint32_t kZip64Locator = 0x07064b50;
constexpr std::uint32_t kZip64End = 0x06064b50;
constexpr std::uint32_t kDirectoryEntry = 0x02014b50;
constexpr std::uint32_t kLocalHeader = 0x04034b50;
constexpr std::uint32_t kFull32 = 0xffffffffu;
// Deflate expands at most 1032-fold (a 258-byte match costs at least 2 bits).
constexpr std::uint64_t kMaxDeflateRatio = 1032;

using io_detail::fail;

// Little-endian reads bounds-checked against the archive.
class Reader {
 public:
  Reader(const std::string& source, const unsigned char* data, std::size_t size)
      : source_(source), data_(data), size_(size) {}

  [[nodiscard]] std::uint64_t le(std::size_t at, std::size_t bytes, const char* what) const {
    if (at > size_ || bytes > size_ - at) {
      fail(source_, std::string("not a valid .npz/ZIP archive (") + what +
                        " lies beyond the end of the file: truncated?)");
    }
    std::uint64_t v = 0;
    for (std::size_t i = bytes; i-- > 0;) v = (v << 8) | data_[at + i];
    return v;
  }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] const std::string& source() const { return source_; }

 private:
  const std::string& source_;
  const unsigned char* data_;
  std::size_t size_;
};

std::size_t as_size(const Reader& r, std::uint64_t v, const char* what) {
  if (v > r.size()) {
    fail(r.source(), std::string("not a valid .npz/ZIP archive (") + what + " " +
                         std::to_string(v) + " exceeds the file's " + std::to_string(r.size()) +
                         " bytes: truncated?)");
  }
  return static_cast<std::size_t>(v);
}

struct Directory {
  std::uint64_t entries = 0;
  std::uint64_t offset = 0;
};

Directory find_directory(const Reader& r) {
  if (r.size() < 22) fail(r.source(), "not a valid .npz/ZIP archive (too short)");
  const std::size_t lowest = r.size() >= 22 + 65535 ? r.size() - 22 - 65535 : 0;
  for (std::size_t at = r.size() - 22 + 1; at-- > lowest;) {
    if (r.le(at, 4, "the end record") != kEndOfDirectory) continue;
    Directory d{r.le(at + 10, 2, "the end record"), r.le(at + 16, 4, "the end record")};
    if (r.le(at + 4, 2, "the end record") != 0 || r.le(at + 6, 2, "the end record") != 0) {
      fail(r.source(), "multi-disk ZIP archives are not supported");
    }
    if ((d.entries == 0xffff || d.offset == kFull32) && at >= 20 &&
        r.le(at - 20, 4, "the ZIP64 locator") == kZip64Locator) {
      const auto z = as_size(r, r.le(at - 12, 8, "the ZIP64 locator"), "ZIP64 end record offset");
      if (r.le(z, 4, "the ZIP64 end record") != kZip64End) {
        fail(r.source(), "not a valid .npz/ZIP archive (bad ZIP64 end record)");
      }
      d.entries = r.le(z + 32, 8, "the ZIP64 end record");
      d.offset = r.le(z + 48, 8, "the ZIP64 end record");
    }
    return d;
  }
  fail(r.source(),
       "not a valid .npz/ZIP archive (expected an end-of-central-directory record; truncated?)");
}

// Replaces the 0xffffffff fields of a directory entry by its ZIP64 extra field's values.
void apply_zip64(const Reader& r, std::size_t extra, std::size_t extra_len, ZipMember& m,
                 std::uint64_t& usize, std::uint64_t& csize, std::uint64_t& offset) {
  std::size_t at = extra;
  while (at + 4 <= extra + extra_len) {
    const auto id = r.le(at, 2, "an extra field");
    const auto len = static_cast<std::size_t>(r.le(at + 2, 2, "an extra field"));
    if (id == 1) {
      std::size_t p = at + 4;
      for (std::uint64_t* v : {&usize, &csize, &offset}) {
        if (*v != kFull32) continue;
        if (p + 8 > at + 4 + len) {
          fail(r.source(), "member '" + m.name + "': ZIP64 extra field too short");
        }
        *v = r.le(p, 8, "a ZIP64 extra field");
        p += 8;
      }
      return;
    }
    at += 4 + len;
  }
}

void inflate_into(const Reader& r, const ZipMember& m, const unsigned char* in,
                  std::vector<unsigned char>& out) {
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) fail(r.source(), "zlib initialisation failed");
  std::size_t in_done = 0;
  std::size_t out_done = 0;
  int rc = Z_OK;
  constexpr std::size_t kChunk = std::numeric_limits<uInt>::max();
  while (rc == Z_OK) {
    zs.next_in = const_cast<unsigned char*>(in + in_done);  // zlib's API is not const
    zs.avail_in = static_cast<uInt>(std::min(kChunk, m.compressed_size - in_done));
    zs.next_out = out.data() + out_done;
    zs.avail_out = static_cast<uInt>(std::min(kChunk, out.size() - out_done));
    const uInt in_before = zs.avail_in;
    const uInt out_before = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    in_done += in_before - zs.avail_in;
    out_done += out_before - zs.avail_out;
    if (rc == Z_OK && in_before == zs.avail_in && out_before == zs.avail_out) rc = Z_BUF_ERROR;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || out_done != out.size()) {
    fail(r.source(), "member '" + m.name + "': corrupt deflate data (expected " +
                         std::to_string(out.size()) + " bytes, got " + std::to_string(out_done) +
                         (rc == Z_STREAM_END ? ")" : " before an error: truncated?)"));
  }
}

}  // namespace

std::vector<ZipMember> zip_members(const std::string& source, const unsigned char* data,
                                   std::size_t size) {
  const Reader r(source, data, size);
  const Directory d = find_directory(r);
  std::vector<ZipMember> members;
  std::size_t at = as_size(r, d.offset, "central directory offset");
  for (std::uint64_t i = 0; i < d.entries; ++i) {
    if (r.le(at, 4, "a central directory entry") != kDirectoryEntry) {
      fail(source,
           "not a valid .npz/ZIP archive (bad central directory entry " + std::to_string(i) + ")");
    }
    ZipMember m;
    m.flags = static_cast<unsigned>(r.le(at + 8, 2, "a directory entry"));
    m.method = static_cast<unsigned>(r.le(at + 10, 2, "a directory entry"));
    m.crc = static_cast<unsigned long>(r.le(at + 16, 4, "a directory entry"));
    std::uint64_t csize = r.le(at + 20, 4, "a directory entry");
    std::uint64_t usize = r.le(at + 24, 4, "a directory entry");
    const auto name_len = static_cast<std::size_t>(r.le(at + 28, 2, "a directory entry"));
    const auto extra_len = static_cast<std::size_t>(r.le(at + 30, 2, "a directory entry"));
    const auto comment_len = static_cast<std::size_t>(r.le(at + 32, 2, "a directory entry"));
    std::uint64_t offset = r.le(at + 42, 4, "a directory entry");
    (void)r.le(at + 46, name_len + extra_len + comment_len, "a member name");
    m.name.assign(reinterpret_cast<const char*>(data + at + 46), name_len);
    apply_zip64(r, at + 46 + name_len, extra_len, m, usize, csize, offset);
    m.compressed_size = as_size(r, csize, "member size");
    m.local_offset = as_size(r, offset, "member offset");
    if (usize > std::numeric_limits<std::size_t>::max() / 2) {
      fail(source, "member '" + m.name + "': absurd size " + std::to_string(usize));
    }
    m.size = static_cast<std::size_t>(usize);
    members.push_back(m);
    at += 46 + name_len + extra_len + comment_len;
  }
  return members;
}

std::vector<unsigned char> zip_extract(const std::string& source, const unsigned char* data,
                                       std::size_t size, const ZipMember& m) {
  const Reader r(source, data, size);
  const std::string what = "member '" + m.name + "': ";
  if ((m.flags & 1u) != 0) fail(source, what + "encrypted ZIP members are not supported");
  if (m.method != 0 && m.method != 8) {
    fail(source, what + "compression method " + std::to_string(m.method) +
                     " is not supported (expected 0 stored or 8 deflated)");
  }
  if (r.le(m.local_offset, 4, "a local header") != kLocalHeader) {
    fail(source, what + "bad local header");
  }
  const auto name_len = static_cast<std::size_t>(r.le(m.local_offset + 26, 2, "a local header"));
  const auto extra_len = static_cast<std::size_t>(r.le(m.local_offset + 28, 2, "a local header"));
  const std::size_t begin = m.local_offset + 30 + name_len + extra_len;
  if (begin > size || m.compressed_size > size - begin) {
    fail(source, what + "data run past the end of the file (truncated?)");
  }
  if (m.method == 0 && m.size != m.compressed_size) {
    fail(source, what + "stored member whose sizes differ");
  }
  if (m.method == 8 && m.size > (std::uint64_t{m.compressed_size} + 1) * kMaxDeflateRatio) {
    fail(source, what + "claims " + std::to_string(m.size) + " bytes from " +
                     std::to_string(m.compressed_size) + " deflated bytes (impossible)");
  }
  std::vector<unsigned char> out(m.size);
  if (m.method == 0) {
    std::copy(data + begin, data + begin + m.size, out.begin());
  } else {
    inflate_into(r, m, data + begin, out);
  }
  if (crc32(out.data(), out.size()) != m.crc) {
    fail(source, what + "CRC-32 mismatch (the archive is corrupt)");
  }
  return out;
}

}  // namespace octasim::models
