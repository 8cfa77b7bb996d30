// Training layouts on the library's endpoints, on loopback threads: pipeline stages and
// data-parallel replicas (with TP and FSDP) publish the `tiny` preset's versions from their own
// buffers, as a training framework holds them. Checked from the frames each trainer actually sent
// (a transport that keeps them), not from the plan: every canonical element travels in exactly one
// frame per version, whatever the replicas; the rollouts end bit-exact; replicas add no bytes; and
// the busiest trainer scans at most 1.2x the mean. --check-replicas refuses a version where one
// replica differs in one bit, naming the tensor and both ranks; without it a replica's copy of a
// part another replica sends is never read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>

#include "dcr/codec/decoder.h"
#include "dcr/core/hash.h"
#include "dcr/model/presets.h"
#include "dcr/refit/endpoint.h"
#include "dcr/refit/plan.h"
#include "dcr/transport/forwarding.h"
#include "support/random_data.h"

namespace dcr {
namespace {

// The canonical model at `version`: random at version 1, each later version a 3% step on.
CanonicalBits model_at(const Manifest& m, uint64_t version) { return test::versioned_model(m, version, 300); }

// A trainer's link that keeps a copy of every frame it sends.
class Keeping : public ForwardingTransport {
 public:
  using ForwardingTransport::ForwardingTransport;
  Status send(int peer, uint32_t channel, SharedBytes message) override {
    sent.push_back(message);
    return ForwardingTransport::send(peer, channel, std::move(message));
  }
  std::vector<SharedBytes> sent;
};

struct Layout {
  int trainers, tp, pp, dp;
};

std::string describe(const Layout& l) {
  return "tp " + std::to_string(l.tp) + " x pp " + std::to_string(l.pp) + " x dp " + std::to_string(l.dp) + " (" +
         std::to_string(l.trainers) + " trainers)";
}

// What a job did: each trainer's publish status and message per version, the frames each sent,
// its scanned bytes per version, and whether every rollout held each version bit for bit.
struct Outcome {
  std::vector<std::vector<Status>> published;
  std::vector<std::vector<SharedBytes>> frames;
  std::vector<std::vector<uint64_t>> scanned;
  std::vector<bool> exact;
};

class TrainingLayouts : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(make_preset("tiny", &spec_.manifest).is_ok()); }

  // Runs `layout` -> 1 relay -> rollout_tp rollouts for `versions`; `tamper` may change a trainer's
  // buffers before it publishes a version.
  Outcome run(const Layout& layout, int rollout_tp, const std::vector<uint64_t>& versions,
              const std::function<void(int, uint64_t, Shard*)>& tamper = {}) {
    spec_.options.trainers = layout.trainers;
    spec_.options.train_tp = layout.tp;
    spec_.options.train_pp = layout.pp;
    spec_.options.train_dp = layout.dp;
    spec_.options.relays = 1;
    spec_.options.rollout_tp = rollout_tp;
    spec_.options.frame_elements = 1 << 14;
    spec_.options.bundle_below = 1 << 12;
    spec_.options.contexts = ContextMode::off;
    spec_.options.timeout_s = 30;
    const int ranks = layout.trainers + 1 + rollout_tp;
    Outcome out;
    out.published.resize(layout.trainers);
    out.frames.resize(layout.trainers);
    out.scanned.resize(layout.trainers);
    std::vector<std::vector<bool>> exact(rollout_tp);
    auto transports = make_loopback_group(ranks);
    auto collectives = thread_collective_group(ranks);
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
      threads.emplace_back([&, r] {
        if (r < layout.trainers) return train(r, versions, tamper, transports[r].get(), collectives[r].get(), &out);
        if (r == layout.trainers) return relay(transports[r].get(), collectives[r].get());
        roll_out(versions, transports[r].get(), collectives[r].get(), &exact[r - layout.trainers - 1]);
      });
    }
    for (std::thread& t : threads) t.join();
    for (size_t v = 0; v < versions.size(); ++v) {
      bool all = true;
      for (const auto& per_rollout : exact) all = all && v < per_rollout.size() && per_rollout[v];
      out.exact.push_back(all);
    }
    return out;
  }

  void train(int r, const std::vector<uint64_t>& versions, const std::function<void(int, uint64_t, Shard*)>& tamper,
             Transport* transport, Collective* control, Outcome* out) {
    Keeping keeping(transport);
    std::unique_ptr<Trainer> trainer;
    const Status created = Trainer::create(spec_, &keeping, control, &trainer);
    ASSERT_TRUE(created.is_ok()) << created.to_string();
    Shard shard(spec_.manifest, trainer->holdings());  // the replica's own copy of its stage's shard
    std::vector<BufferMemory> memory;
    for (size_t b = 0; b < trainer->holdings().buffer_names.size(); ++b) {
      memory.push_back({shard.buffer(b), shard.buffer_bytes(b), trainer->holdings().buffer_dtypes[b], MemorySpace::host});
    }
    for (uint64_t version : versions) {
      const CanonicalBits model = model_at(spec_.manifest, version);
      shard.load([&model](uint32_t t) { return model[t].data(); });
      if (tamper) tamper(r, version, &shard);
      out->published[r].push_back(trainer->publish(version, memory));
      out->scanned[r].push_back(trainer->last_step().scanned_bytes);
    }
    EXPECT_TRUE(trainer->close().is_ok());
    out->frames[r] = keeping.sent;
  }

  void relay(Transport* transport, Collective* control) {
    std::unique_ptr<Relay> relay;
    ASSERT_TRUE(Relay::create(spec_, transport, control, &relay).is_ok());
    EXPECT_TRUE(relay->serve().is_ok());
  }

  void roll_out(const std::vector<uint64_t>& versions, Transport* transport, Collective* control,
                std::vector<bool>* exact) {
    std::unique_ptr<Rollout> rollout;
    ASSERT_TRUE(Rollout::create(spec_, transport, control, &rollout).is_ok());
    Shard serving(spec_.manifest, rollout->holdings());
    std::vector<BufferMemory> memory;
    for (size_t b = 0; b < rollout->holdings().buffer_names.size(); ++b) {
      memory.push_back({serving.buffer(b), serving.buffer_bytes(b), rollout->holdings().buffer_dtypes[b], MemorySpace::host});
    }
    ASSERT_TRUE(rollout->attach(memory).is_ok());
    for (size_t i = 0; i < versions.size(); ++i) {
      uint64_t version = 0;
      bool closed = false;
      const Status st = rollout->receive(&version, &closed);
      exact->push_back(st.is_ok() && version == versions[i] && holds(serving, version));
    }
    uint64_t version = 0;
    bool closed = false;
    EXPECT_TRUE(rollout->receive(&version, &closed).is_ok());
    EXPECT_TRUE(closed);
  }

  // Whether `serving`'s buffers hold the serving layout of the model at `version`, by hashes of
  // the actual bytes.
  bool holds(const Shard& serving, uint64_t version) const {
    const CanonicalBits model = model_at(spec_.manifest, version);
    Shard expected(spec_.manifest, serving.holdings());
    expected.load([&model](uint32_t t) { return model[t].data(); });
    for (size_t b = 0; b < serving.holdings().buffer_names.size(); ++b) {
      if (hash64(serving.buffer(b), serving.buffer_bytes(b)) != hash64(expected.buffer(b), expected.buffer_bytes(b))) {
        return false;
      }
    }
    return true;
  }

  // How many frames sent for `version` carry each canonical element (per tensor), read from the
  // frames' headers and bundle box lists; and their bytes.
  std::vector<std::vector<uint8_t>> carried(const Outcome& out, uint64_t version, uint64_t* bytes) const {
    std::vector<std::vector<uint8_t>> counts;
    for (const TensorDesc& t : spec_.manifest.tensors) counts.emplace_back(t.numel(), 0);
    FrameDecoder decoder;
    *bytes = 0;
    for (const auto& per_trainer : out.frames) {
      for (const SharedBytes& frame : per_trainer) {
        FrameView view;
        EXPECT_TRUE(view_frame(frame->data(), frame->size(), &view).is_ok());
        if (view.header.target_version != version) continue;
        *bytes += frame->size();
        std::vector<Box> boxes = {view.header.box};
        if (view.header.is_bundle()) {
          EXPECT_TRUE(decoder.bundle_boxes(view, &boxes).is_ok());
        }
        for (const Box& b : boxes) {
          const uint64_t cols = tensor_cols(spec_.manifest.tensors[b.tensor]);
          for (uint64_t r = b.row0; r < b.row0 + b.rows; ++r) {
            for (uint64_t c = b.col0; c < b.col0 + b.cols; ++c) ++counts[b.tensor][r * cols + c];
          }
        }
      }
    }
    return counts;
  }

  EndpointSpec spec_;
};

// Each layout at rollout TP 1 and 2: every version bit-exact, every element in exactly one frame,
// the same frame bytes as the layout with one replica, and the scanning spread evenly.
TEST_F(TrainingLayouts, ReplicasShareTheWorkAndEveryElementTravelsOnce) {
  const std::vector<uint64_t> versions = {1, 2, 3};
  const std::pair<Layout, Layout> cases[] = {
      {{8, 2, 2, 2}, {4, 2, 2, 1}},  // TP 2 x PP 2 x DP 2
      {{8, 1, 2, 2}, {4, 1, 2, 1}},  // PP 2 x DP 2 x FSDP 2
      {{2, 1, 1, 2}, {1, 1, 1, 1}},  // DP 2
      {{4, 1, 1, 4}, {1, 1, 1, 1}},  // DP 4
  };
  for (const auto& [layout, single] : cases) {
    for (int rollout_tp : {1, 2}) {
      SCOPED_TRACE(describe(layout) + ", rollout TP " + std::to_string(rollout_tp));
      const Outcome got = run(layout, rollout_tp, versions);
      const Outcome one = run(single, rollout_tp, versions);
      for (size_t v = 0; v < versions.size(); ++v) {
        for (int t = 0; t < layout.trainers; ++t) ASSERT_TRUE(got.published[t][v].is_ok()) << got.published[t][v].to_string();
        EXPECT_TRUE(got.exact[v]) << "version " << versions[v];
        uint64_t bytes = 0, one_bytes = 0;
        const auto counts = carried(got, versions[v], &bytes);
        carried(one, versions[v], &one_bytes);
        for (size_t t = 0; t < counts.size(); ++t) {
          const auto [low, high] = std::minmax_element(counts[t].begin(), counts[t].end());
          ASSERT_TRUE(counts[t].empty() || (*low == 1 && *high == 1))
              << spec_.manifest.tensors[t].name << ": carried " << int(*low) << " to " << int(*high) << " times";
        }
        EXPECT_EQ(bytes, one_bytes) << "version " << versions[v] << ": replicas add bytes";
        uint64_t total = 0, most = 0;
        for (int t = 0; t < layout.trainers; ++t) total += got.scanned[t][v], most = std::max(most, got.scanned[t][v]);
        const double balance = double(most) * layout.trainers / double(total);
        EXPECT_LE(balance, 1.2);
        if (v == 0) std::printf("%s, rollout TP %d: busiest trainer scans %.3fx the mean\n", describe(layout).c_str(), rollout_tp, balance);
      }
    }
  }
}

// A one-bit difference in a part replica 1 does not send: --check-replicas refuses the version
// everywhere (streamed or staged), naming the tensor and both ranks; without it the version commits
// bit-exact (the owner's bits travel; the differing copy is never read).
TEST_F(TrainingLayouts, CheckReplicasRefusesReplicasThatDiffer) {
  const Layout layout{4, 1, 2, 2};  // PP 2 x DP 2: ranks 0, 1 (stage 0) and 2, 3 (stage 1)
  RefitPlan plan;
  plan.model = spec_.manifest;
  spec_.options.trainers = layout.trainers;
  spec_.options.train_pp = layout.pp;
  spec_.options.train_dp = layout.dp;
  spec_.options.rollout_tp = 1;
  spec_.options.frame_elements = 1 << 14;
  Topology topology;
  ASSERT_TRUE(make_topology_from_nodes(spec_.options, 0, std::vector<int>(layout.trainers + 2, 0), &topology).is_ok());
  ASSERT_TRUE(make_plan(spec_.options, topology, &plan).is_ok());
  // A box of stage 0 that replica 0 (rank 0) sends, so replica 1 (rank 1) only holds a copy.
  const Box box = plan.frames[0].front().parts.front();
  const std::string tensor = spec_.manifest.tensors[box.tensor].name;
  const auto flip = [box](int trainer, uint64_t version, Shard* shard) {
    Region region;
    if (trainer != 1 || version != 2 || !shard->region(box, &region).is_ok()) return;
    region.data[0] ^= 0x01;
  };
  for (const auto& [check, apply] : {std::pair{true, ApplyMode::stream}, std::pair{true, ApplyMode::staged},
                                     std::pair{false, ApplyMode::stream}}) {
    SCOPED_TRACE(std::string(check ? "--check-replicas" : "without --check-replicas") + ", --apply " +
                 apply_mode_name(apply));
    spec_.options.check_replicas = check;
    spec_.options.apply = apply;
    const Outcome got = run(layout, 1, {1, 2, 3}, flip);
    for (int t = 0; t < layout.trainers; ++t) {
      EXPECT_TRUE(got.published[t][0].is_ok());
      EXPECT_EQ(got.published[t][1].is_ok(), !check) << got.published[t][1].to_string();
      EXPECT_TRUE(got.published[t][2].is_ok()) << got.published[t][2].to_string();
    }
    const std::string said = got.published[0][1].message();
    if (check) {
      for (const std::string& word : std::vector<std::string>{"version 2", "'" + tensor + "'", "rank 0", "rank 1"}) {
        EXPECT_NE(said.find(word), std::string::npos) << said;
      }
    }
    EXPECT_EQ(got.exact[1], !check);
    EXPECT_TRUE(got.exact[2]);
  }
}

}  // namespace
}  // namespace dcr
