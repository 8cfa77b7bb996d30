// make_transport: a backend chosen by name.
#include "dcr/transport/transport.h"

#include "dcr/transport/spool.h"
#include "src/transport/backends.h"

namespace dcr {

Status make_transport(const std::string& name, MPI_Comm comm, std::unique_ptr<Transport>* out) {
  DCR_REQUIRE(name == "ucx" || name == "mpi" || name == "spool" || name == "loopback", Code::invalid_argument,
              "unknown transport '" + name + "' (known: ucx, mpi, spool, loopback)");
  int initialized = 0;
  MPI_Initialized(&initialized);
  DCR_REQUIRE(initialized, Code::invalid_argument,
              "transport '" + name + "' needs MPI, which is not initialized (call MPI_Init first)");
  if (name == "ucx") return make_ucx_transport(comm, out);
  if (name == "mpi") return make_mpi_transport(comm, out);
  if (name == "spool") return make_spool_transport(comm, out);
  int size = 0;
  MPI_Comm_size(comm, &size);
  DCR_REQUIRE(size == 1, Code::invalid_argument,
              "transport 'loopback' joins threads of one process, not the " + std::to_string(size) +
                  " ranks of a communicator; use make_loopback_group for in-process ranks");
  *out = std::move(make_loopback_group(1)[0]);
  return Status::ok();
}

}  // namespace dcr
