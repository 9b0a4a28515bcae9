// Reading tensors from files: NumPy .npy (format versions 1.0-3.0; float16/32/64, and on request
// int8..int64, uint8..uint64 and bool; either byte order; C or Fortran order), arrays of NumPy
// .npz archives (stored or deflated members; "archive.npz:name" picks one), and raw
// little-endian float32. Values arrive as float32 in C order (float64 and integers beyond 2^24
// are rounded to nearest-even, as NumPy's astype(float32) does; values beyond the FP32 range
// become infinite, which the quantizers then reject).
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

namespace io_detail {
// Throws TensorFileError("path: what") (the readers' one way to fail).
[[noreturn]] inline void fail(const std::string& path, const std::string& what) {
  throw TensorFileError(path + ": " + what);
}
}  // namespace io_detail

// The whole file, or TensorFileError ("path: cannot open file").
[[nodiscard]] std::vector<char> read_file_bytes(const std::string& path);

struct Tensor {
  std::vector<std::size_t> shape;  // empty for a 0-d array (one element)
  std::vector<float> values;       // C order
  std::string dtype;               // "float32", "int64", "uint8", ... as stored in the file
};

inline constexpr char kNpyMagic[] = "\x93NUMPY";
inline constexpr std::size_t kNpyMagicLen = 6;

// Decodes the bytes of a .npy file (format versions 1.0, 2.0 and 3.0); `source` names them in
// errors. Accepts descr '<f2', '<f4', '<f8' and their big-endian forms; C or Fortran order
// (a Fortran-order array is returned in C order); rejects bad magic, other dtypes (object
// arrays, structured arrays, complex, strings: each named), a shape whose bytes cannot be
// addressed, a truncated data section and bytes after it — before allocating the values.
// With `integers`, also signed/unsigned integer arrays of 1, 2, 4 or 8 bytes ('|u1', '<i8', ...)
// and bool ('|b1', 0 or 1), their values converted to float (exact up to 2^24).
[[nodiscard]] Tensor decode_npy(const std::string& source, const unsigned char* data,
                                std::size_t size, bool integers);
// A .npy file, or an array of a .npz archive: "a.npz:x" (or "a.npz:x.npy") is array x of a.npz
// when no file is named "a.npz:x"; "a.npz" alone is its only array (an archive of several
// arrays is an error that lists them). Errors name "a.npz:x".
[[nodiscard]] Tensor read_npy(const std::string& path, bool integers = false);
// A raw file of little-endian float32 values; `shape` (if not empty) must match the count.
[[nodiscard]] Tensor read_raw_float32(const std::string& path,
                                      const std::vector<std::size_t>& shape = {});
// read_npy(path, integers = true) when the file starts with the NumPy or ZIP magic, its name
// ends in ".npy" or ".npz" (so a .npy file with a bad magic is reported as such) or names an
// .npz member; raw float32 otherwise.
[[nodiscard]] Tensor read_tensor_file(const std::string& path,
                                      const std::vector<std::size_t>& raw_shape = {});

// Writes a float32 .npy file (version 1.0, little-endian, C order).
void write_npy_float32(const std::string& path, const std::vector<std::size_t>& shape,
                       const std::vector<float>& values);

}  // namespace octasim::models
