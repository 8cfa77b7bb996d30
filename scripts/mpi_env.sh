# Sourced by the scripts that launch mpirun on this machine: as root, with more ranks than cores,
# and without ssh (a single-node launch).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_plm=isolated
