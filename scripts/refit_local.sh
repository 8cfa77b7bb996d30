#!/usr/bin/env bash
# Runs the refit job on this machine: mpirun with the ranks configs/refit_local.ini expects (or
# NP=<ranks>), as root if need be, oversubscribed, no ssh. Extra arguments go to `dcr refit`.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/dcr ] || scripts/build.sh
source scripts/mpi_env.sh
mkdir -p results
exec mpirun --oversubscribe -np "${NP:-5}" build/dcr refit --config "${CONFIG:-configs/refit_local.ini}" \
  --json results/refit_local.json --csv results/refit_local.csv "$@"
