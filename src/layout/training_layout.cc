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
  const int world = layout.fsdp * layout.tp;
  DCR_REQUIRE(rank >= 0 && rank < world, Code::invalid_argument,
              "training rank " + std::to_string(rank) + " is outside the world of fsdp * tp = " +
                  std::to_string(world));
  return Status::ok();
}

std::string shard_name(const std::string& tensor, const TrainingLayout& layout, int tp_rank, int fsdp_rank) {
  const std::string tp = layout.tp > 1 ? "#tp" + std::to_string(tp_rank) : "";
  return tensor + tp + "#fsdp" + std::to_string(fsdp_rank);
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

}  // namespace

Status training_holdings(const Manifest& manifest, const TrainingLayout& layout, int rank, Holdings* out) {
  DCR_TRY(check_layout(layout, rank));
  DCR_TRY(manifest.validate());
  const int tp_rank = rank / layout.fsdp, fsdp_rank = rank % layout.fsdp;
  const uint64_t fsdp = static_cast<uint64_t>(layout.fsdp);
  Holdings holdings;
  for (uint32_t id = 0; id < manifest.tensors.size(); ++id) {
    Box part;
    DCR_TRY(tp_part(manifest, id, layout.tp, tp_rank, &part));
    const uint64_t n = part.elements(), shard = (n + fsdp - 1) / fsdp;
    const uint64_t base = shard * static_cast<uint64_t>(fsdp_rank);
    const uint32_t buffer = static_cast<uint32_t>(holdings.buffer_names.size());
    holdings.buffer_names.push_back(shard_name(manifest.tensors[id].name, layout, tp_rank, fsdp_rank));
    holdings.buffer_elements.push_back(shard);
    const bool owner = tp_rank == 0 || tp_split(manifest.tensors[id]) != TpSplit::replicated;
    if (owner) add_flat_range(part, std::min(base, n), std::min(base + shard, n), base, buffer, &holdings.pieces);
  }
  *out = std::move(holdings);
  return Status::ok();
}

}  // namespace dcr
