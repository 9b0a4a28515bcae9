// Writes the nv_full FP16 memory-to-memory SDP traces (sdp_fp16_layer.hpp) into the directory
// given as the only argument, for `octasim run --config nv_full` in ctest: sdp_fp16_ew.cfg (BS
// per-channel multiply-add, EW per-element add) and sdp_fp16_mul.cfg (EW per-channel multiply,
// FP32 register add).
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "tests/fp16/sdp_fp16_layer.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gen_sdp_fp16_trace DIR\n");
    return 2;
  }
  try {
    const std::string dir = argv[1];
    std::filesystem::create_directories(dir + "/ew");
    std::filesystem::create_directories(dir + "/mul");
    octasim::test::Fp16SdpLayer ew;
    ew.fill(20240611);
    std::printf("%s\n",
                octasim::test::write_sdp_fp16_trace(ew, dir + "/ew", "sdp_fp16_ew.cfg").c_str());
    octasim::test::Fp16SdpLayer mul;
    mul.ew_mul_per_channel = true;
    mul.ew_add = 0.1f;
    mul.fill(20240612);
    std::printf("%s\n",
                octasim::test::write_sdp_fp16_trace(mul, dir + "/mul", "sdp_fp16_mul.cfg").c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gen_sdp_fp16_trace: %s\n", e.what());
    return 1;
  }
  return 0;
}
