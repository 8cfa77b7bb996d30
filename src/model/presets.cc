#include "dcr/model/presets.h"

namespace dcr {

namespace {

struct Shape {
  const char* name;
  int64_t vocab;
  int64_t d;        // model width
  int64_t layers;
  int64_t head_dim;
  int64_t kv;       // width of k and v (kv heads * head_dim)
  int64_t ff;       // MLP width
};

constexpr Shape kShapes[] = {
    {"tiny", 2048, 192, 4, 64, 64, 512},
    {"small", 8192, 512, 8, 64, 128, 1376},
    {"medium", 32000, 768, 12, 64, 256, 2048},
    {"large", 32000, 1280, 24, 64, 256, 3456},
};

TensorDesc param(const std::string& name, std::vector<int64_t> shape) {
  TensorDesc t;
  t.name = name;
  t.dtype = DType::bf16;
  t.shape = std::move(shape);
  return t;
}

TensorDesc buffer(const std::string& name, DType dtype, int64_t length) {
  TensorDesc t;
  t.name = name;
  t.dtype = dtype;
  t.shape = {length};
  t.is_buffer = true;
  return t;
}

void add_layer(const Shape& s, int64_t layer, std::vector<TensorDesc>* out) {
  const std::string p = "layers." + std::to_string(layer) + ".";
  out->push_back(param(p + "input_norm.weight", {s.d}));
  out->push_back(param(p + "attn.q.weight", {s.d, s.d}));
  out->push_back(param(p + "attn.k.weight", {s.kv, s.d}));
  out->push_back(param(p + "attn.v.weight", {s.kv, s.d}));
  out->push_back(param(p + "attn.o.weight", {s.d, s.d}));
  out->push_back(param(p + "post_norm.weight", {s.d}));
  out->push_back(param(p + "mlp.gate.weight", {s.ff, s.d}));
  out->push_back(param(p + "mlp.up.weight", {s.ff, s.d}));
  out->push_back(param(p + "mlp.down.weight", {s.d, s.ff}));
}

Manifest build(const Shape& s) {
  Manifest m;
  m.tensors.push_back(param("embed_tokens.weight", {s.vocab, s.d}));
  for (int64_t i = 0; i < s.layers; ++i) add_layer(s, i, &m.tensors);
  m.tensors.push_back(param("final_norm.weight", {s.d}));
  m.tensors.push_back(param("lm_head.weight", {s.vocab, s.d}));
  m.tensors.push_back(buffer("rotary.inv_freq", DType::f32, s.head_dim / 2));
  m.tensors.push_back(buffer("step_counter", DType::i64, 1));
  return m;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const Shape& s : kShapes) names.push_back(s.name);
  return names;
}

Status make_preset(const std::string& name, Manifest* out) {
  for (const Shape& s : kShapes) {
    if (name == s.name) {
      *out = build(s);
      return Status::ok();
    }
  }
  std::string valid;
  for (const std::string& n : preset_names()) valid += (valid.empty() ? "" : ", ") + n;
  return Status(Code::invalid_argument, "unknown preset '" + name + "' (valid: " + valid + ")");
}

}  // namespace dcr
