// Helpers shared by the fuzz targets (tests/fuzz): the parsers under test that read files by
// path get the input through a scratch directory of their own, removed when the process exits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace octasim::fuzz {

// A directory private to this process (created on first use, removed at exit): in /dev/shm
// when there is one (a file written and read back there takes ~30 us, on a disk-backed /tmp
// milliseconds, which would bound a target to a few hundred executions per second).
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::error_code ec;
    const std::filesystem::path base =
        std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0
            ? std::filesystem::path("/dev/shm")
            : std::filesystem::temp_directory_path();
    std::string tmpl = (base / "octasim-fuzz-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    std::atexit([] {
      std::error_code cleanup_error;
      std::filesystem::remove_all(scratch_dir(), cleanup_error);
    });
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

// Writes `size` bytes to `name` in the scratch directory; returns its path.
inline std::string write_scratch(const std::string& name, const std::uint8_t* data,
                                 std::size_t size) {
  const std::string path = (scratch_dir() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) std::abort();
  return path;
}

inline std::string write_scratch(const std::string& name, const std::string& text) {
  return write_scratch(name, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
}

// An input the code under test refused with the error it documents: nothing to do, except
// with OCTASIM_FUZZ_VERBOSE set (checking seeds and regression inputs), print the message.
inline void rejected(const std::exception& e) {
  static const bool verbose = std::getenv("OCTASIM_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "  rejected: %s\n", e.what());
}

}  // namespace octasim::fuzz
