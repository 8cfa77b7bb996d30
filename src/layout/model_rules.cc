#include "dcr/layout/model_rules.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace dcr {

namespace {

using json = nlohmann::json;

struct KindName {
  SplitKind kind;
  const char* name;
};
constexpr KindName kKinds[] = {
    {SplitKind::replicated, "replicated"},       {SplitKind::column, "column"},
    {SplitKind::row, "row"},                     {SplitKind::vocab, "vocab"},
    {SplitKind::qkv, "qkv"},                     {SplitKind::fused_column, "fused_column"},
    {SplitKind::expert_column, "expert_column"}, {SplitKind::expert_row, "expert_row"},
};

bool is_member_kind(SplitKind k) {
  return k == SplitKind::qkv || k == SplitKind::fused_column || k == SplitKind::expert_column;
}
bool is_expert_kind(SplitKind k) { return k == SplitKind::expert_column || k == SplitKind::expert_row; }

Status parse_kind(const std::string& name, SplitKind* out) {
  std::string valid;
  for (const KindName& k : kKinds) {
    if (name == k.name) {
      *out = k.kind;
      return Status::ok();
    }
    valid += std::string(valid.empty() ? "" : ", ") + k.name;
  }
  return Status(Code::invalid_argument, "unknown kind \"" + name + "\" (kinds: " + valid + ")");
}

Status read_json(const std::string& path, json* out) {
  std::ifstream in(path);
  DCR_REQUIRE(in.is_open(), Code::not_found, "cannot open '" + path + "'");
  try {
    *out = json::parse(in);
  } catch (const json::exception& e) {
    return Status(Code::invalid_argument, "'" + path + "' is not valid JSON: " + e.what());
  }
  return Status::ok();
}

template <typename T>
Status optional_field(const json& object, const char* key, T* out) {
  if (!object.contains(key)) return Status::ok();
  try {
    *out = object.at(key).get<T>();
  } catch (const json::exception&) {
    return Status(Code::invalid_argument, std::string("\"") + key + "\" has the wrong type: " + object.at(key).dump());
  }
  return Status::ok();
}

Status parse_rule(const json& r, FamilyRule* rule) {
  DCR_REQUIRE(r.is_object() && r.contains("pattern") && r.contains("kind"), Code::invalid_argument,
              "a rule needs \"pattern\" and \"kind\": " + r.dump());
  std::string kind;
  DCR_TRY(optional_field(r, "pattern", &rule->pattern));
  DCR_TRY(optional_field(r, "kind", &kind));
  DCR_TRY(parse_kind(kind, &rule->kind));
  DCR_TRY(optional_field(r, "serve", &rule->serve));
  DCR_TRY(optional_field(r, "member", &rule->member));
  DCR_TRY(optional_field(r, "members", &rule->members));
  DCR_TRY(optional_field(r, "expert", &rule->expert));
  DCR_TRY(optional_field(r, "dropped_if_tied", &rule->dropped_if_tied));
  if (r.contains("quantize")) {
    bool quantize = false;
    DCR_TRY(optional_field(r, "quantize", &quantize));
    rule->quantize = quantize ? 1 : 0;
  }
  try {
    rule->regex = std::regex(rule->pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return Status(Code::invalid_argument, "pattern \"" + rule->pattern + "\" is not a regex: " + e.what());
  }
  const bool member_kind = is_member_kind(rule->kind);
  DCR_REQUIRE(!member_kind || (!rule->member.empty() && !rule->members.empty() && !rule->serve.empty()),
              Code::invalid_argument, "rule \"" + rule->pattern + "\": kind " + kind + " needs \"member\", \"members\" and \"serve\"");
  DCR_REQUIRE(!is_expert_kind(rule->kind) || (!rule->expert.empty() && !rule->serve.empty()), Code::invalid_argument,
              "rule \"" + rule->pattern + "\": kind " + kind + " needs \"expert\" and \"serve\"");
  return Status::ok();
}

Status parse_family(const json& doc, ModelFamily* f) {
  DCR_REQUIRE(doc.is_object() && doc.contains("rules") && doc["rules"].is_array(), Code::invalid_argument,
              "needs an object with a \"rules\" array");
  DCR_TRY(optional_field(doc, "family", &f->name));
  DCR_TRY(optional_field(doc, "vocab_padding", &f->vocab_padding));
  DCR_REQUIRE(f->vocab_padding >= 1, Code::invalid_argument, "\"vocab_padding\" must be at least 1");
  if (doc.contains("match")) {
    DCR_TRY(optional_field(doc["match"], "model_type", &f->model_types));
    DCR_TRY(optional_field(doc["match"], "architectures", &f->architectures));
  }
  for (const json& r : doc["rules"]) {
    f->rules.emplace_back();
    DCR_TRY(parse_rule(r, &f->rules.back()));
  }
  return Status::ok();
}

std::string expand(const std::smatch& m, const std::string& format) {
  return format.empty() ? std::string() : m.format(format);
}

Status parse_index(const std::string& text, const std::string& what, int64_t* out) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  DCR_REQUIRE(!text.empty() && *end == '\0' && v >= 0, Code::invalid_argument,
              what + " \"" + text + "\" is not a non-negative integer");
  *out = v;
  return Status::ok();
}

Status apply_rule(const FamilyRule& rule, const std::smatch& m, const ModelDims& dims, TensorRule* out) {
  out->matched = true;
  out->kind = rule.kind;
  out->serve = expand(m, rule.serve);
  out->dropped = rule.dropped_if_tied && dims.tied;
  out->quantize = rule.quantize;
  if (!rule.member.empty()) {
    const std::string member = expand(m, rule.member);
    const auto it = std::find(rule.members.begin(), rule.members.end(), member);
    DCR_REQUIRE(it != rule.members.end(), Code::invalid_argument,
                "member \"" + member + "\" is not one of the rule's members (pattern \"" + rule.pattern + "\")");
    out->member = static_cast<int>(it - rule.members.begin());
    out->members = static_cast<int>(rule.members.size());
  }
  if (!rule.expert.empty()) DCR_TRY(parse_index(expand(m, rule.expert), "expert index", &out->expert));
  return Status::ok();
}

Status positive_int(const json& config, const char* key, int64_t* out) {
  DCR_TRY(optional_field(config, key, out));
  DCR_REQUIRE(*out >= 0, Code::invalid_argument, std::string("\"") + key + "\" must not be negative");
  return Status::ok();
}

}  // namespace

std::string models_dir() {
  if (const char* dir = std::getenv("DCR_MODELS_DIR")) return dir;
#ifdef DCR_SOURCE_DIR
  return std::string(DCR_SOURCE_DIR) + "/configs/models";
#else
  return "configs/models";
#endif
}

Status load_model_family(const std::string& name_or_path, ModelFamily* out) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
  const std::string path = is_path ? name_or_path : models_dir() + "/" + name_or_path + ".json";
  json doc;
  DCR_TRY(read_json(path, &doc).with_context("model family '" + name_or_path + "'"));
  ModelFamily f;
  f.file = path;
  DCR_TRY(parse_family(doc, &f).with_context("model family file '" + path + "'"));
  if (f.name.empty()) f.name = std::filesystem::path(path).stem().string();
  *out = std::move(f);
  return Status::ok();
}

Status pick_model_family(const json& config, ModelFamily* out) {
  std::string model_type;
  std::vector<std::string> architectures;
  DCR_TRY(optional_field(config, "model_type", &model_type).with_context("config.json"));
  DCR_TRY(optional_field(config, "architectures", &architectures).with_context("config.json"));
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(models_dir(), ec)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  DCR_REQUIRE(!ec, Code::not_found, "cannot list the model families in '" + models_dir() + "': " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<ModelFamily> families(files.size());
  std::string names;
  for (size_t i = 0; i < files.size(); ++i) {
    DCR_TRY(load_model_family(files[i], &families[i]));
    names += (names.empty() ? "" : ", ") + families[i].name;
  }
  for (const ModelFamily& f : families) {
    if (!model_type.empty() && std::count(f.model_types.begin(), f.model_types.end(), model_type)) {
      *out = f;
      return Status::ok();
    }
  }
  for (const ModelFamily& f : families) {
    for (const std::string& a : architectures) {
      if (!std::count(f.architectures.begin(), f.architectures.end(), a)) continue;
      *out = f;
      return Status::ok();
    }
  }
  return Status(Code::not_found, "no model family in '" + models_dir() + "' matches model_type \"" + model_type +
                                     "\" or architectures " + json(architectures).dump() + " (families: " + names +
                                     "; name one with --model-family, or add a file: see README)");
}

Status model_dims(const json& config, ModelDims* out) {
  DCR_REQUIRE(config.is_object(), Code::invalid_argument, "config.json is not a JSON object");
  ModelDims d;
  DCR_TRY(positive_int(config, "num_attention_heads", &d.heads));
  DCR_TRY(positive_int(config, "num_key_value_heads", &d.kv_heads));
  if (d.kv_heads == 0) d.kv_heads = d.heads;
  DCR_TRY(positive_int(config, "head_dim", &d.head_dim));
  int64_t hidden = 0;
  DCR_TRY(positive_int(config, "hidden_size", &hidden));
  if (d.head_dim == 0 && d.heads > 0) d.head_dim = hidden / d.heads;
  DCR_TRY(positive_int(config, "num_local_experts", &d.experts));
  if (d.experts == 0) DCR_TRY(positive_int(config, "num_experts", &d.experts));
  DCR_TRY(optional_field(config, "tie_word_embeddings", &d.tied));
  *out = d;
  return Status::ok();
}

Status resolve_rules(const ModelFamily& family, const ModelDims& dims, const Manifest& manifest, ModelRules* out) {
  ModelRules rules;
  rules.family = family.name;
  rules.file = family.file;
  rules.vocab_padding = family.vocab_padding;
  rules.dims = dims;
  rules.tensors.resize(manifest.tensors.size());
  for (size_t id = 0; id < manifest.tensors.size(); ++id) {
    const std::string& name = manifest.tensors[id].name;
    for (const FamilyRule& rule : family.rules) {
      std::smatch m;
      if (!std::regex_match(name, m, rule.regex)) continue;
      DCR_TRY(apply_rule(rule, m, dims, &rules.tensors[id])
                  .with_context("tensor '" + name + "' in model family file '" + family.file + "'"));
      break;
    }
  }
  *out = std::move(rules);
  return Status::ok();
}

Status rules_for_model(const std::string& name, const json& config, const Manifest& manifest, ModelRules* out) {
  ModelFamily family;
  if (!name.empty()) {
    DCR_TRY(load_model_family(name, &family));
  } else if (!config.is_null()) {
    DCR_TRY(pick_model_family(config, &family));
  } else {
    DCR_TRY(load_model_family("dcr", &family));
  }
  ModelDims dims;
  if (!config.is_null()) DCR_TRY(model_dims(config, &dims).with_context("config.json"));
  return resolve_rules(family, dims, manifest, out);
}

Status check_matched(const Manifest& manifest, const ModelRules& rules, uint32_t id) {
  const TensorDesc& t = manifest.tensors[id];
  const bool whole_anyway = t.is_buffer || t.shape.size() < 2;
  DCR_REQUIRE(rules.tensors.at(id).matched || whole_anyway, Code::invalid_argument,
              "tensor '" + t.name + "' matches no rule of model family '" + rules.family + "' (" + rules.file +
                  "); with tensor parallelism it would be copied whole to every rank. Add a rule for it "
                  "(kind \"replicated\" if it is meant to be whole)");
  return Status::ok();
}

}  // namespace dcr
