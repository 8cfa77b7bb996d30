#include "dcr/layout/model_rules.h"

#include <re2/re2.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "dcr/layout/model_config.h"
#include "src/core/files.h"

namespace dcr {

namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxFamilyFileBytes = 1 << 20;
constexpr int kMaxGroups = 99;  // $1 .. $99

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

template <typename T>
Status optional_field(const json& object, const char* key, T* out) {
  if (!object.contains(key)) return Status::ok();
  try {
    *out = object.at(key).get<T>();
  } catch (const json::exception&) {
    return Status(Code::invalid_argument, std::string("\"") + key + "\" has the wrong type: " + json_brief(object.at(key)));
  }
  return Status::ok();
}

// The $n references of a template: each names a group the pattern has; '$' otherwise only as "$$".
Status check_template(const std::string& text, int groups, const char* field) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$') continue;
    if (i + 1 < text.size() && text[i + 1] == '$') {
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < text.size() && end < i + 3 && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    DCR_REQUIRE(end > i + 1, Code::invalid_argument,
                std::string("\"") + field + "\" \"" + text + "\": a '$' must be followed by a group number ($$ for '$')");
    const int n = std::atoi(text.substr(i + 1, end - i - 1).c_str());
    DCR_REQUIRE(n >= 1 && n <= groups, Code::invalid_argument,
                std::string("\"") + field + "\" \"" + text + "\" uses $" + std::to_string(n) + ", but the pattern has " +
                    std::to_string(groups) + " group(s)");
    i = end - 1;
  }
  return Status::ok();
}

int groups_of(const Pattern& p) { return p->NumberOfCapturingGroups(); }

Status parse_rule(const json& r, FamilyRule* rule) {
  DCR_REQUIRE(r.is_object() && r.contains("pattern") && r.contains("kind"), Code::invalid_argument,
              "a rule needs \"pattern\" and \"kind\" (got " + json_brief(r) + ")");
  std::string kind;
  DCR_TRY(optional_field(r, "pattern", &rule->pattern));
  DCR_TRY(optional_field(r, "kind", &kind));
  DCR_TRY(parse_kind(kind, &rule->kind));
  DCR_TRY(optional_field(r, "serve", &rule->serve));
  DCR_TRY(optional_field(r, "member", &rule->member));
  DCR_TRY(optional_field(r, "members", &rule->members));
  DCR_TRY(optional_field(r, "expert", &rule->expert));
  DCR_TRY(optional_field(r, "dropped_if_tied", &rule->dropped_if_tied));
  if (r.contains("stage")) {
    std::string stage;
    DCR_TRY(optional_field(r, "stage", &stage));
    DCR_REQUIRE(stage == "first" || stage == "last", Code::invalid_argument,
                "rule \"" + rule->pattern + "\": \"stage\" is \"first\" or \"last\" (got \"" + stage + "\")");
    rule->stage = stage == "last" ? PipelineStage::last : PipelineStage::first;
  }
  if (r.contains("quantize")) {
    bool quantize = false;
    DCR_TRY(optional_field(r, "quantize", &quantize));
    rule->quantize = quantize ? 1 : 0;
  }
  if (r.contains("shape")) {
    const json& shape = r["shape"];
    DCR_REQUIRE(shape.is_array() && shape.size() <= 8, Code::invalid_argument,
                "\"shape\" must be a list of at most 8 config.json keys or nulls (got " + json_brief(shape) + ")");
    for (const json& key : shape) {
      DCR_REQUIRE(key.is_null() || key.is_string(), Code::invalid_argument,
                  "\"shape\" entries are config.json keys or null (got " + json_brief(key) + ")");
      rule->shape.push_back(key.is_null() ? "" : key.get<std::string>());
    }
  }
  DCR_TRY(compile_pattern(rule->pattern, &rule->regex));
  const int groups = groups_of(rule->regex);
  DCR_TRY(check_template(rule->serve, groups, "serve").with_context("rule \"" + rule->pattern + "\""));
  DCR_TRY(check_template(rule->member, groups, "member").with_context("rule \"" + rule->pattern + "\""));
  DCR_TRY(check_template(rule->expert, groups, "expert").with_context("rule \"" + rule->pattern + "\""));
  DCR_REQUIRE(rule->members.size() <= kMaxMembers, Code::invalid_argument,
              "rule \"" + rule->pattern + "\" lists " + std::to_string(rule->members.size()) + " members (at most " +
                  std::to_string(kMaxMembers) + ")");
  const bool member_kind = is_member_kind(rule->kind);
  DCR_REQUIRE(!member_kind || (!rule->member.empty() && !rule->members.empty() && !rule->serve.empty()),
              Code::invalid_argument, "rule \"" + rule->pattern + "\": kind " + kind + " needs \"member\", \"members\" and \"serve\"");
  DCR_REQUIRE(rule->kind != SplitKind::qkv || rule->members.size() == 3, Code::invalid_argument,
              "rule \"" + rule->pattern + "\": kind qkv takes three members, query first, then key and value (got " +
                  std::to_string(rule->members.size()) + ")");
  const auto q = std::find(rule->members.begin(), rule->members.end(), "q");
  DCR_REQUIRE(rule->kind != SplitKind::qkv || q == rule->members.begin() || q == rule->members.end(), Code::invalid_argument,
              "rule \"" + rule->pattern + "\": kind qkv lists its members query first (\"q\", \"k\", \"v\"); this "
              "rule lists \"" + rule->members[0] + "\" first");
  DCR_REQUIRE(!is_expert_kind(rule->kind) || (!rule->expert.empty() && !rule->serve.empty()), Code::invalid_argument,
              "rule \"" + rule->pattern + "\": kind " + kind + " needs \"expert\" and \"serve\"");
  return Status::ok();
}

Status parse_family(const json& doc, ModelFamily* f) {
  DCR_REQUIRE(doc.is_object() && doc.contains("rules") && doc["rules"].is_array(), Code::invalid_argument,
              "needs an object with a \"rules\" array");
  DCR_TRY(optional_field(doc, "family", &f->name));
  DCR_REQUIRE(doc.find("vocab_padding") == doc.end() || doc["vocab_padding"].is_number_integer(), Code::invalid_argument,
              "\"vocab_padding\" must be a whole number (got " + json_brief(doc.value("vocab_padding", json())) + ")");
  DCR_TRY(optional_field(doc, "vocab_padding", &f->vocab_padding));
  DCR_REQUIRE(f->vocab_padding >= 1 && f->vocab_padding <= kMaxVocabPadding, Code::invalid_argument,
              "\"vocab_padding\" must be in [1, " + std::to_string(kMaxVocabPadding) + "] (vLLM pads to 64), got " +
                  std::to_string(f->vocab_padding));
  if (doc.contains("match")) {
    DCR_TRY(optional_field(doc["match"], "model_type", &f->model_types));
    DCR_TRY(optional_field(doc["match"], "architectures", &f->architectures));
  }
  if (doc.contains("layer")) {
    DCR_TRY(optional_field(doc, "layer", &f->layer));
    DCR_TRY(compile_pattern(f->layer, &f->layer_regex).with_context("\"layer\""));
    DCR_REQUIRE(groups_of(f->layer_regex) >= 1, Code::invalid_argument,
                "\"layer\" \"" + f->layer + "\" needs a group: the layer index");
  }
  const json& rules = doc["rules"];
  DCR_REQUIRE(rules.size() <= kMaxFamilyRules, Code::invalid_argument,
              "\"rules\" lists " + std::to_string(rules.size()) + " rules (at most " + std::to_string(kMaxFamilyRules) + ")");
  for (const json& r : rules) {
    f->rules.emplace_back();
    DCR_TRY(parse_rule(r, &f->rules.back()));
  }
  return Status::ok();
}

// A rule's template with $n replaced by group n of the match (and $$ by '$').
std::string expand(const std::vector<std::string>& groups, const std::string& format) {
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '$') {
      out += format[i];
      continue;
    }
    if (format[i + 1] == '$') {  // templates were checked: '$' is followed by '$' or a group number
      out += '$';
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < format.size() && end < i + 3 && std::isdigit(static_cast<unsigned char>(format[end]))) ++end;
    out += groups[std::atoi(format.substr(i + 1, end - i - 1).c_str()) - 1];
    i = end - 1;
  }
  return out;
}

// Whether `name` matches `p` whole; *groups gets its captured groups.
bool full_match(const std::string& name, const Pattern& p, std::vector<std::string>* groups) {
  const int n = groups_of(p);
  groups->assign(n, "");
  std::vector<re2::RE2::Arg> args(n);
  std::vector<const re2::RE2::Arg*> pointers(n);
  for (int i = 0; i < n; ++i) {
    args[i] = re2::RE2::Arg(&(*groups)[i]);
    pointers[i] = &args[i];
  }
  return re2::RE2::FullMatchN(name, *p, pointers.data(), n);
}

Status parse_index(const std::string& text, const std::string& what, int64_t* out) {
  DCR_REQUIRE(!text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos,
              Code::invalid_argument, what + " \"" + text + "\" is not a whole number below 10^9");
  *out = std::atoll(text.c_str());
  return Status::ok();
}

Status apply_rule(const FamilyRule& rule, const std::vector<std::string>& groups, TensorRule* out) {
  out->matched = true;
  out->kind = rule.kind;
  out->serve = expand(groups, rule.serve);
  out->quantize = rule.quantize;
  out->pattern = rule.pattern;
  out->shape = rule.shape;
  out->stage = rule.stage;
  if (!rule.member.empty()) {
    const std::string member = expand(groups, rule.member);
    const auto it = std::find(rule.members.begin(), rule.members.end(), member);
    DCR_REQUIRE(it != rule.members.end(), Code::invalid_argument,
                "member \"" + member + "\" is not one of the rule's members (pattern \"" + rule.pattern + "\")");
    out->member = static_cast<int>(it - rule.members.begin());
    out->members = static_cast<int>(rule.members.size());
  }
  if (!rule.expert.empty()) DCR_TRY(parse_index(expand(groups, rule.expert), "expert index", &out->expert));
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

Status compile_pattern(const std::string& text, Pattern* out) {
  DCR_REQUIRE(text.size() <= kMaxPatternBytes, Code::invalid_argument,
              "pattern of " + std::to_string(text.size()) + " bytes (at most " + std::to_string(kMaxPatternBytes) + ")");
  re2::RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(8 << 20);  // a bounded automaton: RE2 refuses patterns that need more
  auto re = std::make_shared<re2::RE2>(text, options);
  DCR_REQUIRE(re->ok(), Code::invalid_argument,
              "pattern \"" + text + "\" is not a regex RE2 takes: " + re->error() +
                  " (RE2 syntax: no backreferences or lookaround)");
  DCR_REQUIRE(re->NumberOfCapturingGroups() <= kMaxGroups, Code::invalid_argument,
              "pattern \"" + text + "\" has more than " + std::to_string(kMaxGroups) + " groups");
  *out = std::move(re);
  return Status::ok();
}

Status parse_model_family(const std::string& text, const std::string& file, ModelFamily* out) {
  json doc = json::parse(text, nullptr, false);
  DCR_REQUIRE(!doc.is_discarded(), Code::invalid_argument, "model family file '" + file + "' is not valid JSON");
  ModelFamily f;
  f.file = file;
  f.text = text;
  DCR_TRY(parse_family(doc, &f).with_context("model family file '" + file + "'"));
  if (f.name.empty()) f.name = std::filesystem::path(file).stem().string();
  *out = std::move(f);
  return Status::ok();
}

Status load_model_family(const std::string& name_or_path, ModelFamily* out) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
  const std::string path = is_path ? name_or_path : models_dir() + "/" + name_or_path + ".json";
  std::vector<uint8_t> bytes;
  const std::string context = "model family '" + name_or_path + "'";
  DCR_TRY(files::check_regular_file(path, kMaxFamilyFileBytes, nullptr).with_context(context));
  DCR_TRY(files::read_whole(path, &bytes).with_context(context));
  return parse_model_family(std::string(bytes.begin(), bytes.end()), path, out);
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

Status resolve_rules(const ModelFamily& family, const ModelDims& dims, const Manifest& manifest, ModelRules* out) {
  ModelRules rules;
  rules.family = family.name;
  rules.file = family.file;
  rules.family_text = family.text;
  rules.vocab_padding = family.vocab_padding;
  rules.dims = dims;
  rules.has_layers = family.layer_regex != nullptr;
  rules.tensors.resize(manifest.tensors.size());
  std::vector<std::string> groups;
  for (size_t id = 0; id < manifest.tensors.size(); ++id) {
    const std::string& name = manifest.tensors[id].name;
    const std::string where = "tensor '" + name + "' in model family file '" + family.file + "'";
    for (const FamilyRule& rule : family.rules) {
      if (!full_match(name, rule.regex, &groups)) continue;
      DCR_TRY(apply_rule(rule, groups, &rules.tensors[id]).with_context(where));
      DCR_REQUIRE(!(rule.dropped_if_tied && dims.tied), Code::invalid_argument,
                  "config.json says tie_word_embeddings: true, but the checkpoint holds '" + name +
                      "', which a tied model does not have (rule \"" + rule.pattern + "\" in '" + family.file +
                      "'): vLLM would serve the embedding in its place. Set tie_word_embeddings to false if it was "
                      "trained apart, or leave it out of the checkpoint");
      break;
    }
    if (family.layer_regex && full_match(name, family.layer_regex, &groups)) {
      DCR_TRY(parse_index(groups[0], "layer index of '" + name + "'", &rules.tensors[id].layer));
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
  return rules_for_family(family, config, manifest, out);
}

Status rules_for_family(const ModelFamily& family, const json& config, const Manifest& manifest, ModelRules* out) {
  ModelDims dims;
  if (!config.is_null()) DCR_TRY(model_dims(config, &dims).with_context("config.json"));
  DCR_TRY(resolve_rules(family, dims, manifest, out));
  return config.is_null() ? Status::ok() : check_config(config, manifest, *out);
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
