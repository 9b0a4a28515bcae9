// Fuzz target: the .txn traces of NVDLA's first release (sim/trace/txn_reader.cpp) and their
// plusargs.txt. The trace sits in a scratch directory holding a surface file (in.dat, 16 bytes)
// and a dump (out.dat, 16 bytes at 0x80000000) that load_mem / dump_mem lines may name. A
// malformed trace must give TraceError, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/trace/trace.hpp"
#include "sim/trace/txn_reader.hpp"
#include "tests/fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = [] {
    const std::string bytes =
        "0x00 0x01 0x02 0x03 0x04 0x05 0x06 0x07 0x08 0x09 0x0a 0x0b 0x0c 0x0d 0x0e 0x0f\n";
    octasim::fuzz::write_scratch("in.dat", "Data_size = 0x10\nW = 4\nH = 1\nC = 4\n" + bytes);
    octasim::fuzz::write_scratch("out.dat",
                                 "dumped memory,start_address=0x80000000 size=0x10\nmemory "
                                 "type:dram\n====\n" +
                                     bytes + "dump done\n");
    return (octasim::fuzz::scratch_dir() / "input.txn").string();
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  octasim::trace::TxnOptions options;
  try {
    options = octasim::trace::parse_plusargs(text, "plusargs.txt");
  } catch (const octasim::trace::TraceError& e) {
    octasim::fuzz::rejected(e);
  }
  try {
    (void)octasim::trace::parse_txn(text, path, options);
  } catch (const octasim::trace::TraceError& e) {
    octasim::fuzz::rejected(e);
  }
  return 0;
}
