#include "dcr/layout/training_layout.h"

#include <algorithm>

#include "dcr/layout/tp_split.h"

namespace dcr {

namespace {

Status check_layout(const TrainingLayout& layout, int rank) {
  DCR_REQUIRE(layout.fsdp >= 1, Code::invalid_argument,
              "training layout: fsdp must be at least 1, got " + std::to_string(layout.fsdp));
  DCR_REQUIRE(layout.tp >= 1, Code::invalid_argument,
              "training layout: tp must be at least 1, got " + std::to_string(layout.tp));
  DCR_REQUIRE(layout.rules != nullptr, Code::invalid_argument, "training layout: no model rules");
  const int world = layout.fsdp * layout.tp;
  DCR_REQUIRE(layout.ep >= 1 && world % layout.ep == 0, Code::invalid_argument,
              "training layout: ep " + std::to_string(layout.ep) + " must divide the " + std::to_string(world) +
                  " training ranks");
  DCR_REQUIRE(rank >= 0 && rank < world, Code::invalid_argument,
              "training rank " + std::to_string(rank) + " is outside the world of fsdp * tp = " +
                  std::to_string(world));
  return Status::ok();
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

Status training_holdings(const Manifest& manifest, const TrainingLayout& layout, int rank, Holdings* out) {
  DCR_TRY(check_layout(layout, rank));
  DCR_TRY(manifest.validate());
  Holdings holdings;
  for (uint32_t id = 0; id < manifest.tensors.size(); ++id) {
    Sharding s;
    DCR_TRY(sharding_of(manifest, layout, id, rank, &s));
    if (!s.held) continue;
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
