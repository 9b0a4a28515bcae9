// Reading IDX files, the format of the MNIST and Fashion-MNIST data sets: the bytes 00 00, a type
// byte, the number of dimensions, each dimension as a big-endian uint32, then the elements in C
// order, big-endian. Plain or gzip-compressed (recognised by the gzip magic 1f 8b, not by the
// file's name; concatenated gzip members are read as one stream).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "models/io/tensor_file.hpp"  // TensorFileError

namespace octasim::models {

// The element types IDX defines (the type byte).
enum class IdxType : std::uint8_t {
  kUInt8 = 0x08,
  kInt8 = 0x09,
  kInt16 = 0x0B,
  kInt32 = 0x0C,
  kFloat32 = 0x0D,
  kFloat64 = 0x0E
};

// "ubyte", "byte", "short", "int", "float", "double".
[[nodiscard]] const char* idx_type_name(IdxType t);
[[nodiscard]] inline bool is_float(IdxType t) {
  return t == IdxType::kFloat32 || t == IdxType::kFloat64;
}

struct IdxArray {
  IdxType type = IdxType::kUInt8;
  std::vector<std::size_t> shape;  // as read (axis 0 cut to max_items); empty for 0 dimensions
  std::size_t file_items = 0;      // axis 0 of the file (1 for 0 dimensions)
  // Elements in C order: integer types in `ints` (exact), float types in `floats` (float64
  // rounded to nearest-even float32, beyond FP32's range to +-infinity); the other is empty.
  std::vector<std::int64_t> ints;
  std::vector<float> floats;

  [[nodiscard]] std::size_t elements() const {
    return is_float(type) ? floats.size() : ints.size();
  }
  // Every element as float32 (integers of more than 24 bits rounded), for feeding a network.
  [[nodiscard]] std::vector<float> as_floats() const;
};

inline constexpr std::size_t kIdxAllItems = std::numeric_limits<std::size_t>::max();

// Reads `path`, keeping only the first `max_items` entries along axis 0 (all when the file has
// fewer). The whole file is checked either way. Throws TensorFileError (one line starting with the
// path) for a missing file, a bad magic, an unknown type, a truncated header or data section,
// bytes after the data, and corrupt, truncated or trailing gzip data.
[[nodiscard]] IdxArray read_idx(const std::string& path, std::size_t max_items = kIdxAllItems);

}  // namespace octasim::models
