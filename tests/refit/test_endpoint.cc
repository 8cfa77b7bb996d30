// The trainer, relay and rollout endpoints on loopback threads, without mpirun (as gloo tests its
// protocol): a job of 2 trainers (FSDP 2), 1 relay and 2 rollouts (TP 2, fused) on the caller's
// memory. Every committed version's rollout buffers equal, byte for byte, the serving layout of
// the trainers' full model; a failure of each role in each phase commits nothing anywhere, leaves
// every journal at the last committed version, and the retry (or the next version) commits
// bit-exact.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "dcr/core/hash.h"
#include "dcr/journal/journal.h"
#include "dcr/model/presets.h"
#include "dcr/refit/endpoint.h"
#include "support/random_data.h"

namespace dcr {
namespace {

namespace fs = std::filesystem;
constexpr int kTrainers = 2, kRelays = 1, kRollouts = 2, kRanks = kTrainers + kRelays + kRollouts;

// The canonical model at `version`: random at version 1, each later version a 3% step on.
CanonicalBits model_at(const Manifest& m, uint64_t version) { return test::versioned_model(m, version, 100); }

TensorBytes bytes_of(const CanonicalBits& bits) {
  return [&bits](uint32_t t) { return bits[t].data(); };
}

// The caller's buffers for `holdings` (owned by the test, not by dcr), and their descriptions.
struct CallerMemory {
  explicit CallerMemory(const Holdings& h) {
    for (size_t b = 0; b < h.buffer_names.size(); ++b) {
      buffers.emplace_back(h.buffer_elements[b] * dtype_width(h.buffer_dtypes[b]), 0xAB);
      memory.push_back({buffers.back().data(), buffers.back().size(), h.buffer_dtypes[b], MemorySpace::host});
    }
  }
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<BufferMemory> memory;
};

// What one rank saw at each script entry: the status code and its committed version after it.
struct Seen {
  uint64_t start = 0;  // the committed version when the endpoint was created
  std::vector<Code> codes;
  std::vector<uint64_t> committed;
  std::vector<bool> bitexact;  // rollouts: buffers equal the expected serving layout
  // Rollouts under apply=staged: the buffers kept the committed version's bytes throughout stage()
  // (sampled on another thread while it ran, and after it returned); true where nothing was committed.
  std::vector<bool> untouched;
  std::vector<std::string> errors;  // each step's message
  std::vector<bool> holds_committed;  // rollouts: after the step, buffers equal the committed version
  std::vector<uint64_t> spilled;      // rollouts: the step's frame bytes staged in the state directory
};

uint64_t buffers_hash(const std::vector<std::vector<uint8_t>>& buffers) {
  uint64_t h = 0;
  for (const auto& b : buffers) h = h * 31 + hash64(b.data(), b.size());
  return h;
}

class EndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(make_preset("tiny", &spec_.manifest).is_ok());
    spec_.options.trainers = kTrainers;
    spec_.options.relays = kRelays;
    spec_.options.rollout_tp = 2;
    spec_.options.frame_elements = 1 << 14;
    spec_.options.window = 4;
    spec_.options.timeout_s = 1.0;  // a silent peer (a failed rank) is given up on quickly
    dir_ = fs::path(::testing::TempDir()) / ("dcr_endpoint_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    spec_.options.state_dir = dir_.string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the job on threads: trainers publish `script` in order, then close; each rollout receives
  // once per entry, then sees the close.
  std::vector<Seen> run(const std::vector<uint64_t>& script) {
    std::vector<Seen> seen(kRanks);
    auto transports = make_loopback_group(kRanks);
    auto collectives = thread_collective_group(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r) {
      threads.emplace_back([&, r] { run_rank(r, script, transports[r].get(), collectives[r].get(), &seen[r]); });
    }
    for (std::thread& t : threads) t.join();
    return seen;
  }

  void run_rank(int r, const std::vector<uint64_t>& script, Transport* transport, Collective* control, Seen* seen) {
    if (r < kTrainers) return run_trainer(script, transport, control, seen);
    if (r < kTrainers + kRelays) {
      std::unique_ptr<Relay> relay;
      ASSERT_TRUE(Relay::create(spec_, transport, control, &relay).is_ok());
      EXPECT_TRUE(relay->serve().is_ok());
      return;
    }
    run_rollout(script, transport, control, seen);
  }

  void run_trainer(const std::vector<uint64_t>& script, Transport* transport, Collective* control, Seen* seen) {
    std::unique_ptr<Trainer> trainer;
    const Status created = Trainer::create(spec_, transport, control, &trainer);
    ASSERT_TRUE(created.is_ok()) << created.to_string();
    seen->start = trainer->committed();
    // The trainer's own shard, as a training framework holds it.
    Shard shard(spec_.manifest, trainer->holdings());
    std::vector<BufferMemory> memory;
    for (size_t b = 0; b < trainer->holdings().buffer_names.size(); ++b) {
      memory.push_back({shard.buffer(b), shard.buffer_bytes(b), trainer->holdings().buffer_dtypes[b], MemorySpace::host});
    }
    for (uint64_t version : script) {
      const CanonicalBits model = model_at(spec_.manifest, version);
      shard.load(bytes_of(model));
      const Status st = trainer->publish(version, memory);
      seen->codes.push_back(st.code());
      seen->committed.push_back(trainer->committed());
    }
    EXPECT_TRUE(trainer->close().is_ok());
  }

  void run_rollout(const std::vector<uint64_t>& script, Transport* transport, Collective* control, Seen* seen) {
    std::unique_ptr<Rollout> rollout;
    ASSERT_TRUE(Rollout::create(spec_, transport, control, &rollout).is_ok());
    seen->start = rollout->committed();
    CallerMemory memory(rollout->holdings());
    ASSERT_TRUE(rollout->attach(memory.memory).is_ok());
    for (size_t i = 0; i < script.size(); ++i) {
      uint64_t version = 0;
      bool closed = false;
      const Status st = staged_ ? stage_and_apply(rollout.get(), memory, &version, seen) : rollout->receive(&version, &closed);
      EXPECT_FALSE(closed);
      seen->errors.push_back(st.message());
      seen->codes.push_back(st.code());
      seen->committed.push_back(rollout->committed());
      seen->bitexact.push_back(st.is_ok() && matches(rollout->holdings(), memory, version));
      seen->holds_committed.push_back(rollout->committed() != kNoVersion &&
                                      matches(rollout->holdings(), memory, rollout->committed()));
      seen->spilled.push_back(rollout->last_step().staged_spilled);
    }
    uint64_t version = 0;
    bool closed = false;
    EXPECT_TRUE(rollout->receive(&version, &closed).is_ok());
    EXPECT_TRUE(closed);
  }

  // Stages the next version while another thread (the serving engine's generation) reads the
  // buffers and checks they still hold what they held before, then applies it (the pause).
  Status stage_and_apply(Rollout* rollout, const CallerMemory& memory, uint64_t* version, Seen* seen) {
    const bool serving = rollout->committed() != kNoVersion;  // the job's first version streams
    const uint64_t before = buffers_hash(memory.buffers);
    std::atomic<bool> staging{true}, untouched{true};
    std::thread generation([&] {
      while (serving && staging) untouched = untouched && buffers_hash(memory.buffers) == before;
    });
    bool closed = false;
    const Status staged = rollout->stage(version, &closed);
    staging = false;
    generation.join();
    seen->untouched.push_back(!serving || (untouched && buffers_hash(memory.buffers) == before));
    if (staged.is_ok()) return rollout->apply(version);
    EXPECT_EQ(rollout->apply(version).code(), Code::invalid_argument) << "apply() with nothing staged";
    return staged;
  }

  // Whether the caller's buffers hold exactly the serving layout of the model at `version` (built
  // here by a second, owned shard from the full model), compared by hashes of the actual bytes.
  bool matches(const Holdings& holdings, const CallerMemory& memory, uint64_t version) const {
    const CanonicalBits model = model_at(spec_.manifest, version);
    Shard expected(spec_.manifest, holdings);
    expected.load(bytes_of(model));
    for (size_t b = 0; b < memory.buffers.size(); ++b) {
      if (hash64(memory.buffers[b].data(), memory.buffers[b].size()) != hash64(expected.buffer(b), expected.buffer_bytes(b)))
        return false;
    }
    return true;
  }

  uint64_t journal_committed(int rank) const {
    Journal j;
    EXPECT_TRUE(j.open_read_only((dir_ / ("rank-" + std::to_string(rank) + ".journal")).string()).is_ok());
    uint64_t version = kNoVersion, base = 0, manifest = 0;
    j.last_committed(&version, &base, &manifest);
    return version;
  }

  // The job runs with apply=staged: rollouts stage() then apply().
  void make_staged() {
    spec_.options.apply = ApplyMode::staged;
    staged_ = true;
  }

  EndpointSpec spec_;
  fs::path dir_;
  bool staged_ = false;  // rollouts stage() then apply() (spec option apply=staged)
};

TEST_F(EndpointTest, EveryVersionCommitsBitExactIntoCallerMemory) {
  const std::vector<Seen> seen = run({1, 2, 3, 4, 5});
  for (int r = 0; r < kRanks; ++r) {
    if (r == kTrainers) continue;  // the relay reports nothing per step
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(seen[r].codes[i], Code::ok) << "rank " << r << " step " << i;
      EXPECT_EQ(seen[r].committed[i], i + 1) << "rank " << r;
    }
  }
  for (int r = kTrainers + kRelays; r < kRanks; ++r) {
    for (bool exact : seen[r].bitexact) EXPECT_TRUE(exact) << "rollout rank " << r;
  }
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(journal_committed(r), 5u) << "rank " << r;
}

TEST_F(EndpointTest, ARestartedJobResumesAtTheCommittedVersionFromItsJournals) {
  run({1, 2});
  // New endpoints on the same state directory (the caller's rollout buffers start blank): they
  // agree on version 2, and the first step after the resume goes as full frames.
  const std::vector<Seen> seen = run({3, 4});
  for (int r : {0, 1, 3, 4}) {
    EXPECT_EQ(seen[r].start, 2u) << "rank " << r;
    EXPECT_EQ(seen[r].committed, (std::vector<uint64_t>{3, 4})) << "rank " << r;
  }
  for (int r : {3, 4}) EXPECT_EQ(seen[r].bitexact, (std::vector<bool>{true, true})) << "rank " << r;
}

TEST_F(EndpointTest, AShardOfTheWrongSizeIsRefusedBeforeAnythingIsSent) {
  auto transports = make_loopback_group(kRanks);
  auto collectives = thread_collective_group(kRanks);
  std::vector<Status> result(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      if (r < kTrainers) {
        std::unique_ptr<Trainer> trainer;
        ASSERT_TRUE(Trainer::create(spec_, transports[r].get(), collectives[r].get(), &trainer).is_ok());
        CallerMemory memory(trainer->holdings());
        if (r == 1) memory.memory[0].bytes -= 2;
        result[r] = trainer->publish(1, memory.memory);
        EXPECT_EQ(trainer->committed(), kNoVersion);
        EXPECT_TRUE(trainer->close().is_ok());
      } else if (r < kTrainers + kRelays) {
        std::unique_ptr<Relay> relay;
        ASSERT_TRUE(Relay::create(spec_, transports[r].get(), collectives[r].get(), &relay).is_ok());
        EXPECT_TRUE(relay->serve().is_ok());
      } else {
        std::unique_ptr<Rollout> rollout;
        ASSERT_TRUE(Rollout::create(spec_, transports[r].get(), collectives[r].get(), &rollout).is_ok());
        CallerMemory memory(rollout->holdings());
        ASSERT_TRUE(rollout->attach(memory.memory).is_ok());
        uint64_t version = 0;
        bool closed = false;
        result[r] = rollout->receive(&version, &closed);
        EXPECT_TRUE(rollout->receive(&version, &closed).is_ok());
        EXPECT_TRUE(closed);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(result[1].code(), Code::invalid_argument) << result[1].to_string();
  EXPECT_NE(result[1].message().find("bytes, the layout needs"), std::string::npos) << result[1].message();
  EXPECT_EQ(result[0].code(), Code::aborted) << result[0].to_string();
  EXPECT_EQ(result[kRanks - 1].code(), Code::aborted);
}

TEST_F(EndpointTest, AnEndpointOnTheWrongRankIsRefused) {
  auto transports = make_loopback_group(1);
  auto collectives = thread_collective_group(1);
  spec_.options.trainers = 1;
  spec_.options.rollout_tp = 1;
  std::unique_ptr<Rollout> rollout;
  const Status st = Rollout::create(spec_, transports[0].get(), collectives[0].get(), &rollout);
  EXPECT_EQ(st.code(), Code::invalid_argument);
}

TEST_F(EndpointTest, DeviceMemoryIsRefusedUntilTheKernelsPlugIn) {
  Shard shard;
  Holdings h;
  h.buffer_names = {"b"};
  h.buffer_elements = {4};
  h.buffer_dtypes = {DType::bf16};
  uint16_t data[4] = {};
  const Status st = Shard::attach(spec_.manifest, h, {{data, sizeof data, DType::bf16, MemorySpace::device}}, &shard);
  EXPECT_EQ(st.code(), Code::unavailable);
  EXPECT_TRUE(Shard::attach(spec_.manifest, h, {{data, sizeof data, DType::bf16, MemorySpace::host}}, &shard).is_ok());
}

// A failure of one role in one phase of version 2.
struct FailureCase {
  Role role;
  int index;
  Phase phase;
};

std::string case_name(const ::testing::TestParamInfo<FailureCase>& info) {
  return std::string(role_name(info.param.role)) + std::to_string(info.param.index) + "_" + phase_name(info.param.phase);
}

class EndpointFailureTest : public EndpointTest, public ::testing::WithParamInterface<FailureCase> {
 protected:
  // The failure, injected from outside through the step hooks: that rank's part of version 2 fails
  // (once), as a rank that stopped would leave it.
  void arm() {
    const FailureCase c = GetParam();
    auto fired = std::make_shared<std::atomic<bool>>(false);
    spec_.hooks.at = [c, fired](const Topology& rank, Phase phase, uint64_t target) {
      if (rank.role != c.role || rank.index != c.index || phase != c.phase || target != 2 || fired->exchange(true)) {
        return Status::ok();
      }
      return Status(Code::aborted, rank.describe() + ": injected failure in phase " + phase_name(phase));
    };
  }
  // Every rank (but the relay) saw version 2 fail with the job still at 1, then `after` commit.
  void expect_failure_then_commits(const std::vector<Seen>& seen, const std::vector<uint64_t>& after) {
    for (int r = 0; r < kRanks; ++r) {
      if (r == kTrainers) continue;
      EXPECT_EQ(seen[r].codes[0], Code::ok) << "rank " << r;
      EXPECT_NE(seen[r].codes[1], Code::ok) << "rank " << r;
      EXPECT_EQ(seen[r].committed[1], 1u) << "rank " << r << ": nothing committed after the failure";
      for (size_t i = 0; i < after.size(); ++i) {
        EXPECT_EQ(seen[r].codes[2 + i], Code::ok) << "rank " << r << " step " << 2 + i;
        EXPECT_EQ(seen[r].committed[2 + i], after[i]) << "rank " << r;
      }
    }
    for (int r = kTrainers + kRelays; r < kRanks; ++r) {
      EXPECT_TRUE(seen[r].bitexact[0]);
      for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(seen[r].bitexact[2 + i]) << "rank " << r << " step " << 2 + i;
    }
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(journal_committed(r), after.back()) << "rank " << r;
  }
};

TEST_P(EndpointFailureTest, NothingCommitsAndTheRetryCommitsBitExact) {
  arm();
  expect_failure_then_commits(run({1, 2, 2, 3}), {2, 3});
}

TEST_P(EndpointFailureTest, NothingCommitsAndTheNextVersionCommitsBitExact) {
  arm();
  expect_failure_then_commits(run({1, 2, 3, 4}), {3, 4});
}

// apply=staged: rollouts stage each version while their buffers keep serving the committed one,
// then apply it in the pause.
class StagedEndpointTest : public EndpointTest {
 protected:
  void SetUp() override {
    EndpointTest::SetUp();
    make_staged();
  }
  void expect_all_committed(const std::vector<Seen>& seen, size_t steps) {
    for (int r = kTrainers + kRelays; r < kRanks; ++r) {
      for (size_t i = 0; i < steps; ++i) {
        EXPECT_EQ(seen[r].codes[i], Code::ok) << "rollout rank " << r << " step " << i << ": " << seen[r].errors[i];
        EXPECT_EQ(seen[r].committed[i], i + 1);
        EXPECT_TRUE(seen[r].bitexact[i]) << "rollout rank " << r << " step " << i;
        EXPECT_TRUE(seen[r].untouched[i]) << "rollout rank " << r << " step " << i << ": buffers changed while staging";
      }
    }
  }
};

TEST_F(StagedEndpointTest, BuffersHoldOnlyTheCommittedVersionWhileTheNextStages) {
  const std::vector<Seen> seen = run({1, 2, 3, 4});
  expect_all_committed(seen, 4);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(journal_committed(r), 4u) << "rank " << r;
}

TEST_F(StagedEndpointTest, FramesSpilledToTheStateDirectoryApplyBitExact) {
  spec_.options.stage_mb = 0;  // every staged frame goes to the state directory
  const std::vector<Seen> seen = run({1, 2, 3});
  expect_all_committed(seen, 3);
  for (int r = kTrainers + kRelays; r < kRanks; ++r) EXPECT_GT(seen[r].spilled[2], 0u) << "rollout rank " << r;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_NE(entry.path().extension(), ".stage") << entry.path() << ": a spill file outlived its version";
  }
}

TEST_F(StagedEndpointTest, SeveralApplyThreadsInThePauseApplyBitExact) {
  spec_.options.apply_threads = 3;
  spec_.options.stage_mb = 0;  // every frame read back from the spill file by the workers
  expect_all_committed(run({1, 2, 3, 4}), 4);
}

TEST_F(StagedEndpointTest, AVersionBeyondTheBoundWithNowhereToSpillIsRefusedUnapplied) {
  spec_.options.stage_mb = 0;
  spec_.options.state_dir.clear();
  const std::vector<Seen> seen = run({1, 2});
  for (int r = kTrainers + kRelays; r < kRanks; ++r) {
    EXPECT_EQ(seen[r].codes[0], Code::ok);  // the first version streams: nothing was served yet
    EXPECT_EQ(seen[r].codes[1], Code::invalid_argument) << seen[r].errors[1];
    EXPECT_NE(seen[r].errors[1].find("--stage-mb"), std::string::npos) << seen[r].errors[1];
    EXPECT_EQ(seen[r].committed[1], 1u);
    EXPECT_TRUE(seen[r].untouched[1]);
    EXPECT_TRUE(seen[r].holds_committed[1]);
  }
  EXPECT_EQ(seen[0].codes[1], Code::aborted);
  EXPECT_EQ(seen[0].committed[1], 1u);
}

// A sealed (encrypted) job's frames spilled to the state directory stay sealed there: one altered
// between stage() and the pause is refused when read back, nothing commits, and the retry
// commits bit-exact.
TEST_F(StagedEndpointTest, ASpilledSealedFrameAlteredBeforeThePauseIsRefused) {
  Key key;
  key.id = 5;
  key.bytes.fill(0x5c);
  spec_.keys = Keyring::of({key});
  spec_.options.encrypt = true;
  spec_.options.stage_mb = 0;
  const std::string spill = (dir_ / "rank-3.stage").string();  // rollout 0
  auto altered = std::make_shared<std::atomic<bool>>(false);
  spec_.hooks.at = [spill, altered](const Topology& rank, Phase phase, uint64_t target) {
    if (rank.role == Role::rollout && rank.index == 0 && phase == Phase::apply && target == 2 && !altered->exchange(true)) {
      std::fstream file(spill, std::ios::in | std::ios::out | std::ios::binary);
      file.seekg(-1, std::ios::end);
      const char last = static_cast<char>(file.get() ^ 0x01);
      file.seekp(-1, std::ios::end);
      file.put(last);
    }
    return Status::ok();
  };
  const std::vector<Seen> seen = run({1, 2, 2, 3});
  ASSERT_TRUE(altered->load());
  EXPECT_NE(seen[3].codes[1], Code::ok);
  EXPECT_NE(seen[3].errors[1].find("spill file"), std::string::npos) << seen[3].errors[1];
  for (int r = kTrainers + kRelays; r < kRanks; ++r) {
    EXPECT_EQ(seen[r].committed[1], 1u);
    for (size_t i : {0, 2, 3}) EXPECT_TRUE(seen[r].bitexact[i]) << "rollout rank " << r << " step " << i;
  }
}

class StagedFailureTest : public EndpointFailureTest {
 protected:
  void SetUp() override {
    EndpointFailureTest::SetUp();
    make_staged();
  }
};

// A failure while the version stages leaves every rollout's buffers as they were; one inside the
// pause (apply, commit) may leave part of it, which the retry completes.
TEST_P(StagedFailureTest, NothingAppliedWhileStagingAndTheRetryCommitsBitExact) {
  arm();
  const std::vector<Seen> seen = run({1, 2, 2, 3});
  expect_failure_then_commits(seen, {2, 3});
  const bool in_pause = GetParam().phase == Phase::apply || GetParam().phase == Phase::commit;
  for (int r = kTrainers + kRelays; r < kRanks; ++r) {
    for (bool untouched : seen[r].untouched) EXPECT_TRUE(untouched) << "rollout rank " << r;
    if (!in_pause) {
      EXPECT_TRUE(seen[r].holds_committed[1]) << "rollout rank " << r << ": the failed version was applied";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EachRoleEachPhase, StagedFailureTest,
                         ::testing::Values(FailureCase{Role::trainer, 1, Phase::stream},
                                           FailureCase{Role::relay, 0, Phase::stream},
                                           FailureCase{Role::rollout, 1, Phase::stage},
                                           FailureCase{Role::rollout, 1, Phase::apply},
                                           FailureCase{Role::rollout, 0, Phase::commit}),
                         case_name);

INSTANTIATE_TEST_SUITE_P(EachRoleEachPhase, EndpointFailureTest,
                         ::testing::Values(FailureCase{Role::trainer, 0, Phase::encode},
                                           FailureCase{Role::trainer, 1, Phase::stream},
                                           FailureCase{Role::trainer, 0, Phase::commit},
                                           FailureCase{Role::relay, 0, Phase::stream},
                                           FailureCase{Role::relay, 0, Phase::commit},
                                           FailureCase{Role::rollout, 1, Phase::apply},
                                           FailureCase{Role::rollout, 0, Phase::commit}),
                         case_name);

}  // namespace
}  // namespace dcr
