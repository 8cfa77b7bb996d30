#include "dcr/refit/collective.h"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace dcr {

namespace {

class MpiCollective : public Collective {
 public:
  explicit MpiCollective(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  uint64_t all_min(uint64_t value) override { return reduce(value, MPI_MIN); }
  uint64_t all_max(uint64_t value) override { return reduce(value, MPI_MAX); }
  uint64_t broadcast(uint64_t value, int root) override {
    MPI_Bcast(&value, 1, MPI_UINT64_T, root, comm_);
    return value;
  }

 private:
  uint64_t reduce(uint64_t value, MPI_Op op) {
    uint64_t out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_UINT64_T, op, comm_);
    return out;
  }
  MPI_Comm comm_;
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

std::unique_ptr<Collective> mpi_collective(MPI_Comm comm) { return std::make_unique<MpiCollective>(comm); }

std::vector<std::unique_ptr<Collective>> thread_collective_group(int size) {
  auto board = std::make_shared<Board>(size);
  std::vector<std::unique_ptr<Collective>> group;
  for (int r = 0; r < size; ++r) group.push_back(std::make_unique<ThreadCollective>(board, r));
  return group;
}

}  // namespace dcr
