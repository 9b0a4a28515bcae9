// `octasim sweep`: every (input, configuration, grid point) as a child octasim, one row each in
// a CSV or JSON table; alone with --jobs local children, under mpirun / srun with rank 0 dealing
// the work to every rank (sweep_mpi.cpp, when built with MPI).
#include <cstdlib>
#include <string>

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include "sim/app/commands.hpp"
#include "sim/app/sweep_mpi.hpp"
#include "sim/app/sweep_run.hpp"

namespace octasim::app {
namespace {

// The number of processes the launcher started when this one runs under mpirun or srun (0
// otherwise): OpenMPI's, PMIx's, PMI's and Slurm's variables.
int launched_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') return std::atoi(v);
  }
  // mpirun from OpenMPI sets PMIX_RANK without a size; srun --mpi=pmix too.
  return std::getenv("PMIX_RANK") != nullptr ? 2 : 0;
}

}  // namespace

void add_sweep_command(CLI::App& app, SweepOptions& opts) {
  auto* cmd = app.add_subcommand(
      "sweep",
      "run every trace and network on every configuration (and grid point), each in a child "
      "octasim, into one CSV/JSON table; under mpirun rank 0 deals the runs to all ranks");
  cmd->add_option("--traces", opts.traces,
                  "NVDLA traces: .cfg/.txn files, or directories (every .cfg and .txn below)");
  cmd->add_option("--networks", opts.networks,
                  "ONNX models, each run as `octasim net MODEL --timing-only` (one inference)");
  cmd->add_option("--configs", opts.configs,
                  "configurations, comma-separated: built-in names, JSON files, NVDLA .spec files")
      ->delimiter(',')
      ->required();
  cmd->add_option("--grid", opts.grid,
                  "KEY=V1,V2,...: a configuration key's values, applied on top of each "
                  "configuration; repeatable (the cross product)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  cmd->add_option("--out", opts.out, "the results table: FILE.csv or FILE.json")->required();
  cmd->add_option("--jobs,-j", opts.jobs,
                  "simulations at once in this process (under mpirun: per rank)");
  cmd->add_flag("--resume", opts.resume,
                "keep the rows already in --out and run only the missing ones");
  cmd->add_option("--timeout", opts.timeout,
                  "host seconds per simulation; one that takes longer is killed (an error row)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--timeout-cycles", opts.timeout_cycles,
                  "passed to every run: fail an interrupt wait or poll after this many cycles");
  cmd->add_option("--net-arg", opts.net_args,
                  "an option for every `octasim net` (repeatable: --net-arg=--precision "
                  "--net-arg=int16)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
}

int run_sweep(const SweepOptions& opts) {
  if (launched_size() > 1) {
#ifdef OCTASIM_HAVE_MPI
    return sweep::run_mpi(opts);
#else
    throw UsageError(
        "octasim sweep runs under mpirun only when octasim is built with MPI (install "
        "libopenmpi-dev, then reconfigure and rebuild); without mpirun, --jobs N runs N "
        "simulations at once on this machine");
#endif
  }
  sweep::TempDir temp;
  sweep::Setup setup = sweep::prepare(opts, temp.path(), true);
  sweep::install_interrupt_handlers();
  return sweep::run_local(opts, setup, temp.path());
}

}  // namespace octasim::app
