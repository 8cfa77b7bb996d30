#include "dcr/refit/plan.h"

#include <algorithm>

#include "dcr/layout/frame_plan.h"
#include "dcr/layout/serving_layout.h"
#include "dcr/layout/training_layout.h"

namespace dcr {

const std::vector<int>* RefitPlan::receivers_of(const Box& box) const {
  const auto it = index.find({box.tensor, box.row0, box.col0});
  if (it == index.end()) return nullptr;
  const PlannedFrame& f = frames[it->second.first][it->second.second];
  return f.box == box ? &f.receivers : nullptr;
}

uint64_t RefitPlan::frames_for_rollout(int i) const {
  uint64_t n = 0;
  for (const auto& per_trainer : frames) {
    for (const PlannedFrame& f : per_trainer) n += std::binary_search(f.receivers.begin(), f.receivers.end(), i);
  }
  return n;
}

bool RefitPlan::child_needs(const Topology& t, int child, const std::vector<int>& receivers) {
  if (t.role_of_rank[child] == Role::rollout) {
    return std::binary_search(receivers.begin(), receivers.end(), t.index_of_rank[child]);
  }
  for (int i : t.relay_subtree_rollouts[t.index_of_rank[child]]) {
    if (std::binary_search(receivers.begin(), receivers.end(), i)) return true;
  }
  return false;
}

uint64_t RefitPlan::frames_for_relay(const Topology& t, int r) const {
  uint64_t n = 0;
  for (const auto& per_trainer : frames) {
    for (const PlannedFrame& f : per_trainer) n += child_needs(t, t.relay_rank(r), f.receivers);
  }
  return n;
}

namespace {

// A trainer's frames with its boxes under `below` elements gathered into bundles: boxes with the
// same key (receivers) and dtype, in plan order, up to `most` elements a bundle. A bundle of one box
// stays a plain frame. Ids count up from *next_id.
std::vector<PlannedFrame> bundle_small(const Manifest& manifest, std::vector<PlannedFrame> frames,
                                       const std::vector<std::vector<int>>& keys, uint64_t below, uint64_t most,
                                       uint64_t* next_id) {
  std::vector<PlannedFrame> out;
  std::map<std::pair<std::vector<int>, DType>, PlannedFrame> open;
  const auto close = [&](PlannedFrame* b) {
    if (b->parts.size() == 1) b->box = b->parts[0];
    out.push_back(std::move(*b));
    b->parts.clear();
  };
  for (size_t i = 0; i < frames.size(); ++i) {
    PlannedFrame& f = frames[i];
    if (f.box.elements() >= below) {
      out.push_back(std::move(f));
      continue;
    }
    PlannedFrame& b = open[{keys[i], manifest.tensors[f.box.tensor].dtype}];
    if (!b.parts.empty() && (b.box.cols + f.box.elements() > most || b.parts.size() == kMaxBundleBoxes)) close(&b);
    if (b.parts.empty()) b = PlannedFrame{Box{kBundleTensor, (*next_id)++, 1, 0, 0}, f.receivers, {}};
    b.parts.push_back(f.box);
    b.box.cols += f.box.elements();
  }
  for (auto& entry : open) {
    if (!entry.second.parts.empty()) close(&entry.second);
  }
  return out;
}

// Frames of one stage group's shard among its data-parallel replicas, each frame to one: largest
// first, each to the replica with the fewest bytes so far (the lowest on a tie), so every replica
// scans and sends about the same bytes; each replica's frames stay in plan order. The frames are
// those one replica alone would send, so replicas add no bytes.
std::vector<std::vector<PlannedFrame>> spread_over_replicas(const Manifest& manifest, std::vector<PlannedFrame> frames,
                                                            int replicas) {
  std::vector<std::vector<PlannedFrame>> out(replicas);
  if (replicas == 1) {
    out[0] = std::move(frames);
    return out;
  }
  const auto bytes = [&manifest](const PlannedFrame& f) {
    return f.box.elements() * manifest.tensors[f.parts[0].tensor].width();
  };
  std::vector<size_t> order(frames.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes(frames[a]) > bytes(frames[b]); });
  std::vector<uint64_t> load(replicas, 0);
  std::vector<int> owner(frames.size(), 0);
  for (size_t i : order) {
    const int r = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[i] = r;
    load[r] += bytes(frames[i]);
  }
  for (size_t i = 0; i < frames.size(); ++i) out[owner[i]].push_back(std::move(frames[i]));
  return out;
}

// One replica of each layout frames are cut for: the promised ones and this job's own.
Status cut_holdings(const RefitOptions& config, const Topology& topology, const Manifest& manifest,
                    const ModelRules& rules, std::vector<ServeShape>* layouts,
                    std::vector<std::vector<Holdings>>* holdings) {
  *layouts = promised_layouts(config);
  const ServeShape own{config.rollout_tp, config.rollout_ep};
  if (topology.rollouts > 0 && std::find(layouts->begin(), layouts->end(), own) == layouts->end()) {
    layouts->push_back(own);
    std::sort(layouts->begin(), layouts->end());
  }
  holdings->assign(layouts->size(), {});
  for (size_t l = 0; l < layouts->size(); ++l) {
    const ServeShape shape = (*layouts)[l];
    const ServingLayout serving{shape.tp, config.fuse, shape.ep, &rules};
    (*holdings)[l].resize(shape.tp);
    for (int i = 0; i < shape.tp; ++i) {
      DCR_TRY(serving_holdings(manifest, serving, i, &(*holdings)[l][i])
                  .with_context("serving layout " + describe_layouts({shape})));
    }
  }
  return Status::ok();
}

// What bundles group by: a frame's receivers in this job, or, where layouts are promised, its
// receivers in one replica of each cut layout (the same on the publisher and on every follower,
// which cuts for the same layouts).
std::vector<int> bundle_key(const Box& box, const std::vector<int>& receivers, bool promised,
                            const std::vector<std::vector<Holdings>>& cut) {
  if (!promised) return receivers;
  std::vector<int> key;
  for (const std::vector<Holdings>& replica : cut) {
    for (int r : dcr::receivers(box, replica)) key.push_back(r);
    key.push_back(-1);
  }
  return key;
}

}  // namespace

BoxBytes RefitPlan::served_bytes(const TensorBytes& model_bits) const {
  return dcr::served_bytes(model, manifest, served, model_bits);
}

std::vector<Box> RefitPlan::model_boxes(const Holdings& holdings) const {
  std::vector<Box> boxes;
  for (const LocalPiece& p : holdings.pieces) boxes.push_back(model_box(model, served, p.box));
  return boxes;
}

bool RefitPlan::served_as_is() const {
  return std::all_of(served.begin(), served.end(), [](const ServedTensor& t) { return t.from == ServedFrom::copy; });
}

TensorBytes RefitPlan::served_in_place(const TensorBytes& model_bits) const {
  return [this, model_bits](uint32_t id) { return model_bits(served[id].source); };
}

TrainingLayout training_layout(const RefitOptions& config, const ModelRules& rules) {
  TrainingLayout l;
  l.tp = config.train_tp;
  l.pp = config.train_pp;
  l.dp = config.train_dp;
  l.fsdp = config.trainers / (l.tp * l.pp * l.dp);
  l.ep = config.train_ep;
  l.pp_layers = config.train_pp_layers;
  l.rules = &rules;
  return l;
}

Status make_plan(const RefitOptions& config, const Topology& topology, RefitPlan* plan) {
  DCR_REQUIRE(!plan->model.tensors.empty(), Code::invalid_argument, "the plan has no tensors (no model given)");
  ModelRules model_rules;
  if (plan->family_text.empty()) {
    DCR_TRY(rules_for_model(config.model_family, plan->model_config, plan->model, &model_rules));
  } else {
    ModelFamily family;
    DCR_TRY(parse_model_family(plan->family_text, "the publication's model family", &family));
    DCR_TRY(rules_for_family(family, plan->model_config, plan->model, &model_rules));
  }
  plan->quant = config.serve_quant;
  ServedModel served;
  DCR_TRY(serve_model(plan->model, model_rules, plan->quant, &served));
  plan->manifest = std::move(served.manifest);
  plan->rules = std::move(served.rules);
  plan->served = std::move(served.tensors);
  constexpr uint64_t kMaxFrames = uint64_t{1} << 20;
  const uint64_t at_least = plan->manifest.total_elements() / config.frame_elements;
  DCR_REQUIRE(at_least <= kMaxFrames, Code::invalid_argument,
              "--frame-elements " + std::to_string(config.frame_elements) + " cuts the model's " +
                  std::to_string(plan->manifest.total_elements()) + " elements into at least " +
                  std::to_string(at_least) + " frames (more than " + std::to_string(kMaxFrames) +
                  " in flight per step); raise it");
  const TrainingLayout training = training_layout(config, plan->rules);
  const ServingLayout serving{config.rollout_tp, config.fuse, config.rollout_ep, &plan->rules};
  plan->trainer_holdings.resize(config.trainers);
  for (int t = 0; t < config.trainers; ++t) {
    DCR_TRY(training_holdings(plan->manifest, training, t, &plan->trainer_holdings[t]).with_context("training layout"));
  }
  plan->rollout_holdings.resize(topology.rollouts);
  for (int i = 0; i < topology.rollouts; ++i) {
    DCR_TRY(serving_holdings(plan->manifest, serving, i, &plan->rollout_holdings[i]).with_context("serving layout"));
  }
  std::vector<std::vector<Holdings>> cut;
  DCR_TRY(cut_holdings(config, topology, plan->manifest, plan->rules, &plan->cut_layouts, &cut));
  std::vector<Holdings> cut_pieces;
  for (const std::vector<Holdings>& replica : cut) cut_pieces.insert(cut_pieces.end(), replica.begin(), replica.end());
  const bool promised = !promised_layouts(config).empty();
  plan->frames.assign(config.trainers, {});
  plan->index.clear();
  uint64_t bundle_id = 0;
  const int stage_group = training.tp * training.fsdp;
  for (int t = 0; t < config.trainers; ++t) {
    if (training_coords(training, t).dp != 0) continue;  // replica 0 plans for its replicas
    std::vector<Box> boxes;
    DCR_TRY(plan_frames(plan->manifest, plan->trainer_holdings[t], cut_pieces, config.frame_elements, &boxes));
    std::vector<PlannedFrame> frames;
    std::vector<std::vector<int>> keys;
    for (const Box& b : boxes) {
      frames.push_back({b, receivers(b, plan->rollout_holdings), {b}});
      if (config.bundle_below > 0) keys.push_back(bundle_key(b, frames.back().receivers, promised, cut));
    }
    if (config.bundle_below > 0) {
      frames = bundle_small(plan->manifest, std::move(frames), keys, config.bundle_below, config.frame_elements, &bundle_id);
    }
    std::vector<std::vector<PlannedFrame>> spread = spread_over_replicas(plan->manifest, std::move(frames), training.dp);
    for (int d = 0; d < training.dp; ++d) plan->frames[t + d * stage_group] = std::move(spread[d]);
  }
  for (int t = 0; t < config.trainers; ++t) {
    for (size_t i = 0; i < plan->frames[t].size(); ++i) {
      const Box& b = plan->frames[t][i].box;
      plan->index[{b.tensor, b.row0, b.col0}] = {t, i};
    }
  }
  return Status::ok();
}

}  // namespace dcr
