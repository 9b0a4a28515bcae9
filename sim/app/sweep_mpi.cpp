// `octasim sweep` under MPI (sweep_mpi.hpp). Messages are JSON text:
//   worker -> rank 0 (kToDealer): {"rows": [...], "want": N, "done": false}: finished rows and
//     how many jobs the worker can start now (a reply follows when N > 0); "done": true once it
//     was told to stop and its last child ended.
//   rank 0 -> worker (kToWorker): {"jobs": [index, ...], "stop": bool}: job indices into the
//     plan every rank built from the same command line; "stop": no more jobs.
//   rank 0 -> worker (kBye): the sweep is over (MPI_Finalize next).
// Every wait polls (MPI_Iprobe, then a wait of 1 ms on rank 0, 5 ms elsewhere, cut short when a
// child ends) rather than blocking in MPI, whose blocking calls spin a core that the simulations
// need.
#include "sim/app/sweep_mpi.hpp"

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "sim/app/sweep_run.hpp"
#include "sim/app/sweep_table.hpp"

namespace octasim::app::sweep {
namespace {

constexpr int kToDealer = 1;
constexpr int kToWorker = 2;
constexpr int kBye = 3;
constexpr int kInterrupted = -1;

void send_text(int dest, int tag, const std::string& text) {
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, dest, tag, MPI_COMM_WORLD);
}

// A message with `tag` from `source` (MPI_ANY_SOURCE: any) if one has arrived.
std::optional<std::string> try_receive(int source, int tag, int* from = nullptr) {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &status);
  if (flag == 0) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(static_cast<std::size_t>(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (from != nullptr) *from = status.MPI_SOURCE;
  return text;
}

std::vector<std::string> grid_keys_of(const Plan& plan) {
  std::vector<std::string> keys;
  for (const GridAxis& a : plan.axes) keys.push_back(a.key);
  return keys;
}

// Rank 0: its own children plus every worker's requests, until every job has a row.
int deal(const SweepOptions& opts, Setup& setup, const std::string& temp_dir, int size) {
  Collector collector(opts, setup);
  Pool pool(opts.jobs, RunSettings{temp_dir, opts.timeout, opts.timeout_cycles, opts.net_args, 0});
  const std::vector<std::string> keys = grid_keys_of(setup.plan);
  int finished = 0;
  while (finished < size - 1 || !pool.idle() || !setup.pending.empty()) {
    if (interrupt_requested()) {
      pool.kill_all();
      (void)collector.interrupted();
      return kInterrupted;
    }
    bool busy = run_local_turn(pool, setup.pending, collector);
    int from = 0;
    while (const auto text = try_receive(MPI_ANY_SOURCE, kToDealer, &from)) {
      busy = true;
      const nlohmann::json m = nlohmann::json::parse(*text);
      for (const nlohmann::json& r : m.at("rows")) {
        collector.add(row_from_json(r, keys, fmt::format("a row from rank {}", from)));
      }
      if (m.value("done", false)) {
        ++finished;
        continue;
      }
      const unsigned want = m.value("want", 0U);
      if (want == 0) continue;
      nlohmann::json reply = {{"jobs", nlohmann::json::array()}, {"stop", false}};
      while (reply["jobs"].size() < want && !setup.pending.empty()) {
        reply["jobs"].push_back(setup.pending.front().index);
        setup.pending.pop_front();
      }
      reply["stop"] = reply["jobs"].size() < want;
      send_text(from, kToWorker, reply.dump());
    }
    // 1 ms: a worker's request waits at most that long (its SIGCHLD does not wake this rank).
    if (!busy) idle_wait(1);
  }
  for (int r = 1; r < size; ++r) send_text(r, kBye, "");
  return collector.finish();
}

// Any other rank: asks for jobs while it has free slots, sends each finished row back.
int work(const SweepOptions& opts, const Plan& plan, const std::string& temp_dir, int rank) {
  Pool pool(opts.jobs,
            RunSettings{temp_dir, opts.timeout, opts.timeout_cycles, opts.net_args, rank});
  const std::vector<std::string> keys = grid_keys_of(plan);
  nlohmann::json unsent = nlohmann::json::array();
  bool waiting = false, stopped = false;
  for (;;) {
    if (interrupt_requested()) {
      pool.kill_all();
      return kInterrupted;
    }
    bool busy = false;
    if (waiting) {
      if (const auto text = try_receive(0, kToWorker)) {
        const nlohmann::json reply = nlohmann::json::parse(*text);
        for (const nlohmann::json& index : reply.at("jobs")) {
          pool.start(plan.jobs.at(index.get<std::size_t>()));
        }
        stopped = reply.at("stop").get<bool>();
        waiting = false;
        busy = true;
      }
    }
    for (const Row& row : pool.collect()) {
      unsent.push_back(row_to_json(row, keys, true));
      busy = true;
    }
    if (!waiting && !stopped && pool.free_slots() > 0) {
      send_text(
          0, kToDealer,
          nlohmann::json{{"rows", unsent}, {"want", pool.free_slots()}, {"done", false}}.dump());
      unsent = nlohmann::json::array();
      waiting = true;
    } else if (stopped && (!unsent.empty() || pool.idle())) {
      const bool done = pool.idle();
      send_text(0, kToDealer, nlohmann::json{{"rows", unsent}, {"want", 0}, {"done", done}}.dump());
      unsent = nlohmann::json::array();
      if (done) break;
    }
    if (!busy) idle_wait(waiting ? 1 : 5);  // a reply comes within a millisecond or two
  }
  while (!try_receive(0, kBye)) {
    if (interrupt_requested()) return kInterrupted;
    idle_wait();
  }
  return 0;
}

// What every rank must agree on: each job's input, configuration and grid point, in order
// (FNV-1a). Ranks on nodes that see different files would otherwise run the wrong jobs.
std::uint64_t fingerprint(const Plan& plan) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const Job& j : plan.jobs) {
    for (const char c : row_key(j.input, j.config, j.grid) + '\n') {
      h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    }
  }
  return h;
}

// The setup on every rank; a user error on any rank stops all of them (exit status 2), the
// message printed once: by rank 0 when it has one, else by each rank that has.
std::optional<Setup> setup_all(const SweepOptions& opts, std::optional<TempDir>& temp, int rank) {
  std::optional<Setup> setup;
  std::string error;
  try {
    temp.emplace();
    setup = prepare(opts, temp->path(), rank == 0);
  } catch (const std::exception& e) {
    error = e.what();
  }
  int ok = error.empty() ? 1 : 0, root_ok = ok, all_ok = 0;
  unsigned long long print = setup ? fingerprint(setup->plan) : 0, root_print = print;
  MPI_Bcast(&root_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Bcast(&root_print, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  if (ok == 1 && root_ok == 1 && print != root_print) {
    error = fmt::format(
        "its sweep ({} simulations) differs from rank 0's: every rank must see the same inputs "
        "and configurations (a file system all nodes share)",
        setup->plan.jobs.size());
    ok = 0;
  }
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all_ok == 1) return setup;
  if (rank == 0 && !error.empty()) fmt::print(stderr, "octasim: error: {}\n", error);
  if (rank != 0 && root_ok == 1 && !error.empty()) {
    fmt::print(stderr, "octasim: error: rank {}: {}\n", rank, error);
  }
  return std::nullopt;
}

}  // namespace

int run_mpi(const SweepOptions& opts) {
  MPI_Init(nullptr, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int status = 0;
  {
    std::optional<TempDir> temp;
    std::optional<Setup> setup = setup_all(opts, temp, rank);
    if (!setup) {
      status = 2;
    } else {
      install_interrupt_handlers();
      // An error now (an unwritable output, a malformed message) ends every rank: MPI_Abort.
      try {
        status = rank == 0 ? deal(opts, *setup, temp->path(), size)
                           : work(opts, setup->plan, temp->path(), rank);
      } catch (const UsageError& e) {
        fmt::print(stderr, "octasim: error: {}\n", e.what());
        status = 2;
      } catch (const std::exception& e) {
        fmt::print(stderr, "octasim: internal error: rank {}: {}\n", rank, e.what());
        status = 3;
      }
      if (status == 2 || status == 3) {
        temp.reset();
        MPI_Abort(MPI_COMM_WORLD, status);
      }
    }
  }
  std::fflush(stdout);
  // Interrupted (Ctrl-C, SIGTERM from mpirun or Slurm): the other ranks may be anywhere, so no
  // collective MPI_Finalize; the launcher ends the job.
  if (status == kInterrupted) std::_Exit(1);
  MPI_Finalize();
  return status;
}

}  // namespace octasim::app::sweep
