// Fuzz target: NumPy .npy decoding (models/io/npy_file.cpp) and .npz archives
// (models/io/zip_archive.cpp): the input decoded as a .npy with and without integer dtypes, and
// as a ZIP archive whose members are each extracted and decoded. A malformed file must give
// TensorFileError, nothing else.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "models/io/tensor_file.hpp"
#include "models/io/zip_archive.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using octasim::models::TensorFileError;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  for (const bool integers : {false, true}) {
    try {
      (void)octasim::models::decode_npy("fuzz.npy", data, size, integers);
    } catch (const TensorFileError& e) {
      octasim::fuzz::rejected(e);
    }
  }
  try {
    const auto members = octasim::models::zip_members("fuzz.npz", data, size);
    for (const octasim::models::ZipMember& m : members) {
      try {
        const std::vector<unsigned char> bytes =
            octasim::models::zip_extract("fuzz.npz", data, size, m);
        (void)octasim::models::decode_npy("fuzz.npz:" + m.name, bytes.data(), bytes.size(), true);
      } catch (const TensorFileError& e) {
        octasim::fuzz::rejected(e);
      }
    }
  } catch (const TensorFileError& e) {
    octasim::fuzz::rejected(e);
  }
  return 0;
}
