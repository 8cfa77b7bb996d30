# The start every refit benchmark shares (sourced, with the results folder's name):
#   source "$(dirname "$0")/setup.sh" NAME
# leaves the shell in the repository root with dcr built and MPI set up for this machine
# (scripts/mpi_env.sh), and `out` a fresh folder results/NAME-<timestamp>.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -x build/dcr ] || scripts/build.sh
source scripts/mpi_env.sh
out=results/$1-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
