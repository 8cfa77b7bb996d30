#include "dcr/layout/tp_split.h"

namespace dcr {

namespace {

const char* const kRowSplit[] = {"attn.q.weight",   "attn.k.weight",       "attn.v.weight", "mlp.gate.weight",
                                 "mlp.up.weight",   "embed_tokens.weight", "lm_head.weight"};
const char* const kColSplit[] = {"attn.o.weight", "mlp.down.weight"};

template <size_t N>
bool matches_any(const std::string& name, const char* const (&suffixes)[N]) {
  for (const char* s : suffixes) {
    if (has_component_suffix(name, s)) return true;
  }
  return false;
}

}  // namespace

bool has_component_suffix(const std::string& name, const std::string& suffix) {
  if (name == suffix) return true;
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         name[name.size() - suffix.size() - 1] == '.';
}

TpSplit tp_split(const TensorDesc& tensor) {
  if (tensor.is_buffer) return TpSplit::replicated;
  if (matches_any(tensor.name, kRowSplit)) return TpSplit::rows;
  if (matches_any(tensor.name, kColSplit)) return TpSplit::cols;
  return TpSplit::replicated;
}

Status tp_part(const Manifest& manifest, uint32_t id, int tp, int tp_rank, Box* part) {
  const TensorDesc& t = manifest.tensors[id];
  *part = whole_tensor(id, t);
  const TpSplit split = tp_split(t);
  if (split == TpSplit::replicated || tp == 1) return Status::ok();
  const bool by_rows = split == TpSplit::rows;
  const uint64_t extent = by_rows ? part->rows : part->cols;
  const uint64_t degree = static_cast<uint64_t>(tp);
  DCR_REQUIRE(extent % degree == 0, Code::invalid_argument,
              "tensor '" + t.name + "' has " + std::to_string(extent) + (by_rows ? " rows" : " columns") +
                  ", not divisible by tp " + std::to_string(tp));
  const uint64_t band = extent / degree, start = band * static_cast<uint64_t>(tp_rank);
  if (by_rows) {
    part->row0 = start;
    part->rows = band;
  } else {
    part->col0 = start;
    part->cols = band;
  }
  return Status::ok();
}

}  // namespace dcr
