#include "dcr/layout/training_layout.h"

#include <algorithm>

#include "dcr/layout/tp_split.h"

namespace dcr {

namespace {

Status check_layout(const TrainingLayout& layout, int rank) {
  const std::pair<const char*, int> degrees[] = {
      {"fsdp", layout.fsdp}, {"tp", layout.tp}, {"pp", layout.pp}, {"dp", layout.dp}};
  for (const auto& [name, degree] : degrees) {
    DCR_REQUIRE(degree >= 1, Code::invalid_argument,
                std::string("training layout: ") + name + " must be at least 1, got " + std::to_string(degree));
  }
  DCR_REQUIRE(layout.rules != nullptr, Code::invalid_argument, "training layout: no model rules");
  const int group = layout.fsdp * layout.tp;
  DCR_REQUIRE(layout.ep >= 1 && group % layout.ep == 0, Code::invalid_argument,
              "training layout: ep " + std::to_string(layout.ep) + " must divide the " + std::to_string(group) +
                  " ranks of a stage of one replica (tp * fsdp)");
  DCR_REQUIRE(rank >= 0 && rank < layout.world(), Code::invalid_argument,
              "training rank " + std::to_string(rank) + " is outside the world of pp * dp * tp * fsdp = " +
                  std::to_string(layout.world()));
  return Status::ok();
}

int64_t layer_count(const ModelRules& rules) {
  int64_t layers = 0;
  for (const TensorRule& r : rules.tensors) layers = std::max(layers, r.layer + 1);
  return layers;
}

// The stage that holds layer `layer` (bounds: stage_bounds).
int stage_of_layer(const std::vector<int64_t>& bounds, int64_t layer) {
  int s = 0;
  while (s + 2 < static_cast<int>(bounds.size()) && layer >= bounds[s + 1]) ++s;
  return s;
}

// Whether stage `stage` holds tensor `id`, and whether it owns it (sends it) or only keeps a copy
// (the last stage's tied embeddings).
bool stage_holds(const TrainingLayout& l, const std::vector<int64_t>& bounds, uint32_t id, int stage, bool* owner) {
  const TensorRule& rule = l.rules->tensors[id];
  *owner = true;
  if (l.pp == 1) return true;
  if (rule.layer >= 0) return stage_of_layer(bounds, rule.layer) == stage;
  if (rule.stage == PipelineStage::last) return stage == l.pp - 1;
  if (stage == 0) return true;
  *owner = false;
  return stage == l.pp - 1 && l.rules->dims.tied && rule.kind == SplitKind::vocab;
}

// How one tensor is held: the part of the model it shards, over how many ranks, which of them this
// rank is, and whether this rank lists pieces (owns) or holds nothing of it at all.
struct Sharding {
  Box part;
  std::string group;  // "#tp<t>" or "#ep<g>" or ""
  int ranks = 1, index = 0;
  bool owner = true, held = true;
};

bool is_expert(SplitKind k) { return k == SplitKind::expert_column || k == SplitKind::expert_row; }

// The expert group that holds expert e (expert_range's placement).
int expert_group(int64_t e, int64_t experts, int ep) {
  for (int g = 0;; ++g) {
    int64_t first = 0, count = 0;
    expert_range(experts, ep, g, &first, &count);
    if (e < first + count || g == ep - 1) return g;
  }
}

// `rank` is the rank within its stage group (tp_rank * fsdp + fsdp_rank).
Status sharding_of(const Manifest& m, const TrainingLayout& l, uint32_t id, int rank, Sharding* s) {
  const TensorRule& rule = l.rules->tensors[id];
  const int world = l.fsdp * l.tp;
  if (l.ep > 1 && is_expert(rule.kind)) {
    const int group_size = world / l.ep, group = rank / group_size;
    DCR_REQUIRE(rule.expert < l.rules->dims.experts, Code::invalid_argument,
                "tensor '" + m.tensors[id].name + "' is expert " + std::to_string(rule.expert) + " of " +
                    std::to_string(l.rules->dims.experts) + " (config.json)");
    s->part = whole_tensor(id, m.tensors[id]);
    s->group = "#ep" + std::to_string(expert_group(rule.expert, l.rules->dims.experts, l.ep));
    s->ranks = group_size;
    s->index = rank % group_size;
    s->held = s->group == "#ep" + std::to_string(group);
    return Status::ok();
  }
  const int tp_rank = rank / l.fsdp;
  DCR_TRY(training_part(m, *l.rules, id, l.tp, tp_rank, &s->part));
  s->group = l.tp > 1 ? "#tp" + std::to_string(tp_rank) : "";
  s->ranks = l.fsdp;
  s->index = rank % l.fsdp;
  s->owner = tp_rank == 0 || (rule.kind != SplitKind::replicated && !m.tensors[id].is_buffer);
  return Status::ok();
}

// Appends the pieces holding flat elements [begin, end) of `part` (row-major, part.cols wide);
// flat element f sits at buffer offset f - base.
void add_flat_range(const Box& part, uint64_t begin, uint64_t end, uint64_t base, uint32_t buffer,
                    std::vector<LocalPiece>* pieces) {
  const uint64_t width = part.cols;
  auto add = [&](uint64_t flat, uint64_t rows, uint64_t cols) {
    const Box box{part.tensor, part.row0 + flat / width, rows, part.col0 + flat % width, cols};
    pieces->push_back(LocalPiece{box, buffer, flat - base, width});
  };
  uint64_t at = begin;
  if (at < end && at % width != 0) {
    const uint64_t cols = std::min(end - at, width - at % width);
    add(at, 1, cols);
    at += cols;
  }
  const uint64_t rows = (end - at) / width;
  if (rows > 0) {
    add(at, rows, width);
    at += rows * width;
  }
  if (at < end) add(at, 1, end - at);
}

// Appends the piece holding rows [begin, end) of `part` (whole rows, in units of `unit` rows:
// block rows of a block-quantized weight, or single rows of its scale grid); row r sits at buffer
// offset (r - base) * part.cols.
void add_row_band(const Box& part, uint64_t begin, uint64_t end, uint64_t base, uint32_t buffer,
                  std::vector<LocalPiece>* pieces) {
  if (begin >= end) return;
  const Box box{part.tensor, part.row0 + begin, end - begin, part.col0, part.cols};
  pieces->push_back(LocalPiece{box, buffer, (begin - base) * part.cols, part.cols});
}

}  // namespace

TrainingCoords training_coords(const TrainingLayout& layout, int rank) {
  TrainingCoords c;
  c.fsdp = rank % layout.fsdp;
  rank /= layout.fsdp;
  c.tp = rank % layout.tp;
  rank /= layout.tp;
  c.dp = rank % layout.dp;
  c.pp = rank / layout.dp;
  return c;
}

Status stage_bounds(const TrainingLayout& layout, std::vector<int64_t>* bounds) {
  const int64_t layers = layer_count(*layout.rules);
  const std::string model = "the model's " + std::to_string(layers) + " layers";
  DCR_REQUIRE(layout.pp == 1 || layout.rules->has_layers, Code::invalid_argument,
              "--train-pp " + std::to_string(layout.pp) + ": model family '" + layout.rules->family +
                  "' has no \"layer\" pattern, so its tensors have no layers to stage");
  bounds->assign(1, 0);
  if (layout.pp == 1 && layout.pp_layers.empty()) {
    bounds->push_back(layers);
    return Status::ok();
  }
  if (!layout.pp_layers.empty()) {
    DCR_REQUIRE(static_cast<int>(layout.pp_layers.size()) == layout.pp, Code::invalid_argument,
                "--train-pp-layers lists " + std::to_string(layout.pp_layers.size()) + " stages; --train-pp is " +
                    std::to_string(layout.pp));
    for (int n : layout.pp_layers) bounds->push_back(bounds->back() + n);
    DCR_REQUIRE(bounds->back() == layers && *std::min_element(layout.pp_layers.begin(), layout.pp_layers.end()) >= 1,
                Code::invalid_argument,
                "--train-pp-layers must give every stage at least one layer and add up to " + model + " (they add up to " +
                    std::to_string(bounds->back()) + ")");
    return Status::ok();
  }
  DCR_REQUIRE(layers % layout.pp == 0 && layers >= layout.pp, Code::invalid_argument,
              "--train-pp " + std::to_string(layout.pp) + " does not divide " + model +
                  " evenly; list each stage's layers with --train-pp-layers (as Megatron's uneven pipeline split)");
  for (int s = 1; s <= layout.pp; ++s) bounds->push_back(layers / layout.pp * s);
  return Status::ok();
}

Status training_holdings(const Manifest& manifest, const TrainingLayout& layout, int rank, Holdings* out) {
  DCR_TRY(check_layout(layout, rank));
  DCR_TRY(manifest.validate());
  std::vector<int64_t> bounds;
  DCR_TRY(stage_bounds(layout, &bounds));
  const TrainingCoords at = training_coords(layout, rank);
  Holdings holdings;
  for (uint32_t id = 0; id < manifest.tensors.size(); ++id) {
    bool stage_owns = true;
    if (!stage_holds(layout, bounds, id, at.pp, &stage_owns)) continue;
    Sharding s;
    DCR_TRY(sharding_of(manifest, layout, id, at.tp * layout.fsdp + at.fsdp, &s));
    if (!s.held) continue;
    s.owner = s.owner && stage_owns;
    const uint64_t ranks = static_cast<uint64_t>(s.ranks);
    const TensorRule& rule = layout.rules->tensors[id];
    // Block-quantized tensors are cut in whole block rows (unit: rows of the part per block row).
    const uint64_t unit = rule.block == 0 ? 0 : rule.scales_of >= 0 ? 1 : rule.block;
    const uint64_t n = unit ? s.part.rows : s.part.elements();
    const uint64_t units = unit ? (n + unit - 1) / unit : n;
    const uint64_t shard = (units + ranks - 1) / ranks * (unit ? unit : 1);
    const uint64_t base = shard * static_cast<uint64_t>(s.index);
    const uint64_t elements = unit ? shard * s.part.cols : shard;
    const uint32_t buffer = static_cast<uint32_t>(holdings.buffer_names.size());
    holdings.buffer_names.push_back(manifest.tensors[id].name + s.group + "#fsdp" + std::to_string(s.index));
    holdings.buffer_elements.push_back(elements);
    holdings.buffer_shapes.push_back({static_cast<int64_t>(elements)});
    holdings.buffer_dtypes.push_back(manifest.tensors[id].dtype);
    if (!s.owner) continue;
    const uint64_t begin = std::min(base, n), end = std::min(base + shard, n);
    if (unit) {
      add_row_band(s.part, begin, end, base, buffer, &holdings.pieces);
    } else {
      add_flat_range(s.part, begin, end, base, buffer, &holdings.pieces);
    }
  }
  *out = std::move(holdings);
  return Status::ok();
}

}  // namespace dcr
