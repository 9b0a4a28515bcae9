// Fuzz target: memory data files — NVDLA's packet .dat (read_dat_file) and the first release's
// surface and dump files of .txn traces (read_v1_surface, read_v1_dump), the same bytes given
// to each. A malformed file must give TraceError, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/trace/trace.hpp"
#include "sim/trace/txn_data.hpp"
#include "tests/fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = octasim::fuzz::write_scratch("fuzz.dat", data, size);
  try {
    (void)octasim::trace::read_dat_file(path);
  } catch (const octasim::trace::TraceError& e) {
    octasim::fuzz::rejected(e);
  }
  try {
    (void)octasim::trace::read_v1_surface(path);
  } catch (const octasim::trace::TraceError& e) {
    octasim::fuzz::rejected(e);
  }
  try {
    (void)octasim::trace::read_v1_dump(path);
  } catch (const octasim::trace::TraceError& e) {
    octasim::fuzz::rejected(e);
  }
  return 0;
}
