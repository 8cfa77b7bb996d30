// The control plane's few collectives, under the joint commit, recovery and the job's agreement:
// every rank contributes a value (or bytes) and every rank learns the minimum, the maximum, the
// sum, the root's, or everyone's. MPI in a job; threads of one process for tests (as gloo runs its
// protocol tests), so the protocol, recovery and the two-job path need no mpirun to be tested.
// Every rank calls the same collectives in the same order; a Collective is used by one thread.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <memory>
#include <vector>

#include "dcr/core/status.h"

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
  // Element-wise over every rank, in place (step statistics, box-hash sums).
  virtual void all_sum(std::vector<uint64_t>* values) = 0;
  virtual void all_max(std::vector<double>* values) = 0;
  // Every rank's bytes, in rank order, on every rank (host names, per-rank reports).
  virtual std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& mine) = 0;
  // The root's bytes on every rank (a listing only rank 0 reads).
  virtual void broadcast(std::vector<uint8_t>* bytes, int root) = 0;
  // For every rank, the lowest rank on its node (ranks that share memory; one node for threads).
  virtual std::vector<int> node_of_rank() = 0;

  bool all_true(bool value) { return all_min(value ? 1 : 0) == 1; }
  void barrier() { all_min(0); }
};

// Collective: whether `mine` is ok on every rank. A rank that failed returns its own error (with
// `what` before it); the others return aborted naming the first rank that failed (`describe`
// names a rank; null: "rank N"), so no rank goes on into a collective another has left. The one
// agreement on a failure every set-up and every job step uses.
Status agree(Collective& control, const Status& mine, const std::string& what,
             const std::function<std::string(int rank)>& describe = nullptr);

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
