// The collective end of an MPI-backed transport, shared by its backends. Messages that nobody
// received by then are taken and dropped (with a warning): left in place they would keep senders
// waiting, and MPI could match them on a later communicator that reuses the context id.
#pragma once

#include <mpi.h>

#include "dcr/transport/transport.h"

namespace dcr {

// Progresses `t`, dropping whatever arrives, until its own sends completed (or `sends_timeout_s`
// passed) and then until every rank of `comm` got that far (or `ranks_timeout_s` passed).
// Returns whether all own sends completed.
bool settle_for_shutdown(Transport& t, MPI_Comm comm, double sends_timeout_s, double ranks_timeout_s);

// Progresses `t`, dropping whatever arrives, until every rank of `comm` has called this;
// false after `timeout_s`. Returns the number of messages dropped through `dropped`.
bool barrier_dropping(Transport& t, MPI_Comm comm, double timeout_s, size_t* dropped);

}  // namespace dcr
