// The built-in demo (`octasim`, `octasim demo`, `make run`): a small quantized network on
// deterministic pseudo-random INT8 data, programmed by octasim's own firmware and recorded as an
// NVDLA trace with golden CRCs and statistics computed by the models/ reference ops:
//
//   CONV 16x16x8 INT8 input, 3x3x8x16 INT8 kernels, padding 1 -> 16x16x16 INT32 sums, straight
//        into SDP (flying mode): per-channel INT16 bias + ReLU, requantize to INT8 with the
//        output convertor
//   PDP  2x2 pooling (max, or average), stride 2, reading the SDP output -> 8x8x16
//   CDP  LRN over 5 channels, y = x * (2 + 1e-4/5 * sum x^2)^-0.75 through the LUT
//   OCTAV the MSE-optimal clipping scalar of the CONV+SDP output for 4-bit unsigned codes,
//        computed in the device, auto-programs SDP, which requantizes that output; then the same
//        SDP with max-scaling fields, for comparison (clip, iterations, MSE in the summary)
//
// Layouts follow the hardware description (nv_small's by default: 8-byte memory atoms); every
// surface lives in pri_mem at 0x8000_0000+.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "firmware/dla/conv.hpp"
#include "firmware/dla/pdp.hpp"
#include "firmware/driver/trace_writer.hpp"

namespace octasim::firmware {

struct DemoOptions {
  PoolMethod pool = PoolMethod::kMax;
  std::uint32_t seed = 20240601;  // std::mt19937 seed of the input, weight and bias data
  ConvHardware hw;                // the configuration the trace is laid out for (nv_small)
};

// The trace's file name inside the demo directory.
inline constexpr const char* kDemoTraceName = "demo.cfg";

struct DemoSummary {
  std::vector<std::string> layers;  // one line per layer: what it computes
  std::string counters;             // the statistics registers the trace checks, and their values
  std::string quantization;         // OCTAV's clip next to max-scaling: clip, iterations, MSE
};

// Records the demo into `trace`.
DemoSummary build_demo(TraceWriter& trace, const DemoOptions& options);

struct DemoFiles {
  std::string trace_path;
  DemoSummary summary;
};

// Writes demo.cfg and its .dat files into `dir`, creating it if needed. Throws FirmwareError
// with one line when the directory cannot be created or a file cannot be written.
DemoFiles write_demo(const std::string& dir, const DemoOptions& options);

}  // namespace octasim::firmware
