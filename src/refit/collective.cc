#include "dcr/refit/collective.h"

#include "dcr/core/log.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

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
    wait(&request, "a broadcast of the control plane");
    return value;
  }
  void all_sum(std::vector<uint64_t>* values) override {
    std::vector<uint64_t> out(values->size());
    MPI_Request request;
    MPI_Iallreduce(values->data(), out.data(), static_cast<int>(values->size()), MPI_UINT64_T, MPI_SUM, comm_, &request);
    wait(&request, "a sum of the control plane");
    *values = std::move(out);
  }
  void all_max(std::vector<double>* values) override {
    std::vector<double> out(values->size());
    MPI_Request request;
    MPI_Iallreduce(values->data(), out.data(), static_cast<int>(values->size()), MPI_DOUBLE, MPI_MAX, comm_, &request);
    wait(&request, "a maximum of the control plane");
    *values = std::move(out);
  }
  std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& mine) override {
    std::vector<int> counts(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
    int count = static_cast<int>(mine.size());
    MPI_Request request;
    MPI_Iallgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_, &request);
    wait(&request, "a gather of the control plane");
    int total = 0;
    for (int r = 0; r < size_; ++r) offsets[r] = total, total += counts[r];
    std::vector<uint8_t> all(static_cast<size_t>(total));
    MPI_Iallgatherv(mine.data(), count, MPI_BYTE, all.data(), counts.data(), offsets.data(), MPI_BYTE, comm_, &request);
    wait(&request, "a gather of the control plane");
    std::vector<std::vector<uint8_t>> out(static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) out[r].assign(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
    return out;
  }
  void broadcast(std::vector<uint8_t>* bytes, int root) override {
    bytes->resize(broadcast(bytes->size(), root));
    MPI_Request request;
    MPI_Ibcast(bytes->data(), static_cast<int>(bytes->size()), MPI_BYTE, root, comm_, &request);
    wait(&request, "a broadcast of the control plane");
  }
  std::vector<int> node_of_rank() override {
    MPI_Comm node;
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    int leader = rank_;
    MPI_Allreduce(&rank_, &leader, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    std::vector<int> out(static_cast<size_t>(size_));
    MPI_Allgather(&leader, 1, MPI_INT, out.data(), 1, MPI_INT, comm_);
    return out;
  }

 private:
  uint64_t reduce(uint64_t value, MPI_Op op) {
    uint64_t out = 0;
    MPI_Request request;
    MPI_Iallreduce(&value, &out, 1, MPI_UINT64_T, op, comm_, &request);
    wait(&request, "a vote of the control plane");
    return out;
  }
  void wait(MPI_Request* request, const char* what) { wait_or_abort(request, timeout_s_, what, comm_); }

  MPI_Comm comm_;
  double timeout_s_;
  int rank_ = 0, size_ = 1;
};

// What the threads of one group share: each collective is one round in which every thread leaves
// its bytes; the last to arrive publishes them all and wakes the others, and each combines them.
// A round's result stays until the next round completes, which needs every thread: none misses it.
struct Board {
  explicit Board(int n) : size(n), slots(static_cast<size_t>(n)) {}
  const int size;
  std::mutex mutex;
  std::condition_variable done;
  uint64_t round = 0;
  int arrived = 0;
  std::vector<std::vector<uint8_t>> slots, result;

  std::vector<std::vector<uint8_t>> gather(int rank, std::vector<uint8_t> mine) {
    std::unique_lock<std::mutex> lock(mutex);
    slots[static_cast<size_t>(rank)] = std::move(mine);
    const uint64_t mine_round = round;
    if (++arrived == size) {
      result = std::move(slots);
      slots.assign(static_cast<size_t>(size), {});
      arrived = 0;
      ++round;
      done.notify_all();
    } else {
      done.wait(lock, [&] { return round != mine_round; });
    }
    return result;
  }
};

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <typename T>
std::vector<T> values_of(const std::vector<uint8_t>& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

class ThreadCollective : public Collective {
 public:
  ThreadCollective(std::shared_ptr<Board> board, int rank) : board_(std::move(board)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return board_->size; }
  uint64_t all_min(uint64_t value) override {
    uint64_t out = UINT64_MAX;
    for (uint64_t v : scalars(value)) out = std::min(out, v);
    return out;
  }
  uint64_t all_max(uint64_t value) override {
    uint64_t out = 0;
    for (uint64_t v : scalars(value)) out = std::max(out, v);
    return out;
  }
  uint64_t broadcast(uint64_t value, int root) override { return scalars(value)[static_cast<size_t>(root)]; }
  void all_sum(std::vector<uint64_t>* values) override { combine(values, [](uint64_t a, uint64_t b) { return a + b; }); }
  void all_max(std::vector<double>* values) override {
    combine(values, [](double a, double b) { return std::max(a, b); });
  }
  std::vector<std::vector<uint8_t>> all_gather(const std::vector<uint8_t>& mine) override {
    return board_->gather(rank_, mine);
  }
  void broadcast(std::vector<uint8_t>* bytes, int root) override {
    *bytes = board_->gather(rank_, *bytes)[static_cast<size_t>(root)];
  }
  std::vector<int> node_of_rank() override { return std::vector<int>(static_cast<size_t>(board_->size), 0); }

 private:
  std::vector<uint64_t> scalars(uint64_t value) {
    std::vector<uint64_t> out;
    for (const auto& b : board_->gather(rank_, bytes_of(std::vector<uint64_t>{value}))) out.push_back(values_of<uint64_t>(b)[0]);
    return out;
  }
  template <typename T, typename Op>
  void combine(std::vector<T>* values, Op op) {
    const auto all = board_->gather(rank_, bytes_of(*values));
    std::vector<T> out = values_of<T>(all[0]);
    for (size_t r = 1; r < all.size(); ++r) {
      const std::vector<T> theirs = values_of<T>(all[r]);
      for (size_t i = 0; i < out.size() && i < theirs.size(); ++i) out[i] = op(out[i], theirs[i]);
    }
    *values = std::move(out);
  }

  std::shared_ptr<Board> board_;
  int rank_;
};

}  // namespace

Status agree(Collective& control, const Status& mine, const std::string& what,
             const std::function<std::string(int rank)>& describe) {
  const uint64_t none = UINT64_MAX;
  const uint64_t first = control.all_min(mine.is_ok() ? none : static_cast<uint64_t>(control.rank()));
  if (first == none) return Status::ok();
  if (!mine.is_ok()) return mine.with_context(what);
  const int rank = static_cast<int>(first);
  return Status(Code::aborted, what + " failed on " + (describe ? describe(rank) : "rank " + std::to_string(rank)) +
                                   " (see its message); every rank stops");
}

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
