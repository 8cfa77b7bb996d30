#include "dcr/layout/serve_quant.h"

#include <algorithm>
#include <cstring>

#include "dcr/core/box.h"
#include "dcr/layout/fp8_block.h"

namespace dcr {

namespace {

constexpr const char* kScaleSuffix = "_scale_inv";

bool linear_kind(SplitKind k) { return k != SplitKind::replicated && k != SplitKind::vocab; }

// Whether model tensor `id` is served block-quantized; invalid_argument for a rule asking for one
// that cannot be.
Status quantized(const Manifest& model, const ModelRules& rules, uint32_t id, bool* out) {
  const TensorDesc& t = model.tensors[id];
  const TensorRule& rule = rules.tensors[id];
  *out = rule.quantize == 1 || (rule.quantize == -1 && linear_kind(rule.kind) && t.shape.size() == 2 && !t.is_buffer);
  if (!*out) return Status::ok();
  const std::string where = "--serve-quant fp8-block: tensor '" + t.name + "'";
  DCR_REQUIRE(rule.kind != SplitKind::vocab, Code::invalid_argument,
              where + " is a vocabulary table; embeddings and lm_head are served as they are (drop \"quantize\" "
              "from its rule in '" + rules.file + "')");
  DCR_REQUIRE(t.shape.size() == 2, Code::invalid_argument,
              where + " has " + std::to_string(t.shape.size()) + " dimensions; block FP8 quantizes 2-D weights");
  DCR_REQUIRE(t.dtype == DType::bf16, Code::invalid_argument,
              where + " is " + dtype_name(t.dtype) + "; block FP8 is defined here for bf16 weights");
  return Status::ok();
}

// The scale grid's rule: its weight's, in block units, fused into the weight's buffer + suffix.
TensorRule scale_rule(const TensorRule& weight, uint32_t weight_id) {
  TensorRule r = weight;
  if (!r.serve.empty()) r.serve += kScaleSuffix;
  r.scales_of = weight_id;
  return r;
}

// The E4M3 bytes of `box` (on whole blocks) of bf16 weight `t`.
Status fp8_box(const TensorDesc& t, const uint16_t* bits, const Box& box, uint8_t* dst, uint64_t pitch) {
  const uint64_t rows = tensor_rows(t), cols = tensor_cols(t);
  DCR_REQUIRE(on_whole_blocks(box, rows, cols), Code::invalid_argument,
              "block FP8: " + box.describe() + " of tensor '" + t.name + "' cuts its 128 x 128 blocks");
  for (uint64_t r0 = box.row0; r0 < box.row0 + box.rows; r0 += kFp8Block) {
    for (uint64_t c0 = box.col0; c0 < box.col0 + box.cols; c0 += kFp8Block) {
      float scale = 0;
      DCR_TRY(fp8_block_scale_at(bits, rows, cols, r0, c0, &scale).with_context("tensor '" + t.name + "'"));
      fp8_quantize_block(bits, rows, cols, r0, c0, scale, dst + (r0 - box.row0) * pitch + (c0 - box.col0), pitch);
    }
  }
  return Status::ok();
}

// The scales of `box` (a box of the scale grid) of bf16 weight `t`.
Status scales_box(const TensorDesc& t, const uint16_t* bits, const Box& box, uint8_t* dst, uint64_t pitch) {
  const uint64_t rows = tensor_rows(t), cols = tensor_cols(t);
  for (uint64_t r = 0; r < box.rows; ++r) {
    for (uint64_t c = 0; c < box.cols; ++c) {
      float scale = 0;
      DCR_TRY(fp8_block_scale_at(bits, rows, cols, (box.row0 + r) * kFp8Block, (box.col0 + c) * kFp8Block, &scale)
                  .with_context("tensor '" + t.name + "'"));
      std::memcpy(dst + (r * pitch + c) * sizeof(float), &scale, sizeof scale);
    }
  }
  return Status::ok();
}

}  // namespace

Status parse_serve_quant(const std::string& name, ServeQuant* out) {
  if (name == "none") return *out = ServeQuant::none, Status::ok();
  if (name == "fp8-block") return *out = ServeQuant::fp8_block, Status::ok();
  return Status(Code::invalid_argument, "unknown serving quantization '" + name + "' (none, fp8-block)");
}

const char* serve_quant_name(ServeQuant quant) { return quant == ServeQuant::fp8_block ? "fp8-block" : "none"; }

Status serve_model(const Manifest& model, const ModelRules& rules, ServeQuant quant, ServedModel* out) {
  ServedModel s;
  s.rules = rules;
  s.rules.tensors.clear();
  for (uint32_t id = 0; id < model.tensors.size(); ++id) {
    bool quantize = false;
    if (quant == ServeQuant::fp8_block) DCR_TRY(quantized(model, rules, id, &quantize));
    TensorDesc t = model.tensors[id];
    TensorRule rule = rules.tensors[id];
    if (!quantize) {
      s.manifest.tensors.push_back(t);
      s.rules.tensors.push_back(rule);
      s.tensors.push_back({ServedFrom::copy, id});
      continue;
    }
    const uint32_t weight = static_cast<uint32_t>(s.manifest.tensors.size());
    t.dtype = DType::f8_e4m3;
    rule.block = kFp8Block;
    s.manifest.tensors.push_back(t);
    s.rules.tensors.push_back(rule);
    s.tensors.push_back({ServedFrom::fp8, id});
    const auto blocks = [](int64_t n) { return (n + static_cast<int64_t>(kFp8Block) - 1) / static_cast<int64_t>(kFp8Block); };
    s.manifest.tensors.push_back(
        TensorDesc{t.name + kScaleSuffix, DType::f32, {blocks(t.shape[0]), blocks(t.shape[1])}, false});
    s.rules.tensors.push_back(scale_rule(rule, weight));
    s.tensors.push_back({ServedFrom::scales, id});
  }
  DCR_TRY(s.manifest.validate().with_context("--serve-quant " + std::string(serve_quant_name(quant))));
  *out = std::move(s);
  return Status::ok();
}

BoxBytes served_bytes(const Manifest& model, const Manifest& served, const std::vector<ServedTensor>& tensors,
                      const TensorBytes& model_bits) {
  const BoxBytes copy = rows_of(served, [&tensors, model_bits](uint32_t id) { return model_bits(tensors[id].source); });
  return [&model, &tensors, model_bits, copy](const Box& box, uint8_t* dst, uint64_t pitch) {
    const ServedTensor& s = tensors[box.tensor];
    if (s.from == ServedFrom::copy) return copy(box, dst, pitch);
    const TensorDesc& weight = model.tensors[s.source];
    const auto* bits = reinterpret_cast<const uint16_t*>(model_bits(s.source));
    return s.from == ServedFrom::fp8 ? fp8_box(weight, bits, box, dst, pitch) : scales_box(weight, bits, box, dst, pitch);
  };
}

Box model_box(const Manifest& model, const std::vector<ServedTensor>& tensors, const Box& box) {
  const ServedTensor& s = tensors[box.tensor];
  Box out = box;
  out.tensor = s.source;
  if (s.from != ServedFrom::scales) return out;
  const TensorDesc& weight = model.tensors[s.source];
  out.row0 = box.row0 * kFp8Block;
  out.col0 = box.col0 * kFp8Block;
  out.rows = std::min((box.row0 + box.rows) * kFp8Block, tensor_rows(weight)) - out.row0;
  out.cols = std::min((box.col0 + box.cols) * kFp8Block, tensor_cols(weight)) - out.col0;
  return out;
}

Status served_tensors(const Manifest& served, const BoxBytes& bits, CanonicalBits* out) {
  out->resize(served.tensors.size());
  for (uint32_t id = 0; id < served.tensors.size(); ++id) {
    const TensorDesc& t = served.tensors[id];
    (*out)[id].resize(t.nbytes());
    DCR_TRY(bits(whole_tensor(id, t), (*out)[id].data(), tensor_cols(t)));
  }
  return Status::ok();
}

}  // namespace dcr
