// The built-in demo (`octasim`, `octasim demo`, `make run`): three NVDLA layers on deterministic
// pseudo-random INT8 data, programmed by octasim's own firmware and recorded as an NVDLA trace
// with golden CRCs and statistics computed by the models/ reference ops:
//
//   SDP  8x8x16: per-channel INT16 bias + ReLU, requantize y = sat(round((x * 141) >> 7))
//   PDP  2x2 pooling (max, or average), stride 2 -> 4x4x16
//   CDP  LRN over 5 channels, y = x * (2 + 1e-4/5 * sum x^2)^-0.75 through the LUT
//
// Layouts are nv_small's (8-byte memory atoms); every surface lives in pri_mem at 0x8000_0000+.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "firmware/dla/pdp.hpp"
#include "firmware/driver/trace_writer.hpp"

namespace octasim::firmware {

struct DemoOptions {
  PoolMethod pool = PoolMethod::kMax;
  std::uint32_t seed = 20240601;  // std::mt19937 seed of the input and bias data
};

// The trace's file name inside the demo directory.
inline constexpr const char* kDemoTraceName = "demo.cfg";

struct DemoSummary {
  std::vector<std::string> layers;  // one line per layer: what it computes
  std::string counters;             // the statistics registers the trace checks, and their values
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
