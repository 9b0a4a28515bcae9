// `octasim sweep` under mpirun / srun (built when CMake finds MPI: OCTASIM_HAVE_MPI). Rank 0
// deals the jobs, longest first, one at a time to whichever rank asks (itself included: it runs
// --jobs children too), gathers the rows and writes the output; every other rank runs what it is
// dealt, each simulation a child octasim started with posix_spawn.
#pragma once

#include "sim/app/commands.hpp"

namespace octasim::app::sweep {

#ifdef OCTASIM_HAVE_MPI
// MPI_Init .. MPI_Finalize around the whole sweep; returns this rank's exit status.
[[nodiscard]] int run_mpi(const SweepOptions& opts);
#endif

}  // namespace octasim::app::sweep
