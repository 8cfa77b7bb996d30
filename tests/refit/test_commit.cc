// The joint commit and the resume agreement on threads (one Collective per thread, no MPI): all
// yes commits everywhere, one no commits nowhere, and on resume the highest version any journal
// proves committed wins, even when the root's journal lost its record.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "dcr/refit/commit.h"

namespace dcr {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kManifest = 0x1234;

// Runs fn(rank) on `n` threads at once, each with its own Collective of one group.
void on_threads(int n, const std::function<void(Collective&)>& fn) {
  auto group = thread_collective_group(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back([&, r] { fn(*group[r]); });
  for (std::thread& t : threads) t.join();
}

class CommitTest : public ::testing::Test {
 protected:
  static constexpr int kRanks = 4;  // rank 0 the root, ranks 2 and 3 rollouts
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("dcr_commit_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    reopen();
  }
  void TearDown() override { fs::remove_all(dir_); }
  void reopen() {
    journals_.clear();
    for (int r = 0; r < kRanks; ++r) {
      journals_.push_back(std::make_unique<Journal>());
      ASSERT_TRUE(journals_.back()->open(path(r)).is_ok());
    }
  }
  std::string path(int r) const { return (dir_ / ("rank-" + std::to_string(r) + ".journal")).string(); }
  // One commit round; votes[r] is rank r's vote. Returns each rank's decision.
  // keys[r]: rank r's job keys (null: none).
  std::vector<bool> commit(const std::vector<bool>& votes, Versions versions,
                           const std::vector<const Keyring*>& keys = std::vector<const Keyring*>(kRanks, nullptr)) {
    std::vector<bool> decisions(kRanks);
    std::vector<char> out(kRanks, 0);
    on_threads(kRanks, [&](Collective& c) {
      CommitParty p;
      p.control = &c;
      p.journal = journals_[c.rank()].get();
      p.durable_vote = c.rank() >= 2;
      p.manifest_hash = kManifest;
      p.keys = keys[c.rank()];
      out[c.rank()] = joint_decision(p, votes[c.rank()], versions);
    });
    for (int r = 0; r < kRanks; ++r) decisions[r] = out[r];
    return decisions;
  }
  uint64_t committed(int r) const {
    uint64_t v = kNoVersion, base = 0, manifest = 0;
    journals_[r]->last_committed(&v, &base, &manifest);
    return v;
  }
  std::vector<uint64_t> agree(uint64_t manifest_hash, std::vector<int>* foreign, std::vector<Code>* codes) {
    std::vector<uint64_t> versions(kRanks);
    foreign->assign(kRanks, -1);
    codes->assign(kRanks, Code::ok);
    on_threads(kRanks, [&](Collective& c) {
      const Status st = agree_on_committed(c, journals_[c.rank()].get(), manifest_hash, &versions[c.rank()],
                                           &(*foreign)[c.rank()]);
      (*codes)[c.rank()] = st.code();
    });
    return versions;
  }

  fs::path dir_;
  std::vector<std::unique_ptr<Journal>> journals_;
};

TEST_F(CommitTest, AllYesCommitsOnEveryRank) {
  EXPECT_EQ(commit({true, true, true, true}, {0, 1}), std::vector<bool>(kRanks, true));
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(committed(r), 1u) << "rank " << r;
  // Rollouts made their yes durable before casting it.
  EXPECT_EQ(journals_[2]->records()[0].type, JournalRecord::voted);
  EXPECT_EQ(journals_[0]->records()[0].type, JournalRecord::committed);
}

TEST_F(CommitTest, OneNoCommitsNowhereWhicheverRoleFails) {
  for (int failing = 0; failing < kRanks; ++failing) {
    std::vector<bool> votes(kRanks, true);
    votes[failing] = false;
    EXPECT_EQ(commit(votes, {0, 1}), std::vector<bool>(kRanks, false)) << "rank " << failing << " voted no";
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(committed(r), kNoVersion) << "rank " << r;
  }
  // The job stays resumable: the next round commits.
  EXPECT_EQ(commit({true, true, true, true}, {0, 1}), std::vector<bool>(kRanks, true));
}

TEST_F(CommitTest, WithAKeyADecisionUnderAnotherKeyIsNotRecorded) {
  Key real, forged;
  real.id = forged.id = 1;
  real.bytes.fill(1);
  forged.bytes.fill(2);
  const Keyring ring = Keyring::of({real}), other = Keyring::of({forged});
  EXPECT_EQ(commit({true, true, true, true}, {0, 1}, {&ring, &ring, &ring, &ring}), std::vector<bool>(kRanks, true));
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(committed(r), 1u) << "rank " << r;
  // A root that does not hold the job key (an impostor): its commit is refused everywhere else.
  const std::vector<bool> decided = commit({true, true, true, true}, {1, 2}, {&other, &ring, &ring, &ring});
  EXPECT_EQ(decided, (std::vector<bool>{true, false, false, false}));
  for (int r = 1; r < kRanks; ++r) EXPECT_EQ(committed(r), 1u) << "rank " << r << " recorded a forged decision";
}

TEST_F(CommitTest, ResumeTakesTheHighestVersionAnyJournalProves) {
  ASSERT_EQ(commit({true, true, true, true}, {0, 1}), std::vector<bool>(kRanks, true));
  ASSERT_EQ(commit({true, true, true, true}, {1, 2}), std::vector<bool>(kRanks, true));
  std::vector<int> foreign;
  std::vector<Code> codes;
  EXPECT_EQ(agree(kManifest, &foreign, &codes), std::vector<uint64_t>(kRanks, 2));
  // Damage the root's last record (a flipped bit): its journal now ends at v1. The others prove v2.
  journals_.clear();
  {
    std::fstream f(path(0), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-9, std::ios::end);
    f.put('\x55');
  }
  reopen();
  EXPECT_EQ(committed(0), 1u);
  EXPECT_EQ(agree(kManifest, &foreign, &codes), std::vector<uint64_t>(kRanks, 2));
  // Only one rollout keeps any record: still v2.
  journals_.clear();
  for (int r : {0, 1, 2}) fs::remove(path(r));
  reopen();
  EXPECT_EQ(agree(kManifest, &foreign, &codes), std::vector<uint64_t>(kRanks, 2));
  // No record anywhere: nothing to resume.
  journals_.clear();
  fs::remove(path(3));
  reopen();
  EXPECT_EQ(agree(kManifest, &foreign, &codes), std::vector<uint64_t>(kRanks, kNoVersion));
}

TEST_F(CommitTest, AForeignJournalOnAnyRankIsRefusedEverywhere) {
  ASSERT_EQ(commit({true, true, true, true}, {0, 1}), std::vector<bool>(kRanks, true));
  ASSERT_TRUE(journals_[3]->append({JournalRecord::committed, 1, 0, 0x9999}, true).is_ok());
  std::vector<int> foreign;
  std::vector<Code> codes;
  agree(kManifest, &foreign, &codes);
  EXPECT_EQ(codes, std::vector<Code>(kRanks, Code::invalid_argument));
  EXPECT_EQ(foreign, std::vector<int>(kRanks, 3));
}

TEST_F(CommitTest, AForgedFarAheadRecordIsRefused) {
  ASSERT_EQ(commit({true, true, true, true}, {0, 1}), std::vector<bool>(kRanks, true));
  // A valid record (its checksum is right) claiming version 2^64 - 2 on the root.
  ASSERT_TRUE(journals_[0]->append({JournalRecord::committed, UINT64_MAX - 1, 1, kManifest}, true).is_ok());
  std::vector<int> foreign;
  std::vector<Code> codes;
  agree(kManifest, &foreign, &codes);
  EXPECT_EQ(codes, std::vector<Code>(kRanks, Code::invalid_argument));
}

}  // namespace
}  // namespace dcr
