// What every rank knows without talking: the model, every trainer's and rollout's holdings, every
// trainer's frames (boxes) and who receives each. All ranks compute the same plan from the config.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "dcr/codec/frame.h"
#include "dcr/core/box.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/model_rules.h"
#include "dcr/layout/piece.h"
#include "dcr/layout/serve_quant.h"
#include "dcr/layout/training_layout.h"
#include "dcr/refit/options.h"
#include "dcr/refit/topology.h"

namespace dcr {

struct PlannedFrame {
  Box box;                     // the frame header's box: its canonical box, or a bundle's (row0 its id)
  std::vector<int> receivers;  // rollout indices
  std::vector<Box> parts;      // the canonical boxes it carries: {box}, or a bundle's boxes in order
  bool bundle() const { return box.tensor == kBundleTensor; }
};

struct RefitPlan {
  Manifest model;               // the checkpoint's (or preset's) tensors: what a version source gives
  nlohmann::json model_config;  // the checkpoint's config.json (null for presets and bare files)
  // The model family file's text when the caller has it (a follower: the publication's); empty:
  // make_plan picks the family by --model-family or config.json.
  std::string family_text;
  // What rollouts serve (serve_quant.h): `model`, or its block-FP8 form. Holdings, frames and shards
  // are made of these tensors; their bits come from the model's through served_bytes().
  Manifest manifest;
  ModelRules rules;                  // the model family's split of every served tensor
  std::vector<ServedTensor> served;  // where each served tensor's bits come from
  ServeQuant quant = ServeQuant::none;
  // What each trainer holds (training_layout.h); data-parallel replicas hold alike.
  std::vector<Holdings> trainer_holdings;
  std::vector<Holdings> rollout_holdings;
  // Per trainer, what it sends: the frames of its shard, cut and bundled once per stage group and
  // spread over the group's data-parallel replicas (each frame sent by one).
  std::vector<std::vector<PlannedFrame>> frames;
  // The serving layouts frames are cut for (promised_layouts() and this job's own, ascending): each
  // frame lies inside one piece, or apart from every piece, of every rank of each.
  std::vector<ServeShape> cut_layouts;

  // The served bits of any box, from the model's bits.
  BoxBytes served_bytes(const TensorBytes& model_bits) const;
  // The model boxes whose bits the pieces of `holdings` are made from (what a version source must
  // give that rank).
  std::vector<Box> model_boxes(const Holdings& holdings) const;
  // Whether every served tensor is a model tensor's bytes as they are (no quantized form), and
  // then where each served tensor's bytes are: a trainer sends from them in place (Shard::view).
  bool served_as_is() const;
  TensorBytes served_in_place(const TensorBytes& model_bits) const;

  // Receivers of the frame whose box starts at (tensor, row0, col0); null for an unknown box.
  const std::vector<int>* receivers_of(const Box& box) const;
  // Frames per step that reach rollout i, and that relay r receives from its parent.
  uint64_t frames_for_rollout(int i) const;
  uint64_t frames_for_relay(const Topology& topology, int r) const;
  // Whether the subtree below `child` (a world rank: relay or rollout) needs `receivers`.
  static bool child_needs(const Topology& topology, int child, const std::vector<int>& receivers);

  // (tensor, row0, col0) of each frame -> (trainer, frame); frames never overlap.
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, std::pair<int, size_t>> index;
};

// The training layout `config` gives trainers of a model under `rules` (which must outlive it).
TrainingLayout training_layout(const RefitOptions& config, const ModelRules& rules);

// Fills rules (from --model-family, else config.json's model_type / architectures, else the "dcr"
// presets' family), the served model (--serve-quant), then every holding and frame. The caller has
// put a checkpoint's, a preset's or its own manifest (`model`) and config.json (if any) in *plan;
// invalid_argument when `model` is empty.
Status make_plan(const RefitOptions& config, const Topology& topology, RefitPlan* plan);

}  // namespace dcr
