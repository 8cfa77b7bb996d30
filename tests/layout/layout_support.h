// Test support for the layout suites: a canonical model whose every element holds its own id, moved
// into and out of a rank's local buffers through its pieces, plus small hand-made manifests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dcr/core/box.h"
#include "dcr/layout/model_rules.h"
#include "dcr/layout/piece.h"
#include "dcr/model/presets.h"

namespace dcr {
namespace layout_test {

// Per tensor, row-major; element ids start at 1 so 0 marks "never written".
using Values = std::vector<std::vector<uint64_t>>;

inline Values numbered_model(const Manifest& m) {
  Values model;
  uint64_t next = 1;
  for (const TensorDesc& t : m.tensors) {
    model.emplace_back(t.numel());
    for (uint64_t& v : model.back()) v = next++;
  }
  return model;
}

inline Values zero_model(const Manifest& m) {
  Values model;
  for (const TensorDesc& t : m.tensors) model.emplace_back(t.numel(), 0);
  return model;
}

inline uint64_t canonical_index(const Manifest& m, const Box& b, uint64_t r, uint64_t c) {
  return (b.row0 + r) * tensor_cols(m.tensors[b.tensor]) + b.col0 + c;
}

// The rank's buffers with the model written through its pieces; fails the test when a piece reaches
// past its buffer or two pieces share a buffer element.
inline Values project(const Manifest& m, const Values& model, const Holdings& h) {
  Values buffers;
  for (uint64_t n : h.buffer_elements) buffers.emplace_back(n, 0);
  for (const LocalPiece& p : h.pieces) {
    std::vector<uint64_t>& buf = buffers.at(p.buffer);
    EXPECT_LE(p.offset + (p.box.rows - 1) * p.pitch + p.box.cols, buf.size()) << p.box.describe();
    EXPECT_GE(p.pitch, p.box.cols) << p.box.describe();
    for (uint64_t r = 0; r < p.box.rows; ++r) {
      for (uint64_t c = 0; c < p.box.cols; ++c) {
        uint64_t& slot = buf.at(p.offset + r * p.pitch + c);
        EXPECT_EQ(slot, 0u) << "two pieces share an element of buffer " << h.buffer_names[p.buffer];
        slot = model[p.box.tensor][canonical_index(m, p.box, r, c)];
      }
    }
  }
  return buffers;
}

// Writes the rank's buffers back into canonical positions through its pieces.
inline void gather(const Manifest& m, const Values& buffers, const Holdings& h, Values* model) {
  for (const LocalPiece& p : h.pieces) {
    for (uint64_t r = 0; r < p.box.rows; ++r) {
      for (uint64_t c = 0; c < p.box.cols; ++c) {
        (*model)[p.box.tensor][canonical_index(m, p.box, r, c)] = buffers[p.buffer][p.offset + r * p.pitch + c];
      }
    }
  }
}

// Adds one to the count of every canonical element a box covers.
inline void count_box(const Manifest& m, const Box& b, Values* counts) {
  for (uint64_t r = 0; r < b.rows; ++r) {
    for (uint64_t c = 0; c < b.cols; ++c) ++(*counts)[b.tensor][canonical_index(m, b, r, c)];
  }
}

inline void expect_all_counts(const Manifest& m, const Values& counts, uint64_t expected, const std::string& what) {
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    for (size_t i = 0; i < counts[t].size(); ++i) {
      if (counts[t][i] == expected) continue;
      ADD_FAILURE() << what << ": element " << i << " of " << m.tensors[t].name << " counted " << counts[t][i]
                    << " times, expected " << expected;
      return;
    }
  }
}

inline TensorDesc tensor(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::bf16,
                         bool is_buffer = false) {
  return TensorDesc{name, dtype, std::move(shape), is_buffer};
}

// A two-layer transformer of width d with odd extras: a 3-D tensor, a scalar and both buffers.
inline Manifest odd_model(int64_t d, int64_t kv, int64_t ff, int64_t vocab) {
  Manifest m;
  m.tensors.push_back(tensor("embed_tokens.weight", {vocab, d}));
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "layers." + std::to_string(layer) + ".";
    m.tensors.push_back(tensor(p + "input_norm.weight", {d}));
    m.tensors.push_back(tensor(p + "attn.q.weight", {d, d}));
    m.tensors.push_back(tensor(p + "attn.k.weight", {kv, d}));
    m.tensors.push_back(tensor(p + "attn.v.weight", {kv, d}));
    m.tensors.push_back(tensor(p + "attn.o.weight", {d, d}));
    m.tensors.push_back(tensor(p + "post_norm.weight", {d}));
    m.tensors.push_back(tensor(p + "mlp.gate.weight", {ff, d}));
    m.tensors.push_back(tensor(p + "mlp.up.weight", {ff, d}));
    m.tensors.push_back(tensor(p + "mlp.down.weight", {d, ff}));
  }
  m.tensors.push_back(tensor("conv.weight", {3, 5, 7}));
  m.tensors.push_back(tensor("scale", {}));
  m.tensors.push_back(tensor("final_norm.weight", {d}));
  m.tensors.push_back(tensor("lm_head.weight", {vocab, d}));
  m.tensors.push_back(tensor("rotary.inv_freq", {5}, DType::f32, true));
  m.tensors.push_back(tensor("step_counter", {1}, DType::i64, true));
  return m;
}

inline Manifest tiny_model() {
  Manifest m;
  EXPECT_TRUE(make_preset("tiny", &m).is_ok());
  return m;
}

inline uint32_t id_of(const Manifest& m, const std::string& name) {
  for (uint32_t id = 0; id < m.tensors.size(); ++id) {
    if (m.tensors[id].name == name) return id;
  }
  ADD_FAILURE() << "no tensor " << name;
  return 0;
}

// dcr's own family (configs/models/dcr.json) resolved for `m`; `whole`, when given, is one more
// rule listing tensors as replicated.
inline ModelRules rules_of(const Manifest& m, const std::string& whole = "") {
  ModelFamily family;
  EXPECT_TRUE(load_model_family("dcr", &family).is_ok());
  if (!whole.empty()) {
    FamilyRule rule;
    rule.pattern = whole;
    EXPECT_TRUE(compile_pattern(whole, &rule.regex).is_ok());
    family.rules.push_back(rule);
  }
  ModelRules rules;
  EXPECT_TRUE(resolve_rules(family, ModelDims{}, m, &rules).is_ok());
  return rules;
}

// The test's own statement of the TP split: 'r' rows, 'c' columns, 'w' whole, 'v' vocabulary rows
// (padded to a multiple of 64, padding zero).
inline char split_kind(const TensorDesc& t) {
  const std::string& n = t.name;
  if (t.is_buffer || n.find("norm") != std::string::npos || n == "conv.weight" || n == "scale") return 'w';
  if (n.find("attn.o.") != std::string::npos || n.find("mlp.down.") != std::string::npos) return 'c';
  if (n.find("embed_tokens") != std::string::npos || n.find("lm_head") != std::string::npos) return 'v';
  return 'r';
}

// The values of tensor `id`'s TP part for rank `tp_rank` of `tp`, row-major; vocabulary rows past
// the real tokens are zeros with `pad` (serving) and left out without (training).
inline std::vector<uint64_t> tp_part_values(const Manifest& m, const Values& model, uint32_t id, int tp, int tp_rank,
                                            bool pad = true) {
  const TensorDesc& t = m.tensors[id];
  const uint64_t rows = tensor_rows(t), cols = tensor_cols(t);
  const char kind = split_kind(t);
  const uint64_t padded = kind == 'v' ? (rows + 63) / 64 * 64 : rows;
  const bool by_rows = kind == 'r' || kind == 'v';
  const uint64_t r_band = by_rows ? padded / tp : rows, c_band = kind == 'c' ? cols / tp : cols;
  const uint64_t r0 = by_rows ? r_band * tp_rank : 0, c0 = kind == 'c' ? c_band * tp_rank : 0;
  std::vector<uint64_t> out;
  for (uint64_t r = r0; r < r0 + r_band && (pad || r < rows); ++r) {
    for (uint64_t c = c0; c < c0 + c_band; ++c) out.push_back(r < rows ? model[id][r * cols + c] : 0);
  }
  return out;
}

}  // namespace layout_test
}  // namespace dcr
