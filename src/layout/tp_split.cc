#include "dcr/layout/tp_split.h"

#include <algorithm>

#include "dcr/layout/fp8_block.h"

namespace dcr {

namespace {

std::string name_of(const Manifest& m, uint32_t id) { return "tensor '" + m.tensors[id].name + "'"; }

uint64_t output_extent(const TensorDesc& t) { return t.shape.empty() ? 1 : static_cast<uint64_t>(t.shape[0]); }

Status require_divides(const Manifest& m, uint32_t id, uint64_t extent, uint64_t parts, const std::string& what) {
  DCR_REQUIRE(parts >= 1 && extent % parts == 0, Code::invalid_argument,
              name_of(m, id) + " has " + std::to_string(extent) + " " + what + ", not divisible by tp " +
                  std::to_string(parts));
  return Status::ok();
}

// q, k or v rows of one attention for serving rank r (heads from config.json).
Status head_band(const Manifest& m, const ModelRules& rules, uint32_t id, int tp, int r, Box* out) {
  if (tp == 1) return *out = whole_tensor(id, m.tensors[id]), Status::ok();
  const ModelDims& d = rules.dims;
  const TensorRule& rule = rules.tensors[id];
  DCR_REQUIRE(d.heads > 0 && d.kv_heads > 0 && d.head_dim > 0, Code::invalid_argument,
              name_of(m, id) + " is split by attention heads, but config.json gives no num_attention_heads, "
              "num_key_value_heads and head_dim");
  const bool query = rule.member == 0;
  const uint64_t heads = static_cast<uint64_t>(query ? d.heads : d.kv_heads), dim = static_cast<uint64_t>(d.head_dim);
  const uint64_t extent = output_extent(m.tensors[id]), n = static_cast<uint64_t>(tp);
  DCR_REQUIRE(extent == heads * dim, Code::invalid_argument,
              name_of(m, id) + " has " + std::to_string(extent) + " outputs, but config.json gives " +
                  std::to_string(heads) + (query ? " heads" : " KV heads") + " of " + std::to_string(dim));
  if (query || heads >= n) {
    DCR_TRY(require_divides(m, id, heads, n, query ? "attention heads" : "KV heads"));
    *out = output_band(m, id, r * (heads / n) * dim, (heads / n) * dim);
    return Status::ok();
  }
  DCR_REQUIRE(n % heads == 0, Code::invalid_argument,
              name_of(m, id) + ": tp " + std::to_string(tp) + " is larger than its " + std::to_string(heads) +
                  " KV heads but not a multiple of them");
  *out = output_band(m, id, (r / (n / heads)) * dim, dim);
  return Status::ok();
}

// A block-quantized tensor's part from its weight's part *part, which must fall on whole blocks:
// the weight's own part as it is, or a scale grid's that part in block units.
Status on_blocks(const Manifest& m, const ModelRules& rules, uint32_t id, const std::string& who, Box* part) {
  const TensorRule& rule = rules.tensors[id];
  const uint64_t n = rule.block;
  const TensorDesc& w = m.tensors[part->tensor];
  const uint64_t rows = tensor_rows(w), cols = tensor_cols(w);
  DCR_REQUIRE(on_whole_blocks(*part, rows, cols, n) || part->empty(), Code::invalid_argument,
              who + "'s part of " + name_of(m, part->tensor) + " (rows [" + std::to_string(part->row0) + ", " +
                  std::to_string(part->row0 + part->rows) + "), columns [" + std::to_string(part->col0) + ", " +
                  std::to_string(part->col0 + part->cols) + ")) cuts its " + std::to_string(n) + " x " +
                  std::to_string(n) + " blocks, so no rank could quantize them alone (vLLM refuses such a serving split too): "
                  "with block-quantized serving (--serve-quant fp8-block) every tensor-parallel band must be a multiple of " +
                  std::to_string(n) + " rows and columns");
  if (rule.scales_of < 0) return Status::ok();
  *part = Box{id, part->row0 / n, (part->rows + n - 1) / n, part->col0 / n, (part->cols + n - 1) / n};
  return Status::ok();
}

// The tensor a part is computed on: the weight of a scale grid, else the tensor itself.
uint32_t part_tensor(const ModelRules& rules, uint32_t id) {
  const int64_t weight = rules.tensors[id].scales_of;
  return weight >= 0 ? static_cast<uint32_t>(weight) : id;
}

Status training_part_by_kind(const Manifest& manifest, const ModelRules& rules, uint32_t id, int tp, int tp_rank,
                             Box* out) {
  const TensorRule& rule = rules.tensors[id];
  if (tp > 1) DCR_TRY(check_matched(manifest, rules, id));
  switch (rule.kind) {
    case SplitKind::replicated:
      *out = whole_tensor(id, manifest.tensors[id]);
      return Status::ok();
    case SplitKind::vocab: {
      uint64_t band_rows = 0;
      return vocab_band(manifest, rules, id, tp, tp_rank, out, &band_rows);
    }
    case SplitKind::row:
    case SplitKind::expert_row:
      return equal_band(manifest, id, false, tp, tp_rank, out);
    default:
      return equal_band(manifest, id, true, tp, tp_rank, out);
  }
}

Status serving_part_by_kind(const Manifest& manifest, const ModelRules& rules, uint32_t id, int tp, int tp_rank,
                            int moe_tp, int moe_rank, Box* out) {
  if (tp > 1) DCR_TRY(check_matched(manifest, rules, id));
  switch (rules.tensors[id].kind) {
    case SplitKind::qkv:
      return head_band(manifest, rules, id, tp, tp_rank, out);
    case SplitKind::expert_column:
      return equal_band(manifest, id, true, moe_tp, moe_rank, out);
    case SplitKind::expert_row:
      return equal_band(manifest, id, false, moe_tp, moe_rank, out);
    default:
      return training_part_by_kind(manifest, rules, id, tp, tp_rank, out);
  }
}

}  // namespace

void expert_range(int64_t experts, int ep, int g, int64_t* first, int64_t* count) {
  const int64_t base = experts / ep, extra = experts % ep;
  *first = g * base + std::min<int64_t>(g, extra);
  *count = base + (g < extra ? 1 : 0);
}

Box output_band(const Manifest& manifest, uint32_t id, uint64_t start, uint64_t count) {
  const TensorDesc& t = manifest.tensors[id];
  if (t.shape.size() < 2) return Box{id, 0, 1, start, count};
  return Box{id, start, count, 0, tensor_cols(t)};
}

Status equal_band(const Manifest& manifest, uint32_t id, bool outputs, int parts, int index, Box* out) {
  const TensorDesc& t = manifest.tensors[id];
  *out = whole_tensor(id, t);
  if (parts == 1) return Status::ok();
  DCR_REQUIRE(t.shape.size() <= 2, Code::invalid_argument,
              name_of(manifest, id) + " has " + std::to_string(t.shape.size()) +
                  " dimensions; only matrices and vectors can be split");
  const bool by_rows = outputs && t.shape.size() == 2;
  const uint64_t extent = by_rows ? out->rows : out->cols, n = static_cast<uint64_t>(parts);
  DCR_TRY(require_divides(manifest, id, extent, n, by_rows ? "rows" : "columns"));
  const uint64_t band = extent / n, start = band * static_cast<uint64_t>(index);
  if (by_rows) {
    out->row0 = start;
    out->rows = band;
  } else {
    out->col0 = start;
    out->cols = band;
  }
  return Status::ok();
}

Status vocab_band(const Manifest& manifest, const ModelRules& rules, uint32_t id, int tp, int tp_rank, Box* out,
                  uint64_t* band_rows) {
  const uint64_t vocab = output_extent(manifest.tensors[id]), pad = static_cast<uint64_t>(rules.vocab_padding);
  const uint64_t padded = (vocab + pad - 1) / pad * pad, n = static_cast<uint64_t>(tp);
  DCR_REQUIRE(padded % n == 0, Code::invalid_argument,
              name_of(manifest, id) + ": the vocabulary of " + std::to_string(vocab) + " padded to " +
                  std::to_string(padded) + " is not divisible by tp " + std::to_string(tp));
  *band_rows = padded / n;
  const uint64_t start = *band_rows * static_cast<uint64_t>(tp_rank);
  const uint64_t end = std::min(start + *band_rows, vocab);
  *out = output_band(manifest, id, start, end > start ? end - start : 0);
  return Status::ok();
}

Status training_part(const Manifest& manifest, const ModelRules& rules, uint32_t id, int tp, int tp_rank, Box* out) {
  DCR_TRY(training_part_by_kind(manifest, rules, part_tensor(rules, id), tp, tp_rank, out));
  if (rules.tensors[id].block == 0) return Status::ok();
  return on_blocks(manifest, rules, id, "training tp rank " + std::to_string(tp_rank), out);
}

Status serving_part(const Manifest& manifest, const ModelRules& rules, uint32_t id, int tp, int tp_rank, int moe_tp,
                    int moe_rank, Box* out) {
  DCR_TRY(serving_part_by_kind(manifest, rules, part_tensor(rules, id), tp, tp_rank, moe_tp, moe_rank, out));
  if (rules.tensors[id].block == 0) return Status::ok();
  return on_blocks(manifest, rules, id, "serving tp rank " + std::to_string(tp_rank), out);
}

}  // namespace dcr
