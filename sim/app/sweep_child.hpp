// `octasim sweep`'s simulations: each a child octasim (SystemC elaborates one design per
// process) started with posix_spawn (no fork: safe inside an MPI process), in its own process
// group, killed when it outlives --timeout. A pool runs up to N of them at once.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/app/sweep_plan.hpp"

namespace octasim::app::sweep {

struct RunSettings {
  std::string temp_dir;  // the children's report and stderr files
  double timeout = 0;    // host seconds; 0: none
  std::uint64_t timeout_cycles = 50'000'000;
  std::vector<std::string> net_args;
  int rank = 0;
};

// The child's command line for `job` (argv[0] "octasim"), writing its report to `report`.
[[nodiscard]] std::vector<std::string> child_args(const Job& job, const RunSettings& s,
                                                  const std::string& report);

// The row of a finished child: `status` as waitpid gives it, `err` its stderr, `report` the JSON
// file it wrote (read only when it exited 0 or 1).
[[nodiscard]] Row make_row(const Job& job, int status, const std::string& err,
                           const std::string& report, double seconds, int rank);
// The row of a child killed for its timeout, or that could not be started.
[[nodiscard]] Row error_row(const Job& job, const std::string& message, double seconds, int rank);

// Runs up to `slots` children at once; never blocks.
class Pool {
 public:
  Pool(unsigned slots, RunSettings settings);
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool();

  [[nodiscard]] unsigned free_slots() const;
  [[nodiscard]] bool idle() const { return running_.empty(); }
  void start(const Job& job);
  // Rows of the children that ended since the last call (a child past its timeout is killed
  // and gives an error row).
  [[nodiscard]] std::vector<Row> collect();
  // Kills every running child (their rows are dropped).
  void kill_all();

 private:
  struct Running {
    Job job;
    pid_t pid = -1;
    std::string report, err;
    std::string spawn_error;  // why posix_spawn failed (pid -1)
    std::chrono::steady_clock::time_point started;
  };
  unsigned slots_;
  RunSettings settings_;
  std::vector<Running> running_;
};

}  // namespace octasim::app::sweep
