#include "src/refit/store_layout.h"

#include "dcr/core/hash.h"

namespace dcr {
namespace {

uint64_t plan_hash(const RefitPlan& plan) {
  std::vector<uint64_t> words;
  for (size_t t = 0; t < plan.frames.size(); ++t) {
    for (const PlannedFrame& f : plan.frames[t]) {
      words.insert(words.end(), {t, f.box.tensor, f.box.row0, f.box.rows, f.box.col0, f.box.cols, f.parts.size()});
      for (int r : f.receivers) words.push_back(static_cast<uint64_t>(r));
    }
  }
  return hash64(words.data(), words.size() * sizeof(uint64_t));
}

std::string hex16(uint64_t value) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// "rollout_tp: store 2, this job 1; plan: ..." for every field that differs.
std::string differences(const nlohmann::json& store, const nlohmann::json& mine) {
  std::string text;
  for (auto it = mine.begin(); it != mine.end(); ++it) {
    const nlohmann::json there = store.contains(it.key()) ? store[it.key()] : nlohmann::json();
    if (there != it.value()) {
      text += (text.empty() ? "" : "; ") + it.key() + ": store " + there.dump() + ", this job " + it.value().dump();
    }
  }
  return text;
}

Status read_layout(const FrameSpool& spool, nlohmann::json* out, bool* found) {
  std::vector<uint8_t> bytes;
  DCR_TRY(spool.store().get(kLayoutKey, &bytes, found));
  if (!*found) return Status::ok();
  *out = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  DCR_REQUIRE(out->is_object(), Code::corrupt, "'" + spool.describe() + "/LAYOUT' is not a JSON object");
  return Status::ok();
}

}  // namespace

nlohmann::json store_layout(const RefitConfig& c, const RefitPlan& plan) {
  uint64_t frames = 0;
  for (const auto& per_trainer : plan.frames) frames += per_trainer.size();
  return {{"format", "dcr-store-layout 1"},
          {"model", hex16(plan.manifest.hash())},
          {"trainers", c.trainers},
          {"train_tp", c.train_tp},
          {"train_ep", c.train_ep},
          {"rollouts", plan.rollout_holdings.size()},
          {"rollout_tp", c.rollout_tp},
          {"rollout_ep", c.rollout_ep},
          {"fuse", c.fuse},
          {"serve_quant", serve_quant_name(plan.quant)},
          {"frame_elements", c.frame_elements},
          {"bundle_below", c.bundle_below},
          {"frames", frames},
          {"plan", hex16(plan_hash(plan))}};
}

Status put_layout(const FrameSpool& spool, const nlohmann::json& mine) {
  nlohmann::json there;
  bool found = false;
  DCR_TRY(read_layout(spool, &there, &found));
  if (!found) {
    const std::string text = mine.dump(2) + "\n";
    return spool.store().put(kLayoutKey, reinterpret_cast<const uint8_t*>(text.data()), text.size(), true);
  }
  const std::string diff = differences(there, mine);
  DCR_REQUIRE(diff.empty(), Code::invalid_argument,
              "store '" + spool.describe() + "' holds versions published for another layout (" + diff +
                  "); publish to a fresh prefix, or relaunch with the store's options");
  return Status::ok();
}

Status check_layout(const FrameSpool& spool, const nlohmann::json& mine) {
  nlohmann::json there;
  bool found = false;
  DCR_TRY(read_layout(spool, &there, &found));
  DCR_REQUIRE(found, Code::not_found, "store '" + spool.describe() + "' has no LAYOUT yet (no publisher has started)");
  const std::string diff = differences(there, mine);
  DCR_REQUIRE(diff.empty(), Code::invalid_argument,
              "store '" + spool.describe() + "' was published for another layout than this follow job's (" + diff +
                  "); launch the follow job with the publisher's --trainers, --train-tp, --rollout-tp, --fuse, "
                  "--serve-quant, --frame-elements, --bundle-below and model, and as many rollout ranks as its --rollouts");
  return Status::ok();
}

}  // namespace dcr
