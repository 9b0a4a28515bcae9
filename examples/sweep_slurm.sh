#!/bin/bash
# An octasim sweep over the nodes of a Slurm allocation: `sbatch examples/sweep_slurm.sh`.
#
# Every rank is one `octasim sweep` process; rank 0 deals the (input, configuration, grid point)
# simulations to all ranks, longest first, and writes the table. Each rank runs --jobs
# simulations at once (here 1: one rank per core). The inputs, the configurations and OUT must be
# on a file system every node sees; each rank's temporary files go to its node's $TMPDIR.
#
# At the time limit Slurm sends SIGTERM: rank 0 writes the rows it has and the job ends; with
# --resume, submitting the same script again runs only the missing rows.
#
# Outside Slurm the same script runs on this machine (mpirun starts one rank per core), which is
# how ctest checks it (tests/sweep: sweep.slurm_example).
#
#SBATCH --job-name=octasim-sweep
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=32
#SBATCH --cpus-per-task=1
#SBATCH --time=04:00:00
#SBATCH --output=octasim-sweep-%j.log
set -euo pipefail

OCTASIM=${OCTASIM:-$HOME/octasim/build/sim/app/octasim}
TRACES=${TRACES:-$HOME/shared/conformance/nvdla/traces/nv_small}
CONFIGS=${CONFIGS:-nv_small,nv_small_256}
GRID=${GRID:-dram_bytes_per_cycle=2,4,8}
OUT=${OUT:-${SLURM_SUBMIT_DIR:-$PWD}/sweep-results.csv}
# Extra mpirun options, e.g. "--oversubscribe -np 2" on a small machine.
MPIRUN_ARGS=${MPIRUN_ARGS:-}

# OpenMPI's mpirun takes the node list and task count from Slurm. With Slurm's PMIx plugin,
# `srun --mpi=pmix "$OCTASIM" sweep ...` starts the same ranks.
# shellcheck disable=SC2086  # MPIRUN_ARGS is a list of options
exec mpirun $MPIRUN_ARGS "$OCTASIM" sweep \
  --traces "$TRACES" \
  --configs "$CONFIGS" \
  --grid "$GRID" \
  --out "$OUT" \
  --jobs 1 \
  --timeout 3600 \
  --resume
