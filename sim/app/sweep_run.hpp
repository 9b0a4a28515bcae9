// `octasim sweep`'s driver pieces shared by the local run (--jobs) and the MPI dealer: the
// sweep's temporary directory, the setup (plan, rows already in the output, what is left to run,
// longest first), the collector that writes the output as rows arrive, and Ctrl-C / SIGTERM.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "sim/app/sweep_child.hpp"
#include "sim/app/sweep_plan.hpp"

namespace octasim::app::sweep {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Setup {
  Plan plan;
  std::vector<Row> kept;    // --resume: the output's rows, kept as they are
  std::deque<Job> pending;  // the jobs to run, longest expected first
};

// The plan, and on the process that writes the output (`writer`) the output's rows (--resume) and
// the order to run the rest in: each job's expected host time from the output's previous rows
// (same input and configuration, else the same input), else its input's bytes scaled by the
// seconds per byte the known inputs took.
[[nodiscard]] Setup prepare(const SweepOptions& opts, const std::string& temp_dir, bool writer);

// The rows as they arrive: a line per row on stdout, the output rewritten (atomically) at most
// every two seconds and at the end, rows in the plan's order, kept rows not in the plan after.
class Collector {
 public:
  Collector(const SweepOptions& opts, const Setup& setup);
  void add(Row row);
  void write(bool force);
  // The summary line and the exit status (0: every row is in the output).
  [[nodiscard]] int finish();
  // After Ctrl-C / SIGTERM: writes what there is and says how to go on; exit status 1.
  [[nodiscard]] int interrupted();

 private:
  const SweepOptions& opts_;
  const Plan& plan_;
  std::vector<std::string> grid_keys_;
  std::map<std::size_t, Row> rows_;  // by job index
  std::vector<Row> extra_;           // kept rows of pairs not in this plan
  std::size_t to_run_ = 0, done_ = 0, resumed_ = 0;
  bool dirty_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point written_ = started_;
};

// Ctrl-C and SIGTERM (Slurm's time limit) set a flag the loops poll instead of killing the
// sweep: the children are killed and the rows so far written. SIGCHLD is blocked, for idle_wait.
void install_interrupt_handlers();
[[nodiscard]] bool interrupt_requested();

// The loops' pace when nothing happened: returns when a child ends, after `milliseconds` (< 1000)
// at most.
void idle_wait(long milliseconds = 5);

// One turn of a scheduling loop on this process: starts pending jobs while `pool` has free
// slots, hands finished rows to `collector`; true when anything happened.
bool run_local_turn(Pool& pool, std::deque<Job>& pending, Collector& collector);

// Runs the pending jobs with `slots` local children at a time (no MPI); returns the exit status.
[[nodiscard]] int run_local(const SweepOptions& opts, Setup& setup, const std::string& temp_dir);

}  // namespace octasim::app::sweep
