// The tensor-parallel part of a canonical tensor that one rank holds, by the kind its model family
// gives it (model_rules.h): an output band (dim 0: rows of a matrix, elements of a bias), an input
// band (the last dim), a padded vocabulary band, or a band of attention heads.
#pragma once

#include "dcr/core/box.h"
#include "dcr/core/status.h"
#include "dcr/layout/model_rules.h"

namespace dcr {

// The box of `count` outputs from `start` (dim 0) of tensor `id`: rows of a matrix, columns of a
// 1-D tensor's single row.
Box output_band(const Manifest& manifest, uint32_t id, uint64_t start, uint64_t count);

// The index-th of `parts` equal bands of tensor `id` along its outputs (or inputs: the last dim).
// invalid_argument naming the tensor and the degree when they do not divide, or for a tensor of
// more than two dimensions.
Status equal_band(const Manifest& manifest, uint32_t id, bool outputs, int parts, int index, Box* out);

// Vocabulary-parallel: the padded vocabulary Vp (a multiple of rules.vocab_padding) cut into `tp`
// bands of Vp / tp rows; *band_rows = Vp / tp, and *out the band's rows that are real tokens (empty
// for a band wholly in the padding). invalid_argument when tp does not divide Vp.
Status vocab_band(const Manifest& manifest, const ModelRules& rules, uint32_t id, int tp, int tp_rank, Box* out,
                  uint64_t* band_rows);

// vLLM's linear expert placement: expert group g of `ep` holds experts [*first, *first + *count):
// E / ep each, one more for the first E % ep groups.
void expert_range(int64_t experts, int ep, int g, int64_t* first, int64_t* count);

// The part of tensor `id` a training rank of a `tp`-wide group holds (experts: see training_layout.h);
// heads and vocabulary are cut in equal bands (vocabulary padded as above).
Status training_part(const Manifest& manifest, const ModelRules& rules, uint32_t id, int tp, int tp_rank, Box* out);

// The part of tensor `id` that serving rank tp_rank holds as vLLM loads it (SERVING_LAYOUT.md):
// q in bands of Hq / tp heads, k and v in bands of KV heads or, when tp > Hkv, KV head
// tp_rank / (tp / Hkv); experts in bands of moe_tp (the expert tensor-parallel degree) at
// moe_rank. Vocabulary: see vocab_band.
Status serving_part(const Manifest& manifest, const ModelRules& rules, uint32_t id, int tp, int tp_rank, int moe_tp,
                    int moe_rank, Box* out);

}  // namespace dcr
