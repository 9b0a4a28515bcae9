// Helpers shared by the sim/ unit tests: a private temporary directory for synthetic traces and
// .dat files, and a reference CRC-32 computed bit by bit (independent of models::crc32).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace octasim::test {

class TempDir {
 public:
  // `tag` (optional) names the directory, for a reader of /tmp.
  explicit TempDir(const std::string& tag = "") {
    static std::atomic<unsigned> counter{0};
    std::random_device rd;
    path_ =
        std::filesystem::temp_directory_path() /
        ("octasim_tests_" + (tag.empty() ? std::string() : tag + "_") + std::to_string(::getpid()) +
         "_" + std::to_string(counter++) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::string str() const { return path_.string(); }

  // Writes `text` to `name` inside the directory and returns the full path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out << text;
    return p.string();
  }

 private:
  std::filesystem::path path_;
};

// CRC-32 as NVDLA's check_crc: reflected polynomial 0xEDB88320, init 0xFFFFFFFF, final
// inversion, over the bytes in memory order. Bit by bit on purpose.
inline std::uint32_t reference_crc32(const std::vector<std::uint8_t>& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const std::uint8_t b : bytes) {
    crc ^= b;
    for (int i = 0; i < 8; ++i) crc = (crc & 1u) != 0 ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
  }
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace octasim::test
