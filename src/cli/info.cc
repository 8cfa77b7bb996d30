// `dcr info`: what this build links and what the machine offers, for cluster bug reports.
#include <hdf5.h>
#include <mpi.h>
#include <ucp/api/ucp.h>
#include <zstd.h>

#include <cstdio>
#include <string>

#include "src/cli/commands.h"
#if defined(DCR_HAVE_CUDA)
#include "cuda/dcr_cuda.h"
#endif
#if defined(DCR_HAVE_NCCL)
#include <nccl.h>
#endif

namespace dcr::cli {

int run_info(int argc, char** argv) {
  if (argc > 1) {
    std::printf("usage: dcr info\n\nPrints the library versions this dcr was built with and whether a CUDA device is usable.\n");
    return argc == 2 && std::string(argv[1]) == "--help" ? 0 : 2;
  }
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(mpi_version, &length);
  unsigned ucx_major, ucx_minor, ucx_release;
  ucp_get_version(&ucx_major, &ucx_minor, &ucx_release);
  unsigned h5_major, h5_minor, h5_release;
  H5get_libversion(&h5_major, &h5_minor, &h5_release);
  std::printf("dcr      %s\n", DCR_VERSION);
  std::printf("MPI      %.*s\n", length > 0 && mpi_version[length - 1] == '\n' ? length - 1 : length, mpi_version);
  std::printf("UCX      %u.%u.%u\n", ucx_major, ucx_minor, ucx_release);
  std::printf("HDF5     %u.%u.%u\n", h5_major, h5_minor, h5_release);
  std::printf("zstd     %s\n", ZSTD_versionString());
#if defined(DCR_HAVE_NCCL)
  int nccl = 0;
  ncclGetVersion(&nccl);
  std::printf("NCCL     %d\n", nccl);
#else
  std::printf("NCCL     not built\n");
#endif
#if defined(DCR_HAVE_CUDA)
  std::string why;
  std::printf("CUDA     kernels built; device %s\n", dcr::cuda::device_available(&why) ? "available" : ("unavailable: " + why).c_str());
#else
  std::printf("CUDA     kernels not built (configure with DCR_CUDA=ON where nvcc exists)\n");
#endif
  return 0;
}

}  // namespace dcr::cli
