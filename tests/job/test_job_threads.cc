// The `dcr refit` job on threads of one process (loopback data plane, thread collectives), as the
// endpoints are tested: the control plane is the Collective alone, so recovery, durable state,
// publish and follow need no mpirun. The failures the shell fault tests make with kill -9 are
// injected here through the step hooks (a rank's part of a version fails; the job stops on its
// committed version), and the same configuration run again resumes, as the same command does.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <thread>

#include "src/job/refit.h"
#include "support/scratch_dir.h"

namespace dcr {
namespace {

namespace fs = std::filesystem;

struct JobRun {
  std::vector<Status> status;  // per rank
  RefitReport report;          // rank 0's
  std::vector<std::string> notes;
};

// Runs the job of `config` on `ranks` threads; `hooks` are the caller's phase points.
JobRun run_job(const RefitConfig& config, int ranks, const StepHooks& hooks = {}) {
  JobRun run;
  run.status.resize(static_cast<size_t>(ranks));
  auto transports = make_loopback_group(ranks);
  auto collectives = thread_collective_group(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      JobWorld world;
      world.control = collectives[r].get();
      world.open_data_plane = [&, r](DataPlane, std::unique_ptr<Transport>* out) {
        *out = std::move(transports[r]);
        return Status::ok();
      };
      world.hooks = hooks;
      RefitReport report;
      RefitObserver observer;
      if (r == 0) observer.note = [&run](const std::string& line) { run.notes.push_back(line); };
      run.status[r] = run_refit(config, world, &report, observer);
      if (r == 0) run.report = std::move(report);
    });
  }
  for (std::thread& t : threads) t.join();
  return run;
}

// A failure of one rank in one phase of one version, once (a rank that stopped there).
StepHooks fail_once(Role role, int index, Phase phase, uint64_t version) {
  auto fired = std::make_shared<std::atomic<bool>>(false);
  StepHooks hooks;
  hooks.at = [=](const Topology& rank, Phase at, uint64_t target) {
    if (rank.role != role || rank.index != index || at != phase || target != version || fired->exchange(true)) {
      return Status::ok();
    }
    return Status(Code::aborted, rank.describe() + ": injected failure in phase " + phase_name(at));
  };
  return hooks;
}

std::string committed_versions(const RefitReport& report) {
  std::string text;
  for (const StepRecord& r : report.steps) {
    if (r.committed && r.bitexact) text += (text.empty() ? "" : " ") + std::to_string(r.version) + ":" + r.kind;
  }
  return text;
}

bool every_ok(const JobRun& run) {
  for (const Status& s : run.status) {
    if (!s.is_ok()) return false;
  }
  return true;
}

bool noted(const JobRun& run, const std::string& text) {
  for (const std::string& line : run.notes) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

class JobThreadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::scratch_dir("dcr-job");
    config_.trainers = 2;
    config_.relays = 1;
    config_.rollout_tp = 2;
    config_.steps = 3;
    config_.compare_bcast = false;  // an MPI_Bcast comparison needs MPI
    config_.timeout_s = 2;  // a failed rank's peers give up on it quickly
    config_.state_dir = (dir_ / "state").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A publisher job of the two trainers into a file:// store, and a job following it.
  RefitConfig publisher() const {
    RefitConfig c = config_;
    c.role = JobRole::publish;
    c.store = "file://" + (dir_ / "store").string();
    c.state_dir.clear();
    return c;
  }
  RefitConfig follower() const {
    RefitConfig c = config_;
    c.role = JobRole::follow;
    c.store = "file://" + (dir_ / "store").string();
    c.follow_timeout_s = 5;
    c.poll_s = 0.05;
    return c;
  }

  fs::path dir_;
  RefitConfig config_;
};

TEST_F(JobThreadsTest, OneJobCommitsEveryVersionBitExact) {
  const JobRun run = run_job(config_, 5);
  ASSERT_TRUE(every_ok(run)) << run.status[0].to_string();
  EXPECT_EQ(committed_versions(run.report), "0:full 1:delta 2:delta 3:delta");
}

// The fault matrix's cases on threads: each role failing in each phase of version 2; the job stops
// with v1 committed everywhere; run again, it resumes at v1 and commits v2 and v3 bit-exact.
struct FaultCase {
  Role role;
  int index;
  Phase phase;
};

// `c` fails version 2 of the job of `config`: v1 stays committed; run again, it resumes at v1
// and commits v2 and v3 bit-exact.
void expect_failure_then_resume(const RefitConfig& config, const FaultCase& c) {
  const JobRun failed = run_job(config, 5, fail_once(c.role, c.index, c.phase, 2));
  EXPECT_FALSE(every_ok(failed));
  EXPECT_EQ(committed_versions(failed.report), "0:full 1:delta");
  const JobRun again = run_job(config, 5);
  ASSERT_TRUE(every_ok(again)) << again.status[0].to_string();
  EXPECT_TRUE(noted(again, "resumed at committed version 1")) << "no resume note";
  EXPECT_EQ(committed_versions(again.report), "2:delta 3:delta");
}

class JobFaultTest : public JobThreadsTest, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(JobFaultTest, AFailedVersionIsNotCommittedAndTheRerunResumes) { expect_failure_then_resume(config_, GetParam()); }

std::string fault_name(const ::testing::TestParamInfo<FaultCase>& info) {
  return std::string(role_name(info.param.role)) + std::to_string(info.param.index) + "_" + phase_name(info.param.phase);
}

INSTANTIATE_TEST_SUITE_P(EachRoleEachPhase, JobFaultTest,
                         ::testing::Values(FaultCase{Role::trainer, 0, Phase::encode},
                                           FaultCase{Role::trainer, 1, Phase::stream},
                                           FaultCase{Role::relay, 0, Phase::stream},
                                           FaultCase{Role::rollout, 1, Phase::apply},
                                           FaultCase{Role::rollout, 0, Phase::commit},
                                           FaultCase{Role::trainer, 0, Phase::commit}),
                         fault_name);

// --apply staged: the one job, its records, and each role failing while the version stages or
// inside the pause; run again, the job resumes and finishes bit-exact.
class StagedJobTest : public JobThreadsTest {
 protected:
  void SetUp() override {
    JobThreadsTest::SetUp();
    config_.apply = ApplyMode::staged;
  }
};

TEST_F(StagedJobTest, EveryDeltaStagesThenAppliesInAPauseBitExact) {
  config_.rates = {5};
  const JobRun run = run_job(config_, 5);
  ASSERT_TRUE(every_ok(run)) << run.status[0].to_string();
  EXPECT_EQ(committed_versions(run.report), "0:full 1:delta 2:delta 3:delta");
  EXPECT_EQ(run.report.steps[0].apply, "stream");  // nothing was served before the first version
  for (size_t i = 1; i < run.report.steps.size(); ++i) {
    const StepRecord& r = run.report.steps[i];
    EXPECT_EQ(r.apply, "staged");
    EXPECT_GT(r.staging_s, 0);
    EXPECT_GT(r.pause_s, 0);
    EXPECT_GT(r.received_bytes, 0u);
    EXPECT_EQ(r.staged_spilled, 0u);
    // Frames are held as they arrived: what a rollout holds is what it received.
    EXPECT_LE(r.staged_memory, r.received_bytes);
    EXPECT_GE(r.staged_memory, r.received_bytes * 9 / 10);
  }
}

TEST_F(StagedJobTest, FramesSpilledToTheStateDirectoryApplyBitExact) {
  config_.stage_mb = 0;
  const JobRun run = run_job(config_, 5);
  ASSERT_TRUE(every_ok(run)) << run.status[0].to_string();
  EXPECT_EQ(committed_versions(run.report), "0:full 1:delta 2:delta 3:delta");
  EXPECT_EQ(run.report.steps[2].staged_memory, 0u);
  EXPECT_EQ(run.report.steps[2].staged_spilled, run.report.steps[2].received_bytes);
}

TEST_F(StagedJobTest, WithNowhereToSpillAVersionBeyondTheBoundIsRefusedByName) {
  config_.stage_mb = 0;
  config_.state_dir.clear();
  const JobRun run = run_job(config_, 5);
  EXPECT_FALSE(every_ok(run));
  EXPECT_EQ(committed_versions(run.report), "0:full");
  EXPECT_NE(run.status[3].message().find("--stage-mb"), std::string::npos) << run.status[3].to_string();
}

class StagedJobFaultTest : public StagedJobTest, public ::testing::WithParamInterface<FaultCase> {};

TEST_P(StagedJobFaultTest, AFailedVersionIsNotCommittedAndTheRerunResumes) {
  expect_failure_then_resume(config_, GetParam());
}

INSTANTIATE_TEST_SUITE_P(EachRoleEachPhase, StagedJobFaultTest,
                         ::testing::Values(FaultCase{Role::trainer, 1, Phase::stream},
                                           FaultCase{Role::relay, 0, Phase::stream},
                                           FaultCase{Role::rollout, 1, Phase::stage},
                                           FaultCase{Role::rollout, 1, Phase::apply},
                                           FaultCase{Role::rollout, 0, Phase::commit}),
                         fault_name);

// A follower that stages what it reads from the store, failing while staging, then resuming.
TEST_F(StagedJobTest, AStagedFollowerFailingWhileStagingResumes) {
  const JobRun published = run_job(publisher(), 2);
  ASSERT_TRUE(every_ok(published)) << published.status[0].to_string();
  const JobRun failed = run_job(follower(), 3, fail_once(Role::rollout, 1, Phase::stage, 2));
  EXPECT_FALSE(every_ok(failed));
  EXPECT_EQ(committed_versions(failed.report), "0:full 1:delta");
  const JobRun again = run_job(follower(), 3);
  ASSERT_TRUE(every_ok(again)) << again.status[0].to_string();
  EXPECT_EQ(committed_versions(again.report), "2:delta 3:delta");
  for (const StepRecord& r : again.report.steps) EXPECT_EQ(r.apply, "staged");
}

// Snapshots swapped between the rollouts (untrusted state): the resume notices by box hashes,
// discards them, re-syncs, and every byte is right after.
TEST_F(JobThreadsTest, SwappedSnapshotsAreDiscardedByBoxHashes) {
  config_.steps = 2;
  ASSERT_TRUE(every_ok(run_job(config_, 5)));
  const fs::path a = fs::path(config_.state_dir) / "rollout-0.h5", b = fs::path(config_.state_dir) / "rollout-1.h5";
  fs::rename(a, dir_ / "swap.h5");
  fs::rename(b, a);
  fs::rename(dir_ / "swap.h5", b);
  config_.steps = 3;
  const JobRun again = run_job(config_, 5);
  ASSERT_TRUE(every_ok(again)) << again.status[0].to_string();
  EXPECT_TRUE(noted(again, "resumed at committed version 2 from '" + config_.state_dir + "' (2 rollout(s) re-synced"));
  EXPECT_EQ(committed_versions(again.report), "3:delta");
}

// Two jobs joined by a file:// store: a publisher of 2 trainer threads and a follower of a relay
// and 2 rollouts; the follower, failing while it applies v2, resumes and finishes when run again.
TEST_F(JobThreadsTest, PublishAndFollowThroughAStoreAndAFollowerResumes) {
  const JobRun published = run_job(publisher(), 2);
  ASSERT_TRUE(every_ok(published)) << published.status[0].to_string();
  EXPECT_EQ(published.report.steps.size(), 4u);

  const JobRun failed = run_job(follower(), 3, fail_once(Role::rollout, 1, Phase::apply, 2));
  EXPECT_FALSE(every_ok(failed));
  EXPECT_EQ(committed_versions(failed.report), "0:full 1:delta");
  const JobRun again = run_job(follower(), 3);
  ASSERT_TRUE(every_ok(again)) << again.status[0].to_string();
  EXPECT_TRUE(noted(again, "follower resumed at committed version 1"));
  EXPECT_EQ(committed_versions(again.report), "2:delta 3:delta");
}

// A publisher that fails mid-version leaves it invisible; run again, it proves the store's newest
// version is what it rebuilds, redoes the rest, and a new follower takes every version.
TEST_F(JobThreadsTest, APublisherThatFailedRedoesItsVersion) {
  const JobRun failed = run_job(publisher(), 2, fail_once(Role::trainer, 1, Phase::stream, 2));
  EXPECT_FALSE(every_ok(failed));
  const JobRun again = run_job(publisher(), 2);
  ASSERT_TRUE(every_ok(again)) << again.status[0].to_string();
  EXPECT_TRUE(noted(again, "publisher resumed after version 1"));

  const JobRun followed = run_job(follower(), 3);
  ASSERT_TRUE(every_ok(followed)) << followed.status[0].to_string();
  EXPECT_EQ(committed_versions(followed.report), "0:full 1:delta 2:delta 3:delta");
}

}  // namespace
}  // namespace dcr
