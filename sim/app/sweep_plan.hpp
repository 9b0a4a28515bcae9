// `octasim sweep`: what runs (the plan: inputs x configurations x grid points) and what each run
// leaves (a row of the results table). Shared by the local pool, the MPI dealer and the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/app/commands.hpp"

namespace octasim::app::sweep {

// One --grid KEY=V1,V2,...: a configuration key and its values as given.
struct GridAxis {
  std::string key;
  std::vector<std::string> values;
};

// One simulation: an input on a configuration at one grid point.
struct Job {
  std::size_t index = 0;          // position in the sweep's enumeration: the output's row order
  std::string kind;               // "trace" or "network"
  std::string input;              // the path (a trace's .cfg/.txn, a model's .onnx)
  std::string config;             // the --configs entry as given
  std::vector<std::string> grid;  // one value per GridAxis
  std::string config_arg;         // the child's --config: `config`, or the derived JSON file
  double estimate = 0;            // expected host seconds (or bytes before any is known)
};

struct Plan {
  std::vector<GridAxis> axes;
  std::vector<Job> jobs;  // in enumeration order (jobs[i].index == i)
};

// Expands the inputs (a directory: every .cfg and .txn below it, sorted), loads and checks every
// configuration and grid point, writing each grid point's configuration as JSON into `temp_dir`.
// User errors (missing input, unknown configuration, unknown grid key, bad value) throw
// UsageError before anything runs.
[[nodiscard]] Plan make_plan(const SweepOptions& opts, const std::string& temp_dir);

// What one simulation gave. Optional numbers are empty when the run did not produce them (an
// error row, a trace's fps).
struct Row {
  std::size_t index = 0;  // the job's index in this sweep's plan (not written)
  std::string input, kind, config;
  std::vector<std::string> grid;
  std::string result;  // pass, fail, refused or error
  std::string message;
  std::optional<std::uint64_t> trace_cycles, compute_cycles;
  std::optional<double> fps;
  std::optional<double> mac_utilization;  // device MACs / (cycles x atomic-C x atomic-K)
  std::optional<std::uint64_t> peak_macs_per_cycle;
  std::optional<double> peak_dram_bytes_per_cycle;
  std::optional<std::uint64_t> dram_bytes;   // read + written
  std::optional<std::uint64_t> saturations;  // every *SATURATION* status register + PPU kernels
  double host_seconds = 0;
  int rank = 0;
};

// The key a row is found by on --resume: input, configuration and grid values.
[[nodiscard]] std::string row_key(const std::string& input, const std::string& config,
                                  const std::vector<std::string>& grid);

}  // namespace octasim::app::sweep
