// The fuzz targets' main outside libFuzzer (the gcc release and sanitizer builds): calls
// LLVMFuzzerTestOneInput once per file named on the command line, or per file of a directory
// named there (sorted, hidden files skipped), so ctest replays the seed corpus and the regression
// inputs. Exit 0 when every input ran (a crash or sanitizer report ends the process), 2 on a
// missing file.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

void run_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>()};
  std::fprintf(stderr, "replay %s (%zu bytes)\n", path.c_str(), bytes.size());
  // A copy of exactly the input's size, so a read past its end is caught by ASan.
  std::vector<std::uint8_t> copy(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(copy.empty() ? nullptr : copy.data(), copy.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argv[0]);
    return 2;
  }
  std::size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg = argv[i];
    if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg)) {
        // Skips hidden files (.keep holds an empty regressions directory in git).
        if (e.is_regular_file() && e.path().filename().string()[0] != '.') {
          files.push_back(e.path());
        }
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) run_file(f);
      count += files.size();
    } else if (std::filesystem::is_regular_file(arg)) {
      run_file(arg);
      ++count;
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", arg.c_str());
      return 2;
    }
  }
  std::fprintf(stderr, "replayed %zu inputs\n", count);
  return 0;
}
