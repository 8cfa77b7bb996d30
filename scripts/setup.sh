#!/usr/bin/env bash
# Installs what dcr needs to build and test on Debian 12, idempotently (a fresh machine has none of
# it). Run as root or with sudo available. Packages already present are left alone.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  openmpi-bin libopenmpi-dev          # MPI: control plane, launch
  libucx-dev ucx-utils                # UCX: data plane
  libhdf5-dev hdf5-tools              # HDF5: snapshots and checkpoints (h5dump)
  libzstd-dev zstd                    # zstd: entropy stage
  libxxhash-dev                       # XXH3 hashes
  libre2-dev                          # RE2: model-family patterns matched in linear time (no backtracking)
  libssl-dev                          # OpenSSL 3: HMAC-SHA-256 and AES-256-GCM sealed frames
  libcurl4-openssl-dev                # libcurl with SigV4: the S3 object store (src/store)
  ceph-mon ceph-osd radosgw           # a real S3 server for the store tests (scripts/s3_server.sh):
  ceph-common                         #   Ceph 16 radosgw on one mon and one memstore OSD (67 MB, 265 MB installed)
  curl                                # the S3 server's readiness check and the store tests' object edits
  libboost-program-options-dev        # command line and INI configs
  libgtest-dev                        # GoogleTest
  nlohmann-json3-dev                  # JSON records and tfjs manifests
  python3-numpy                       # HF checkpoint generator and the vLLM-layout reference (tests)
  python3-xxhash                      # forging re-hashed spool manifests (tests/fault/untrusted_state.sh)
  python3-mpi4py                      # the Python binding's communicators (examples/, tests)
  python3-torch                       # the live PyTorch demo (examples/torch_refit), CPU build
  clang libclang-rt-14-dev            # libFuzzer for the decoder fuzz target
  gnuplot-nox                         # benchmark plots (perf/report.sh)
  iproute2 iputils-ping               # the cluster on one machine (tests/cluster): namespaces, tc, ping
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
