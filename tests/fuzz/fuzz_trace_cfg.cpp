// Fuzz target: NVDLA's .cfg trace syntax (sim/trace/trace_parser.cpp and the command table's
// parse functions). The trace sits in a scratch directory that holds the data files a trace
// may name (input.dat, golden.dat, pb.dat), so mem_load / check_file / ppu_submit lines parse to
// the end. A malformed trace must give TraceError, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/trace/trace.hpp"
#include "tests/fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = [] {
    const char* const packet = "{\n{offset:0x0, size:4, payload:0x01 0x02 0x03 0x04},\n}\n";
    for (const char* name : {"input.dat", "golden.dat", "pb.dat"}) {
      octasim::fuzz::write_scratch(name, packet);
    }
    return (octasim::fuzz::scratch_dir() / "fuzz.cfg").string();
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const octasim::trace::Trace t = octasim::trace::parse_trace(text, path);
    for (const octasim::trace::Command& c : t.commands) (void)octasim::trace::op_name(c.op);
  } catch (const octasim::trace::TraceError& e) {
    octasim::fuzz::rejected(e);
  }
  return 0;
}
