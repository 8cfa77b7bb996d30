// The control plane's few collectives, under the joint commit and recovery: every rank contributes a
// value and every rank learns the minimum, the maximum, or the root's. MPI in a job; threads of one
// process for tests (as gloo runs its protocol tests), so the protocol needs no mpirun to be tested.
// Every rank calls the same collectives in the same order; a Collective is used by one thread.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace dcr {

constexpr double kCollectiveTimeoutS = 600;

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual uint64_t all_min(uint64_t value) = 0;
  virtual uint64_t all_max(uint64_t value) = 0;
  virtual uint64_t broadcast(uint64_t value, int root) = 0;

  bool all_true(bool value) { return all_min(value ? 1 : 0) == 1; }
};

// Over `comm` (used as it is: the caller keeps it for control traffic only). Each collective waits at
// most `timeout_s` (see wait_or_abort).
std::unique_ptr<Collective> mpi_collective(MPI_Comm comm, double timeout_s = kCollectiveTimeoutS);

// Waits for a nonblocking MPI operation at most `timeout_s`. Past it the job is aborted (MPI_Abort
// on `comm`) after logging `what`: a rank that is stopped (SIGSTOP) or hung must not make every
// other rank wait forever in a collective it never joins.
void wait_or_abort(MPI_Request* request, double timeout_s, const char* what, MPI_Comm comm);

// `size` ranks in one process: element i is rank i, for one thread each.
std::vector<std::unique_ptr<Collective>> thread_collective_group(int size);

}  // namespace dcr
