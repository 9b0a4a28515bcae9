// Reading tensors from files: NumPy .npy (float16/float32/float64, any shape, C order; integers
// on request) and raw little-endian float32. Values arrive as float32 (float64 is rounded to
// nearest-even; values beyond the FP32 range become infinite, which the quantizers then reject).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace octasim::models {

// A malformed or unreadable tensor file. what() starts with the path and says what was
// expected, on one line.
class TensorFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The whole file, or TensorFileError ("path: cannot open file").
[[nodiscard]] std::vector<char> read_file_bytes(const std::string& path);

struct Tensor {
  std::vector<std::size_t> shape;  // empty for a 0-d array (one element)
  std::vector<float> values;       // C order
  std::string dtype;               // "float32", "int64", "uint8", ... as stored in the file
};

// Parses a .npy file (format versions 1.0, 2.0 and 3.0). Accepts descr '<f2', '<f4', '<f8'
// and their big-endian forms; rejects bad magic, other dtypes, Fortran order, a truncated
// data section and bytes after it.
// With `integers`, also signed/unsigned integer arrays of 1, 2, 4 or 8 bytes ('|u1', '<i8', ...),
// their values converted to float (exact up to 2^24: labels, pixels).
[[nodiscard]] Tensor read_npy(const std::string& path, bool integers = false);
// A raw file of little-endian float32 values; `shape` (if not empty) must match the count.
[[nodiscard]] Tensor read_raw_float32(const std::string& path,
                                      const std::vector<std::size_t>& shape = {});
// .npy when the file starts with the NumPy magic or its name ends in ".npy" (so a .npy
// file with a bad magic is reported as such), raw float32 otherwise.
[[nodiscard]] Tensor read_tensor_file(const std::string& path,
                                      const std::vector<std::size_t>& raw_shape = {});

// Writes a float32 .npy file (version 1.0, little-endian, C order).
void write_npy_float32(const std::string& path, const std::vector<std::size_t>& shape,
                       const std::vector<float>& values);

}  // namespace octasim::models
