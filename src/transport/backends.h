// Constructors of the MPI-backed transports, behind make_transport. Both are collective over `comm`.
#pragma once

#include <mpi.h>

#include <memory>

#include "dcr/transport/transport.h"

namespace dcr {

Status make_mpi_transport(MPI_Comm comm, std::unique_ptr<Transport>* out);
Status make_ucx_transport(MPI_Comm comm, std::unique_ptr<Transport>* out);

}  // namespace dcr
