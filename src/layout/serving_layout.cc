#include "dcr/layout/serving_layout.h"

#include <algorithm>
#include <map>

#include "dcr/layout/tp_split.h"

namespace dcr {

namespace {

// One serving buffer and the tensors loaded into it.
struct BufferPlan {
  std::string name;
  SplitKind kind = SplitKind::replicated;
  bool fused = false;  // named by its rules' "serve": members stacked
  std::vector<uint32_t> tensors;
};

// Where this rank sits: its tp rank, and its expert group and expert tp rank.
struct RankPlace {
  int tp = 1, tp_rank = 0, ep = 1, moe_tp = 1, ep_rank = 0, moe_rank = 0;
};

bool is_expert(SplitKind k) { return k == SplitKind::expert_column || k == SplitKind::expert_row; }

// Serving buffers in order of their first tensor.
std::vector<BufferPlan> plan_buffers(const Manifest& m, const ServingLayout& layout) {
  std::vector<BufferPlan> plans;
  std::map<std::string, size_t> index;
  for (uint32_t id = 0; id < m.tensors.size(); ++id) {
    const TensorRule& rule = layout.rules->tensors[id];
    const bool fused = !rule.serve.empty() && (layout.fuse || is_expert(rule.kind));
    const std::string name = fused ? rule.serve : m.tensors[id].name;
    const auto it = index.emplace(name, plans.size());
    if (it.second) plans.push_back(BufferPlan{name, rule.kind, fused, {}});
    plans[it.first->second].tensors.push_back(id);
  }
  return plans;
}

// Orders a fused buffer's tensors by (expert, member) and checks every slot is filled once.
Status order_members(const Manifest& m, const ModelRules& rules, int64_t experts, BufferPlan* b) {
  std::map<std::pair<int64_t, int>, uint32_t> slots;
  for (uint32_t id : b->tensors) {
    const TensorRule& r = rules.tensors[id];
    const auto key = std::make_pair(r.expert, r.member);
    const auto it = slots.emplace(key, id);
    DCR_REQUIRE(it.second, Code::invalid_argument,
                "tensors '" + m.tensors[it.first->second].name + "' and '" + m.tensors[id].name +
                    "' fill the same place of serving buffer '" + b->name + "'");
  }
  const TensorRule& first = rules.tensors[b->tensors[0]];
  const int64_t groups = is_expert(b->kind) ? experts : 1;
  const size_t expected = static_cast<size_t>(groups) * static_cast<size_t>(first.members);
  DCR_REQUIRE(!is_expert(b->kind) || experts > 0, Code::invalid_argument,
              "serving buffer '" + b->name + "' holds experts, but config.json gives no num_local_experts or num_experts");
  DCR_REQUIRE(slots.size() == expected && (b->tensors.size() == 1 || slots.rbegin()->first.first < groups),
              Code::invalid_argument,
              "serving buffer '" + b->name + "' needs " + std::to_string(expected) + " tensors (" +
                  std::to_string(groups) + " x " + std::to_string(first.members) + " members) but the checkpoint has " +
                  std::to_string(slots.size()) + " for it, from '" + m.tensors[b->tensors[0]].name + "'");
  b->tensors.clear();
  for (const auto& s : slots) b->tensors.push_back(s.second);
  return Status::ok();
}

// The shape of a part: its extent along dim 0 and, for matrices, its columns.
std::vector<int64_t> part_shape(const TensorDesc& t, const Box& part, uint64_t rows) {
  if (t.shape.size() > 2 || t.shape.empty()) return t.shape;
  if (t.shape.size() == 1) return {static_cast<int64_t>(part.cols)};
  return {static_cast<int64_t>(rows), static_cast<int64_t>(part.cols)};
}

// Adds one buffer: its tensors' parts (only the local experts' for expert buffers) stacked along
// dim 0 in order, each member's part taking the same place in every expert's block.
Status add_buffer(const Manifest& m, const ServingLayout& layout, const RankPlace& at, const BufferPlan& b,
                  Holdings* h) {
  const ModelRules& rules = *layout.rules;
  int64_t first = 0, count = 1;
  if (is_expert(b.kind)) expert_range(rules.dims.experts, at.ep, at.ep_rank, &first, &count);
  DCR_REQUIRE(count > 0, Code::invalid_argument,
              "serving buffer '" + b.name + "': ep " + std::to_string(at.ep) + " is larger than the " +
                  std::to_string(rules.dims.experts) + " experts");
  const uint32_t buffer = static_cast<uint32_t>(h->buffer_names.size());
  uint64_t offset = 0, stacked = 0;
  std::vector<int64_t> shape;
  for (uint32_t id : b.tensors) {
    const TensorRule& rule = rules.tensors[id];
    if (is_expert(b.kind) && (rule.expert < first || rule.expert >= first + count)) continue;
    Box part;
    uint64_t rows = 0;
    if (rule.kind == SplitKind::vocab) {
      DCR_TRY(vocab_band(m, rules, id, at.tp, at.tp_rank, &part, &rows));
    } else {
      DCR_TRY(serving_part(m, rules, id, at.tp, at.tp_rank, at.moe_tp, at.moe_rank, &part));
      rows = part.rows;
    }
    const std::vector<int64_t> mine = part_shape(m.tensors[id], part, rows);
    if (shape.empty()) shape = mine;
    DCR_REQUIRE(mine.size() == shape.size() && (mine.size() < 2 || mine[1] == shape[1]), Code::invalid_argument,
                "cannot fuse '" + m.tensors[id].name + "' (shape " + std::to_string(mine.size() ? mine.back() : 0) +
                    " wide) with '" + m.tensors[b.tensors[0]].name + "' into '" + b.name + "'");
    if (!part.empty()) h->pieces.push_back(LocalPiece{part, buffer, offset, part.cols});
    offset += rows * part.cols;
    stacked += mine.empty() ? 1 : static_cast<uint64_t>(mine[0]);
  }
  if (!shape.empty() && shape.size() <= 2) shape[0] = static_cast<int64_t>(stacked);
  if (is_expert(b.kind)) {
    shape[0] /= count;
    shape.insert(shape.begin(), count);
  }
  h->buffer_names.push_back(b.name);
  h->buffer_elements.push_back(offset);
  h->buffer_shapes.push_back(shape);
  h->buffer_dtypes.push_back(m.tensors[b.tensors[0]].dtype);
  return Status::ok();
}

Status place(const ServingLayout& layout, int rollout_rank, RankPlace* at) {
  DCR_REQUIRE(layout.rules != nullptr, Code::invalid_argument, "serving layout: no model rules");
  DCR_REQUIRE(layout.tp >= 1, Code::invalid_argument,
              "serving layout: tp must be at least 1, got " + std::to_string(layout.tp));
  DCR_REQUIRE(layout.ep >= 1 && layout.tp % layout.ep == 0, Code::invalid_argument,
              "serving layout: ep " + std::to_string(layout.ep) + " must divide tp " + std::to_string(layout.tp));
  DCR_REQUIRE(rollout_rank >= 0, Code::invalid_argument,
              "rollout rank must not be negative, got " + std::to_string(rollout_rank));
  at->tp = layout.tp;
  at->tp_rank = rollout_rank % layout.tp;
  at->ep = layout.ep;
  at->moe_tp = layout.tp / layout.ep;
  at->ep_rank = at->tp_rank / at->moe_tp;
  at->moe_rank = at->tp_rank % at->moe_tp;
  return Status::ok();
}

}  // namespace

Status serving_holdings(const Manifest& manifest, const ServingLayout& layout, int rollout_rank, Holdings* out) {
  RankPlace at;
  DCR_TRY(place(layout, rollout_rank, &at));
  DCR_TRY(manifest.validate());
  Holdings holdings;
  for (BufferPlan& b : plan_buffers(manifest, layout)) {
    if (b.fused) DCR_TRY(order_members(manifest, *layout.rules, layout.rules->dims.experts, &b));
    DCR_TRY(add_buffer(manifest, layout, at, b, &holdings));
  }
  *out = std::move(holdings);
  return Status::ok();
}

}  // namespace dcr
