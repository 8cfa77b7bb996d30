// What rollouts serve: the model's tensors as they are, or (--serve-quant fp8-block) with each
// linear weight block-quantized as vLLM loads block-FP8 checkpoints (fp8_block.h). The served model
// is then the model with every quantized weight W (bf16 [N, K]) replaced by two tensors:
//   W                  f8_e4m3 [N, K]                        (the same name)
//   W + "_scale_inv"   f32 [ceil(N/128), ceil(K/128)]         (right after it; served fused like W)
// Quantized: the 2-D weights of the linear kinds (column, row, qkv, fused_column, expert_column,
// expert_row). Norms, embeddings, lm_head, biases and buffers stay as they are. A family rule's
// "quantize": true or false overrides this (a vocab tensor cannot be quantized).
// Frames, holdings, shards, snapshots and serving files are all made of served tensors. A served
// box's bits are computed from the model's bits (served_bytes), so a trainer quantizes only the
// blocks it holds, and the layouts cut quantized weights on whole blocks (tp_split.h,
// training_layout.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/model_rules.h"
#include "dcr/layout/shard.h"

namespace dcr {

enum class ServeQuant : uint8_t { none, fp8_block };

// "none" or "fp8-block"; invalid_argument naming the choices otherwise.
Status parse_serve_quant(const std::string& name, ServeQuant* out);
const char* serve_quant_name(ServeQuant quant);

// Where one served tensor's bits come from: a model tensor as it is, its E4M3 bytes, or its block
// scales.
enum class ServedFrom : uint8_t { copy, fp8, scales };
struct ServedTensor {
  ServedFrom from = ServedFrom::copy;
  uint32_t source = 0;  // the model tensor
};

struct ServedModel {
  Manifest manifest;                  // the served tensors
  ModelRules rules;                   // their rules (a weight's and its scales' with `block` set)
  std::vector<ServedTensor> tensors;  // one per served tensor
};

// The served form of `model` under `rules` (the model's). invalid_argument naming the tensor for a
// quantized weight that is not bf16, not 2-D, or of the vocab kind.
Status serve_model(const Manifest& model, const ModelRules& rules, ServeQuant quant, ServedModel* out);

// The served bits of any box of a served tensor (of `served`, made from `tensors`), from the bits
// of `model`: copied, or quantized block by block. An fp8 box must lie on whole blocks (a box that
// cuts one is refused, naming it); a block holding a NaN or infinity is refused, naming the tensor
// and the block. The references must outlive the result.
BoxBytes served_bytes(const Manifest& model, const Manifest& served, const std::vector<ServedTensor>& tensors,
                      const TensorBytes& model_bits);

// The box of the model whose bits served box `box` is made from: the same box of its model tensor,
// or for scales the weight's blocks they scale (cut at the weight's edges).
Box model_box(const Manifest& model, const std::vector<ServedTensor>& tensors, const Box& box);

// Every tensor of `served` whole, from `bits` (served_bytes' result): the served model in memory.
Status served_tensors(const Manifest& served, const BoxBytes& bits, CanonicalBits* out);

}  // namespace dcr
