// Reading members of a ZIP archive held in memory — what NumPy's .npz files are (np.savez:
// stored members; np.savez_compressed: deflated members). ZIP64 sizes and offsets are
// understood (NumPy writes its members with ZIP64 extra fields). Encrypted, multi-disk and
// other compression methods are refused.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace octasim::models {

struct ZipMember {
  std::string name;
  std::size_t local_offset = 0;     // of its local file header
  std::size_t compressed_size = 0;  // bytes in the archive
  std::size_t size = 0;             // bytes once extracted
  unsigned method = 0;              // 0 stored, 8 deflated
  unsigned flags = 0;
  unsigned long crc = 0;
};

// Parses the central directory of `data` (the whole archive). `source` names the archive in
// errors (TensorFileError, one line, "source: what was expected").
[[nodiscard]] std::vector<ZipMember> zip_members(const std::string& source,
                                                 const unsigned char* data, std::size_t size);

// The member's bytes, its CRC-32 checked. Deflated members need zlib; a size the compressed
// data could not produce (more than 1032 times it) is refused before allocating.
[[nodiscard]] std::vector<unsigned char> zip_extract(const std::string& source,
                                                     const unsigned char* data, std::size_t size,
                                                     const ZipMember& member);

}  // namespace octasim::models
