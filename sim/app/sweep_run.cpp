// `octasim sweep`'s driver pieces (sweep_run.hpp).
#include "sim/app/sweep_run.hpp"

#include <signal.h>  // sigtimedwait

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <unordered_map>

#include <fmt/core.h>

#include "sim/app/sweep_table.hpp"

namespace octasim::app::sweep {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_interrupt(int) {
  g_interrupted = 1;
}

// Expected host seconds per job from the previous rows (sweep_run.hpp: prepare).
void estimate(std::vector<Job>& jobs, const std::vector<Row>& previous) {
  std::unordered_map<std::string, double> by_key;
  std::unordered_map<std::string, std::pair<double, int>> by_input;
  for (const Row& r : previous) {
    by_key[row_key(r.input, r.config, r.grid)] = r.host_seconds;
    auto& [sum, n] = by_input[r.input];
    sum += r.host_seconds;
    n += 1;
  }
  // Seconds per byte over the inputs with a known time: unknown inputs' bytes in seconds.
  double seconds = 0, bytes = 0;
  std::set<std::string> counted;
  for (const Job& j : jobs) {
    const auto it = by_input.find(j.input);
    if (it != by_input.end() && counted.insert(j.input).second) {
      seconds += it->second.first / it->second.second;
      bytes += j.estimate;
    }
  }
  const double per_byte = seconds > 0 && bytes > 0 ? seconds / bytes : 1.0;
  for (Job& j : jobs) {
    const auto key = by_key.find(row_key(j.input, j.config, j.grid));
    const auto input = by_input.find(j.input);
    if (key != by_key.end()) {
      j.estimate = key->second;
    } else if (input != by_input.end()) {
      j.estimate = input->second.first / input->second.second;
    } else {
      j.estimate *= per_byte;
    }
  }
}

std::string point_name(const Plan& plan, const Row& row) {
  std::string s;
  for (std::size_t a = 0; a < plan.axes.size() && a < row.grid.size(); ++a) {
    s += fmt::format("{}{}={}", a == 0 ? " [" : ", ", plan.axes[a].key, row.grid[a]);
  }
  return s.empty() ? s : s + "]";
}

}  // namespace

TempDir::TempDir() {
  const char* env = std::getenv("TMPDIR");
  std::string pattern = fmt::format("{}/octasim-sweep-XXXXXX", env && *env ? env : "/tmp");
  if (mkdtemp(pattern.data()) == nullptr) {
    throw UsageError(fmt::format("{}: cannot create a temporary directory", pattern));
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

Setup prepare(const SweepOptions& opts, const std::string& temp_dir, bool writer) {
  Setup s;
  if (opts.jobs == 0) throw UsageError("--jobs: expected at least 1");
  if (opts.out.empty()) throw UsageError("--out: give the results file (.csv or .json)");
  (void)is_json_output(opts.out);
  s.plan = make_plan(opts, temp_dir);
  if (!writer) return s;

  std::vector<std::string> grid_keys;
  for (const GridAxis& a : s.plan.axes) grid_keys.push_back(a.key);
  std::vector<Row> previous;
  std::error_code ec;
  if (std::filesystem::is_directory(opts.out, ec)) {
    throw UsageError(fmt::format("--out {}: is a directory, expected a file name", opts.out));
  }
  if (std::filesystem::exists(opts.out, ec)) {
    try {
      previous = read_table(opts.out, grid_keys);
    } catch (const UsageError&) {
      if (opts.resume) throw;  // without --resume the file is only a hint for the estimates
    }
  }
  // The output's directory is writable: found now rather than after the sweep.
  write_table(opts.out + ".probe.csv", {}, {});
  std::filesystem::remove(opts.out + ".probe.csv", ec);

  std::vector<Job> jobs = s.plan.jobs;
  estimate(jobs, previous);
  std::set<std::string> done;
  if (opts.resume) {
    for (const Row& r : previous) done.insert(row_key(r.input, r.config, r.grid));
    s.kept = previous;
  }
  // Longest first (ties: the plan's order), so that the last jobs to start are short ones.
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Job& a, const Job& b) { return a.estimate > b.estimate; });
  for (Job& j : jobs) {
    if (done.count(row_key(j.input, j.config, j.grid)) == 0) s.pending.push_back(std::move(j));
  }
  return s;
}

Collector::Collector(const SweepOptions& opts, const Setup& setup)
    : opts_(opts), plan_(setup.plan), to_run_(setup.pending.size()) {
  for (const GridAxis& a : plan_.axes) grid_keys_.push_back(a.key);
  std::unordered_map<std::string, std::size_t> index;
  for (const Job& j : plan_.jobs) index[row_key(j.input, j.config, j.grid)] = j.index;
  for (const Row& r : setup.kept) {
    const auto it = index.find(row_key(r.input, r.config, r.grid));
    if (it == index.end()) {
      extra_.push_back(r);
    } else if (rows_.count(it->second) == 0) {
      Row copy = r;
      copy.index = it->second;
      rows_.emplace(it->second, std::move(copy));
      ++resumed_;
    }
  }
  if (resumed_ > 0) {
    fmt::print("octasim sweep: {} of {} rows already in {} (--resume), {} to run\n", resumed_,
               plan_.jobs.size(), opts_.out, to_run_);
  } else {
    fmt::print("octasim sweep: {} simulations\n", to_run_);
  }
  std::fflush(stdout);
}

void Collector::add(Row row) {
  ++done_;
  const std::string cycles =
      row.trace_cycles ? fmt::format(", {} cycles", *row.trace_cycles) : std::string();
  const std::string fps = row.fps ? fmt::format(", {:.1f} fps", *row.fps) : std::string();
  const std::string message = row.message.empty() ? std::string() : ": " + row.message;
  fmt::print("[{}/{}] {} on {}{}: {}{}{}{} (rank {}, {:.2f} s)\n", done_, to_run_, row.input,
             row.config, point_name(plan_, row), row.result, message, cycles, fps, row.rank,
             row.host_seconds);
  std::fflush(stdout);
  rows_[row.index] = std::move(row);
  dirty_ = true;
  write(false);
}

void Collector::write(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && (!dirty_ || now - written_ < std::chrono::seconds(2))) return;
  std::vector<Row> rows;
  rows.reserve(rows_.size() + extra_.size());
  for (const auto& [index, row] : rows_) rows.push_back(row);
  rows.insert(rows.end(), extra_.begin(), extra_.end());
  write_table(opts_.out, grid_keys_, rows);
  written_ = now;
  dirty_ = false;
}

int Collector::finish() {
  write(true);
  std::map<std::string, std::size_t> results;
  for (const auto& [index, row] : rows_) results[row.result] += 1;
  std::string counts;
  for (const char* r : {"pass", "fail", "refused", "error"}) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", results[r], r);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  fmt::print("octasim sweep: {} rows ({}) in {}; {} simulations in {:.1f} s\n",
             rows_.size() + extra_.size(), counts, opts_.out, done_, seconds);
  return 0;
}

int Collector::interrupted() {
  write(true);
  fmt::print(stderr,
             "octasim: sweep interrupted: {} of {} simulations done, their rows are in {}; run "
             "the same command with --resume to do the rest\n",
             done_, to_run_, opts_.out);
  return 1;
}

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a wait ends at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // SIGCHLD stays pending for idle_wait (its default action is to ignore it anyway).
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  sigprocmask(SIG_BLOCK, &child, nullptr);
}

bool interrupt_requested() {
  return g_interrupted != 0;
}

void idle_wait(long milliseconds) {
  // Until a child ends (SIGCHLD, blocked by install_interrupt_handlers) or the time passed.
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  const timespec pause{0, milliseconds * 1'000'000};
  (void)sigtimedwait(&child, nullptr, &pause);
}

bool run_local_turn(Pool& pool, std::deque<Job>& pending, Collector& collector) {
  bool busy = false;
  while (pool.free_slots() > 0 && !pending.empty()) {
    pool.start(pending.front());
    pending.pop_front();
    busy = true;
  }
  for (Row& row : pool.collect()) {
    collector.add(std::move(row));
    busy = true;
  }
  return busy;
}

int run_local(const SweepOptions& opts, Setup& setup, const std::string& temp_dir) {
  Collector collector(opts, setup);
  Pool pool(opts.jobs, RunSettings{temp_dir, opts.timeout, opts.timeout_cycles, opts.net_args, 0});
  while (!setup.pending.empty() || !pool.idle()) {
    if (interrupt_requested()) {
      pool.kill_all();
      return collector.interrupted();
    }
    if (!run_local_turn(pool, setup.pending, collector)) idle_wait();
  }
  return collector.finish();
}

}  // namespace octasim::app::sweep
