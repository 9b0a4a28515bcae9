// Fuzz target: calibration tables (firmware/net/quant.cpp, read_calibration_table): JSON keyed
// by tensor name, octasim's or NVDLA's entry form. A malformed table must give
// CalibrationError, nothing else; a table it accepts must write back and read back the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "firmware/net/quant.hpp"
#include "tests/fuzz/fuzz_util.hpp"

using octasim::firmware::net::CalibrationError;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = octasim::fuzz::write_scratch("calibration.json", data, size);
  try {
    const auto table = octasim::firmware::net::read_calibration_table(path);
    const std::string back = (octasim::fuzz::scratch_dir() / "back.json").string();
    octasim::firmware::net::write_calibration_table(back, table);
    if (octasim::firmware::net::read_calibration_table(back).size() != table.size()) std::abort();
  } catch (const CalibrationError& e) {
    octasim::fuzz::rejected(e);
  }
  return 0;
}
