// Writes the nv_full FP16 convolution trace (conv_fp16_trace.hpp) into the directory given as
// the only argument, for `octasim run --config nv_full` in ctest.
#include <cstdio>
#include <exception>
#include <filesystem>

#include "tests/fp16/conv_fp16_trace.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gen_conv_fp16_trace DIR\n");
    return 2;
  }
  try {
    std::filesystem::create_directories(argv[1]);
    octasim::test::Fp16ConvLayer layer;
    layer.fill(20240607);
    std::printf("%s\n", octasim::test::write_conv_fp16_trace(layer, argv[1]).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gen_conv_fp16_trace: %s\n", e.what());
    return 1;
  }
  return 0;
}
