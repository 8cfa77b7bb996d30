#include "dcr/layout/frame_plan.h"

#include <algorithm>
#include <tuple>

namespace dcr {

namespace {

bool box_less(const Box& a, const Box& b) {
  return std::tie(a.tensor, a.row0, a.col0, a.rows, a.cols) < std::tie(b.tensor, b.row0, b.col0, b.rows, b.cols);
}

Status check_piece(const Manifest& manifest, const Box& box, const char* owner) {
  DCR_REQUIRE(box.tensor < manifest.tensors.size(), Code::invalid_argument,
              std::string(owner) + " piece " + box.describe() + " names no tensor of the manifest");
  const TensorDesc& t = manifest.tensors[box.tensor];
  DCR_REQUIRE(!box.empty() && whole_tensor(box.tensor, t).contains(box), Code::invalid_argument,
              std::string(owner) + " piece " + box.describe() + " is empty or lies outside tensor '" + t.name + "'");
  return Status::ok();
}

// The distinct serving pieces of every tensor (replicas hold the same boxes).
Status serving_boxes(const Manifest& manifest, const std::vector<Holdings>& serving_ranks,
                     std::vector<std::vector<Box>>* out) {
  out->assign(manifest.tensors.size(), {});
  for (const Holdings& h : serving_ranks) {
    for (const LocalPiece& p : h.pieces) {
      DCR_TRY(check_piece(manifest, p.box, "serving"));
      (*out)[p.box.tensor].push_back(p.box);
    }
  }
  for (std::vector<Box>& boxes : *out) {
    std::sort(boxes.begin(), boxes.end(), box_less);
    boxes.erase(std::unique(boxes.begin(), boxes.end()), boxes.end());
  }
  return Status::ok();
}

// Splits `box` in two along an edge of `piece` that runs through it; false when `piece` holds all of
// `box` or none of it.
bool split_along(const Box& box, const Box& piece, Box* first, Box* second) {
  if (intersect(box, piece).empty() || piece.contains(box)) return false;
  *first = box;
  *second = box;
  if (piece.row0 > box.row0 || piece.row0 + piece.rows < box.row0 + box.rows) {
    const uint64_t at = piece.row0 > box.row0 ? piece.row0 : piece.row0 + piece.rows;
    first->rows = at - box.row0;
    second->row0 = at;
    second->rows = box.rows - first->rows;
  } else {
    const uint64_t at = piece.col0 > box.col0 ? piece.col0 : piece.col0 + piece.cols;
    first->cols = at - box.col0;
    second->col0 = at;
    second->cols = box.cols - first->cols;
  }
  return true;
}

// Cuts `box` until every part lies inside or apart from each of `pieces`.
void cut_by_pieces(const Box& box, const std::vector<Box>& pieces, std::vector<Box>* out) {
  std::vector<Box> pending{box};
  while (!pending.empty()) {
    const Box b = pending.back();
    pending.pop_back();
    Box first, second;
    bool split = false;
    for (size_t i = 0; i < pieces.size() && !split; ++i) split = split_along(b, pieces[i], &first, &second);
    if (!split) {
      out->push_back(b);
      continue;
    }
    pending.push_back(second);
    pending.push_back(first);
  }
}

// Cuts `box` into parts of at most max_elements: runs of whole rows, or column runs of single rows.
void cut_by_size(const Box& box, uint64_t max_elements, std::vector<Box>* out) {
  if (box.cols > max_elements) {
    for (uint64_t r = 0; r < box.rows; ++r) {
      for (uint64_t c = 0; c < box.cols; c += max_elements) {
        out->push_back(Box{box.tensor, box.row0 + r, 1, box.col0 + c, std::min(max_elements, box.cols - c)});
      }
    }
    return;
  }
  const uint64_t step = max_elements / box.cols;
  for (uint64_t r = 0; r < box.rows; r += step) {
    out->push_back(Box{box.tensor, box.row0 + r, std::min(step, box.rows - r), box.col0, box.cols});
  }
}

}  // namespace

Status plan_frames(const Manifest& manifest, const Holdings& trainer, const std::vector<Holdings>& serving_ranks,
                   uint64_t max_elements, std::vector<Box>* frames) {
  DCR_REQUIRE(max_elements > 0, Code::invalid_argument, "plan_frames: max_elements must be at least 1");
  std::vector<std::vector<Box>> serving;
  DCR_TRY(serving_boxes(manifest, serving_ranks, &serving));
  std::vector<Box> out;
  for (const LocalPiece& p : trainer.pieces) {
    DCR_TRY(check_piece(manifest, p.box, "trainer"));
    std::vector<Box> parts;
    cut_by_pieces(p.box, serving[p.box.tensor], &parts);
    for (const Box& part : parts) cut_by_size(part, max_elements, &out);
  }
  std::sort(out.begin(), out.end(), box_less);
  *frames = std::move(out);
  return Status::ok();
}

std::vector<int> receivers(const Box& frame, const std::vector<Holdings>& serving_ranks) {
  std::vector<int> ranks;
  for (size_t r = 0; r < serving_ranks.size(); ++r) {
    if (touches(serving_ranks[r], frame)) ranks.push_back(static_cast<int>(r));
  }
  return ranks;
}

}  // namespace dcr
