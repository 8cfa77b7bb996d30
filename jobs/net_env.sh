# shellcheck shell=bash
# Sourced by the job scripts (and the cluster tests): keeps a multi-node job on one network.
# Set DCR_NET to the network the nodes reach each other on, as a CIDR (10.1.0.0/16) or interface
# names (ib0,eth1); without it Open MPI and UCX try every interface they find, and a job hangs
# in wire-up on a node with an address the others cannot reach (docker0, a BMC, a second NIC).
#   DCR_NET           Open MPI's out-of-band wire-up and its TCP paths use only this network
#                     (oob_tcp_if_include, btl_tcp_if_include);
#   DCR_UCX_DEVICES   UCX's data plane uses only these devices (UCX_NET_DEVICES, e.g. mlx5_0:1
#                     or eth1; by interface name, which may differ per node);
#   DCR_DAEMON_TIMEOUT  seconds of silence after which Open MPI's launcher gives a node up for
#                     lost (TCP keepalive on its out-of-band links; default 60 here, 480 in Open
#                     MPI): with a link down, mpirun then ends the job naming the node it lost,
#                     instead of waiting for TCP to time out;
# and DCR_MPIRUN_X: `-x NAME` for every UCX_* and DCR_* variable set here, for mpirun to carry to
# ranks it starts over ssh (which, unlike srun, passes no environment along).
if [ -n "${DCR_NET:-}" ]; then
  export OMPI_MCA_oob_tcp_if_include=$DCR_NET OMPI_MCA_btl_tcp_if_include=$DCR_NET
fi
dcr_dead=${DCR_DAEMON_TIMEOUT:-60}
export OMPI_MCA_oob_tcp_keepalive_time=$(((dcr_dead + 1) / 2)) OMPI_MCA_oob_tcp_keepalive_probes=5
export OMPI_MCA_oob_tcp_keepalive_intvl=$((dcr_dead >= 10 ? dcr_dead / 10 : 1))
unset dcr_dead
if [ -n "${DCR_UCX_DEVICES:-}" ]; then
  export UCX_NET_DEVICES=$DCR_UCX_DEVICES
fi
DCR_MPIRUN_X=()
for dcr_var in $(compgen -e | grep -E '^(UCX|DCR)_' || true); do DCR_MPIRUN_X+=(-x "$dcr_var"); done
unset dcr_var
