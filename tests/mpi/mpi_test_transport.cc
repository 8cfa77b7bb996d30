// The shared transport suite (transport_suite.h) under MPI for the "mpi", "ucx" and "spool" backends, plus
// a throughput probe. Run under mpirun (ctest: mpi_transport_np3). Rank 0 prints gtest's report;
// other ranks print only their failures; the exit code is non-zero when any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "mpi/transport_suite.h"

namespace dcr {
namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// MPI barrier that keeps `t` progressing, so that no rank's send waits on a rank parked in MPI.
void progressing_barrier(Transport& t) {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  for (int done = 0; !done;) {
    const Status s = t.progress();
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::yield();
  }
}

// Creates the backend on MPI_COMM_WORLD; every rank fails together if any rank failed.
std::unique_ptr<Transport> open(const std::string& backend) {
  std::unique_ptr<Transport> t;
  const Status s = make_transport(backend, MPI_COMM_WORLD, &t);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return t;
}

class MpiSuite : public ::testing::TestWithParam<std::tuple<std::string, size_t>> {};

TEST_P(MpiSuite, Case) {
  const auto& [backend, index] = GetParam();
  std::unique_ptr<Transport> t = open(backend);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->name(), backend);
  EXPECT_EQ(t->rank(), world_rank());
  test::suite_cases()[index].run(*t, [&] { progressing_barrier(*t); });
}

INSTANTIATE_TEST_SUITE_P(
    Backends, MpiSuite,
    ::testing::Combine(::testing::Values("mpi", "ucx", "spool"), ::testing::Range<size_t>(0, test::suite_cases().size())),
    [](const ::testing::TestParamInfo<MpiSuite::ParamType>& info) {
      return std::get<0>(info.param) + "_" + test::suite_cases()[std::get<1>(info.param)].name;
    });

// Rank 0 streams 64 messages of 8 MiB (spool: 8) to rank 1, all posted at once; rank 0 reports the rate.
class Throughput : public ::testing::TestWithParam<std::string> {};

TEST_P(Throughput, EightMiBMessages) {
  std::unique_ptr<Transport> t = open(GetParam());
  ASSERT_NE(t, nullptr);
  const int count = GetParam() == "spool" ? 8 : 64;  // spool: every message is a file written and fsynced
  const size_t size = 8u << 20;
  const SharedBytes message = test::pattern_message(size, 1);
  Message m;
  m.bytes.assign(size, 0);  // pre-faulted; the receiver reuses it
  progressing_barrier(*t);
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; t->rank() == 0 && k < count; ++k) EXPECT_TRUE(t->send(1, 9, message).is_ok());
  for (int k = 0; t->rank() == 1 && k < count; ++k) {
    const Status s = t->receive(0, 9, &m, test::kPatience);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_EQ(m.bytes.size(), size);
  }
  EXPECT_TRUE(t->wait_sends(test::kPatience).is_ok());
  progressing_barrier(*t);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (t->rank() == 1) {
    EXPECT_EQ(m.bytes, *message);
  }
  if (t->rank() == 0)
    std::printf("[ transport ] %s: %d x 8 MiB in %.3f s = %.2f GB/s\n", GetParam().c_str(), count, seconds,
                count * size / seconds / 1e9);
}

INSTANTIATE_TEST_SUITE_P(Backends, Throughput, ::testing::Values("mpi", "ucx", "spool"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// On ranks other than 0: prints each failed assertion, tagged with the rank.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.message());
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace dcr

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rank = dcr::world_rank();
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new dcr::FailurePrinter(rank));
  }
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any_failed;
}
