#include "dcr/refit/collective.h"

#include "dcr/core/log.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace dcr {

namespace {

class MpiCollective : public Collective {
 public:
  MpiCollective(MPI_Comm comm, double timeout_s) : comm_(comm), timeout_s_(timeout_s) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  uint64_t all_min(uint64_t value) override { return reduce(value, MPI_MIN); }
  uint64_t all_max(uint64_t value) override { return reduce(value, MPI_MAX); }
  uint64_t broadcast(uint64_t value, int root) override {
    MPI_Request request;
    MPI_Ibcast(&value, 1, MPI_UINT64_T, root, comm_, &request);
    wait_or_abort(&request, timeout_s_, "a broadcast of the control plane", comm_);
    return value;
  }

 private:
  uint64_t reduce(uint64_t value, MPI_Op op) {
    uint64_t out = 0;
    MPI_Request request;
    MPI_Iallreduce(&value, &out, 1, MPI_UINT64_T, op, comm_, &request);
    wait_or_abort(&request, timeout_s_, "a vote of the control plane", comm_);
    return out;
  }
  MPI_Comm comm_;
  double timeout_s_;
  int rank_ = 0, size_ = 1;
};

// What the threads of one group share: each collective is one round; the last thread to arrive
// publishes the round's result and wakes the others.
struct Board {
  explicit Board(int n) : size(n) {}
  const int size;
  std::mutex mutex;
  std::condition_variable done;
  uint64_t round = 0, result = 0, accumulated = 0;
  int arrived = 0;

  uint64_t join(uint64_t value, const std::function<uint64_t(uint64_t, uint64_t)>& combine) {
    std::unique_lock<std::mutex> lock(mutex);
    accumulated = arrived == 0 ? value : combine(accumulated, value);
    const uint64_t mine = round;
    if (++arrived == size) {
      result = accumulated;
      arrived = 0;
      ++round;
      done.notify_all();
    } else {
      done.wait(lock, [&] { return round != mine; });
    }
    return result;
  }
};

class ThreadCollective : public Collective {
 public:
  ThreadCollective(std::shared_ptr<Board> board, int rank) : board_(std::move(board)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return board_->size; }
  uint64_t all_min(uint64_t value) override {
    return board_->join(value, [](uint64_t a, uint64_t b) { return std::min(a, b); });
  }
  uint64_t all_max(uint64_t value) override {
    return board_->join(value, [](uint64_t a, uint64_t b) { return std::max(a, b); });
  }
  uint64_t broadcast(uint64_t value, int root) override {
    // Only the root's value survives: others contribute 0 to a sum.
    return board_->join(rank_ == root ? value : 0, [](uint64_t a, uint64_t b) { return a + b; });
  }

 private:
  std::shared_ptr<Board> board_;
  int rank_;
};

}  // namespace

std::unique_ptr<Collective> mpi_collective(MPI_Comm comm, double timeout_s) {
  return std::make_unique<MpiCollective>(comm, timeout_s);
}

void wait_or_abort(MPI_Request* request, double timeout_s, const char* what, MPI_Comm comm) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (int polls = 0;; ++polls) {
    int done = 0;
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (waited > timeout_s) {
      int rank = 0;
      MPI_Comm_rank(comm, &rank);
      DCR_LOG(error, "refit", "rank %d: %s did not complete within %.0f s: a rank is stopped, hung or unreachable; "
              "aborting the job (rerun the same command to resume)", rank, what, timeout_s);
      MPI_Abort(comm, 3);
    }
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(polls > 100000 ? 1000 : 50));
  }
}

std::vector<std::unique_ptr<Collective>> thread_collective_group(int size) {
  auto board = std::make_shared<Board>(size);
  std::vector<std::unique_ptr<Collective>> group;
  for (int r = 0; r < size; ++r) group.push_back(std::make_unique<ThreadCollective>(board, r));
  return group;
}

}  // namespace dcr
