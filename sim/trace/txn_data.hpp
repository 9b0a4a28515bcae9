// The data files of NVDLA's first-release trace-player tests (.txn traces): a surface file
// loaded by load_mem, and the memory dump (output_feature_map.dat) the test is checked against.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace octasim::trace {

// A load_mem file: a few "Key = value" header lines (Data_size, Data_type, W, H, C, strides,
// Precision; '#' starts a comment), then whitespace-separated 0x.. bytes.
struct V1Surface {
  std::map<std::string, std::string> header;
  std::vector<std::uint8_t> bytes;
  int last_line = 0;  // the file's last line, for "holds only N bytes" errors
};
// Throws TraceError "file:line: ..." on a malformed line, or when the file holds fewer bytes
// than its Data_size header says.
[[nodiscard]] V1Surface read_v1_surface(const std::string& path);

// A dump: "dumped memory,start_address=0x.. size=0x..", "memory type:..", "====" rules and
// "dump done" around whitespace-separated 0x.. bytes — exactly `size` of them.
struct V1Dump {
  std::uint64_t start = 0;
  std::uint64_t size = 0;
  std::vector<std::uint8_t> bytes;
};
[[nodiscard]] V1Dump read_v1_dump(const std::string& path);

}  // namespace octasim::trace
