// One publisher per store prefix: a lease (PUBLISHER) taken by trainer 0 and renewed on a thread.
// A second publisher is refused while the holder renews; a lease left by a process of this host
// that is gone is taken at once (a publisher killed and run again); release lets the next start;
// a holder whose lease was taken learns it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "src/job/publisher_lease.h"
#include "support/scratch_dir.h"

namespace dcr {
namespace {

namespace fs = std::filesystem;

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

class PublisherLeaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::scratch_dir("dcr-lease");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string url() const { return "file://" + dir_; }
  void write_lease(long pid, uint64_t beat) {
    std::ofstream(dir_ + "/PUBLISHER") << "dcr-publisher 1\nowner someone\nhost " << host_name() << "\npid " << pid
                                       << "\nbeat " << beat << "\n";
  }
  std::string dir_;
  std::function<void(const std::string&)> quiet_ = [](const std::string&) {};
};

TEST_F(PublisherLeaseTest, ASecondPublisherIsRefusedWhileTheFirstRenews) {
  std::unique_ptr<PublisherLease> first, second;
  ASSERT_TRUE(PublisherLease::take(url(), quiet_, &first).is_ok());
  const auto start = std::chrono::steady_clock::now();
  const Status st = PublisherLease::take(url(), quiet_, &second);
  EXPECT_EQ(st.code(), Code::invalid_argument);
  EXPECT_NE(st.message().find("being published by another publisher (pid " + std::to_string(::getpid())),
            std::string::npos)
      << st.message();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), PublisherLease::kStaleS);
  ASSERT_TRUE(first->release().is_ok());
  EXPECT_FALSE(fs::exists(dir_ + "/PUBLISHER"));
  EXPECT_TRUE(PublisherLease::take(url(), quiet_, &second).is_ok());  // released: the next starts at once
}

TEST_F(PublisherLeaseTest, ALeaseOfAProcessOfThisHostThatIsGoneIsTakenAtOnce) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  write_lease(child, 40);
  std::unique_ptr<PublisherLease> lease;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(PublisherLease::take(url(), quiet_, &lease).is_ok());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  EXPECT_TRUE(lease->check().is_ok());
}

TEST_F(PublisherLeaseTest, AHolderWhoseLeaseWasTakenLearnsIt) {
  std::unique_ptr<PublisherLease> lease;
  ASSERT_TRUE(PublisherLease::take(url(), quiet_, &lease).is_ok());
  write_lease(1, 0);  // another owner wrote over it (as one that judged it stale would)
  for (int i = 0; i < 50 && lease->check().is_ok(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const Status st = lease->check();
  EXPECT_EQ(st.code(), Code::aborted);
  EXPECT_NE(st.message().find("took this publisher's lease"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace dcr
