#include "src/job/store_layout.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "dcr/auth/seal.h"
#include "dcr/core/hash.h"

namespace dcr {
namespace {

constexpr const char* kClosedFirstLine = "dcr-closed 1";

uint64_t plan_hash(const RefitPlan& plan) {
  std::vector<uint64_t> words;
  for (size_t t = 0; t < plan.frames.size(); ++t) {
    for (const PlannedFrame& f : plan.frames[t]) {
      words.insert(words.end(), {t, f.box.tensor, f.box.row0, f.box.rows, f.box.col0, f.box.cols, f.parts.size()});
      for (const Box& b : f.parts) words.insert(words.end(), {b.tensor, b.row0, b.rows, b.col0, b.cols});
    }
  }
  return hash64(words.data(), words.size() * sizeof(uint64_t));
}

std::string shown(const nlohmann::json& value) {
  const std::string text = value.dump();
  return text.size() <= 60 ? text : text.substr(0, 57) + "...";
}

// "train_tp: store 2, this job 1; serve_tp: ..." for every field that differs.
std::string differences(const nlohmann::json& store, const nlohmann::json& mine) {
  std::string text;
  for (auto it = mine.begin(); it != mine.end(); ++it) {
    const nlohmann::json there = store.contains(it.key()) ? store[it.key()] : nlohmann::json();
    if (there != it.value()) {
      text += (text.empty() ? "" : "; ") + it.key() + ": store " + shown(there) + ", this job " + shown(it.value());
    }
  }
  return text;
}

nlohmann::json manifest_json(const Manifest& m) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const TensorDesc& t : m.tensors) {
    tensors.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"buffer", t.is_buffer}});
  }
  return tensors;
}

Status manifest_from(const nlohmann::json& tensors, const std::string& what, Manifest* out) {
  DCR_REQUIRE(tensors.is_array() && !tensors.empty(), Code::corrupt, what + " lists no tensors");
  Manifest m;
  for (const nlohmann::json& t : tensors) {
    TensorDesc d;
    const bool shaped = t.is_object() && t.contains("name") && t["name"].is_string() && t.contains("dtype") &&
                        t["dtype"].is_string() && t.contains("shape") && t["shape"].is_array() &&
                        t.contains("buffer") && t["buffer"].is_boolean();
    DCR_REQUIRE(shaped, Code::corrupt, what + " holds a tensor that is not {name, dtype, shape, buffer}");
    d.name = t["name"].get<std::string>();
    DCR_TRY(parse_dtype(t["dtype"].get<std::string>(), &d.dtype).with_context(what));
    for (const nlohmann::json& dim : t["shape"]) {
      DCR_REQUIRE(dim.is_number_integer(), Code::corrupt, what + ": tensor '" + printable(d.name) + "' has a bad shape");
      d.shape.push_back(dim.get<int64_t>());
    }
    d.is_buffer = t["buffer"].get<bool>();
    m.tensors.push_back(std::move(d));
  }
  DCR_TRY(m.validate().with_context(what));
  *out = std::move(m);
  return Status::ok();
}

// The field `key` of LAYOUT, of the JSON type `is` checks; corrupt naming it otherwise.
Status field(const nlohmann::json& layout, const char* key, bool (nlohmann::json::*is)() const noexcept,
             const std::string& what, nlohmann::json* out) {
  DCR_REQUIRE(layout.contains(key) && (layout[key].*is)(), Code::corrupt, what + " has no valid \"" + key + "\"");
  *out = layout[key];
  return Status::ok();
}

Status int_field(const nlohmann::json& layout, const char* key, const std::string& what, long long low, long long* out) {
  nlohmann::json v;
  DCR_TRY(field(layout, key, &nlohmann::json::is_number_integer, what, &v));
  *out = v.get<long long>();
  DCR_REQUIRE(*out >= low, Code::corrupt, what + ": \"" + key + "\" is " + std::to_string(*out));
  return Status::ok();
}

Status int_list(const nlohmann::json& layout, const char* key, const std::string& what, std::vector<int>* out) {
  nlohmann::json v;
  DCR_TRY(field(layout, key, &nlohmann::json::is_array, what, &v));
  out->clear();
  for (const nlohmann::json& x : v) {
    DCR_REQUIRE(x.is_number_integer() && x.get<long long>() >= 1 && x.get<long long>() <= 4096, Code::corrupt,
                what + ": \"" + key + "\" holds " + shown(x));
    out->push_back(x.get<int>());
  }
  DCR_REQUIRE(!out->empty(), Code::corrupt, what + ": \"" + key + "\" is empty");
  return Status::ok();
}

// The promised layouts' degrees, as lists whose product (EP dividing TP) is exactly the promise.
void promised_lists(const std::vector<ServeShape>& layouts, std::vector<int>* tps, std::vector<int>* eps) {
  for (const ServeShape& l : layouts) {
    if (std::find(tps->begin(), tps->end(), l.tp) == tps->end()) tps->push_back(l.tp);
    if (std::find(eps->begin(), eps->end(), l.ep) == eps->end()) eps->push_back(l.ep);
  }
  std::sort(tps->begin(), tps->end());
  std::sort(eps->begin(), eps->end());
}

std::string object(const FrameSpool& spool, const char* key) { return "'" + spool.describe() + "/" + key + "'"; }

bool is_publication_id(const std::string& id) {
  return id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The tag of LAYOUT: over its JSON without the "mac" field, under the keys of its publication.
std::string layout_tag(const Keyring& keys, nlohmann::json layout, uint32_t* key_id) {
  layout.erase("mac");
  return text_tag(keys.for_publication(layout.value("publication", "")), layout.dump(), key_id);
}

Status check_layout_mac(const FrameSpool& spool, const Keyring& keys, const nlohmann::json& layout) {
  const std::string what = "store layout " + object(spool, kLayoutKey);
  const nlohmann::json mac = layout.contains("mac") ? layout["mac"] : nlohmann::json();
  DCR_REQUIRE(mac.is_object() && mac.contains("key") && mac["key"].is_number_unsigned() && mac.contains("tag") &&
                  mac["tag"].is_string(),
              Code::corrupt, what + " is not authenticated (no mac) but this job has a key file: refused");
  nlohmann::json body = layout;
  body.erase("mac");
  const Keyring bound = keys.for_publication(layout.value("publication", ""));
  return check_text_tag(bound, body.dump(), mac["key"].get<uint32_t>(), mac["tag"].get<std::string>(), what);
}

// LAYOUT as the store holds it, checked: JSON, a publication id, and its tag where this job has keys.
Status load_layout(const FrameSpool& spool, const Keyring* keys, nlohmann::json* out, bool* found) {
  std::vector<uint8_t> bytes;
  DCR_TRY(spool.store().get(kLayoutKey, &bytes, found));
  if (!*found) return Status::ok();
  *out = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  DCR_REQUIRE(out->is_object(), Code::corrupt, object(spool, kLayoutKey) + " is not a JSON object");
  const nlohmann::json id = out->contains("publication") ? (*out)["publication"] : nlohmann::json();
  DCR_REQUIRE(id.is_string() && is_publication_id(id.get<std::string>()), Code::corrupt,
              object(spool, kLayoutKey) + " names no publication id (written by an older dcr, or damaged): publish "
              "to a fresh prefix");
  if (keys) DCR_TRY(check_layout_mac(spool, *keys, *out));
  return Status::ok();
}

Status write_layout(const FrameSpool& spool, const Keyring* keys, nlohmann::json layout) {
  layout["publication"] = new_publication_id();
  if (keys) {
    uint32_t key_id = 0;
    const std::string tag = layout_tag(*keys, layout, &key_id);
    layout["mac"] = {{"key", key_id}, {"tag", tag}};
  }
  const std::string text = layout.dump(2) + "\n";
  return spool.store().put(kLayoutKey, reinterpret_cast<const uint8_t*>(text.data()), text.size(), true);
}

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The body of CLOSED (every line before "end"), its publication and last version.
Status parse_closed(const std::string& text, const std::string& what, std::string* publication, uint64_t* last,
                    std::string* mac_line, size_t* mac_covers) {
  const size_t end = text.size() < 2 ? std::string::npos : text.rfind('\n', text.size() - 2);
  const std::vector<std::string> tail = end == std::string::npos ? std::vector<std::string>{} : words_of(text.substr(end + 1));
  uint64_t hash = 0;
  DCR_REQUIRE(!text.empty() && text.back() == '\n' && tail.size() == 2 && tail[0] == "end" &&
                  parse_hex16(tail[1], &hash) && hash64(text.data(), end + 1) == hash,
              Code::corrupt, what + " is not a close record (damaged, truncated or not written by dcr)");
  std::istringstream lines(text.substr(0, end + 1));
  std::string line;
  std::getline(lines, line);
  DCR_REQUIRE(line == kClosedFirstLine, Code::corrupt, what + " is not a close record");
  *mac_covers = line.size() + 1;
  bool has_last = false;
  while (std::getline(lines, line)) {
    const std::vector<std::string> w = words_of(line);
    if (w.size() == 2 && w[0] == "publication") {
      *publication = w[1];
    } else if (w.size() == 2 && w[0] == "last" && !w[1].empty() && w[1].size() <= 19 &&
               w[1].find_first_not_of("0123456789") == std::string::npos) {
      *last = std::stoull(w[1]);
      has_last = true;
    } else if (w.size() == 3 && w[0] == "mac") {
      *mac_line = line;
      break;
    } else {
      return Status(Code::corrupt, what + " holds an invalid line '" + line.substr(0, 60) + "'");
    }
    *mac_covers += line.size() + 1;
  }
  DCR_REQUIRE(has_last, Code::corrupt, what + " names no last version");
  return Status::ok();
}

}  // namespace

nlohmann::json store_layout(const RefitOptions& c, const RefitPlan& plan) {
  uint64_t frames = 0;
  for (const auto& per_trainer : plan.frames) frames += per_trainer.size();
  std::vector<int> tps, eps;
  promised_lists(plan.cut_layouts, &tps, &eps);
  nlohmann::json layouts = nlohmann::json::array();
  for (const ServeShape& l : plan.cut_layouts) layouts.push_back({{"tp", l.tp}, {"ep", l.ep}});
  return {{"format", "dcr-store-layout 2"},
          {"model", hex16(plan.model.hash())},
          {"tensors", manifest_json(plan.model)},
          {"config", plan.model_config},
          {"family", plan.rules.family},
          {"family_text", plan.rules.family_text},
          {"trainers", c.trainers},
          {"train_tp", c.train_tp},
          {"train_ep", c.train_ep},
          {"train_pp", c.train_pp},
          {"train_pp_layers", c.train_pp_layers},
          {"train_dp", c.train_dp},
          {"serve_tp", tps},
          {"serve_ep", eps},
          {"layouts", layouts},
          {"serve_quant", serve_quant_name(plan.quant)},
          {"frame_elements", c.frame_elements},
          {"bundle_below", c.bundle_below},
          {"frames", frames},
          {"plan", hex16(plan_hash(plan))}};
}

Status put_layout(const FrameSpool& spool, const Keyring* keys, const nlohmann::json& mine, std::string* publication) {
  nlohmann::json there;
  bool found = false;
  DCR_TRY(load_layout(spool, keys, &there, &found));
  if (!found) {
    DCR_TRY(write_layout(spool, keys, mine));
    DCR_TRY(load_layout(spool, keys, &there, &found));  // the id as stored
    DCR_REQUIRE(found, Code::io_error, object(spool, kLayoutKey) + " was put but cannot be read back");
  }
  const std::string diff = differences(there, mine);
  DCR_REQUIRE(diff.empty(), Code::invalid_argument,
              "store '" + spool.describe() + "' holds versions published for another layout or model (" + diff +
                  "); publish to a fresh prefix, or relaunch with the store's options");
  *publication = there["publication"].get<std::string>();
  return Status::ok();
}

Status read_layout(const FrameSpool& spool, const Keyring* keys, nlohmann::json* layout) {
  bool found = false;
  DCR_TRY(load_layout(spool, keys, layout, &found));
  DCR_REQUIRE(found, Code::not_found, "store '" + spool.describe() + "' has no LAYOUT yet (no publisher has started)");
  nlohmann::json format;
  DCR_TRY(field(*layout, "format", &nlohmann::json::is_string, object(spool, kLayoutKey), &format));
  DCR_REQUIRE(format == "dcr-store-layout 2", Code::invalid_argument,
              object(spool, kLayoutKey) + " is " + shown(format) + ", which this dcr does not follow (written by "
              "another dcr version): publish to a fresh prefix with this one");
  return Status::ok();
}

Status adopt_layout(const nlohmann::json& layout, const std::string& store, RefitOptions* options, RefitPlan* plan) {
  const std::string what = "store layout '" + store + "/" + kLayoutKey + "'";
  long long trainers = 0, train_tp = 0, train_ep = 0, frame_elements = 0, bundle_below = 0;
  DCR_TRY(int_field(layout, "trainers", what, 1, &trainers));
  DCR_TRY(int_field(layout, "train_tp", what, 1, &train_tp));
  DCR_TRY(int_field(layout, "train_ep", what, 1, &train_ep));
  DCR_TRY(int_field(layout, "frame_elements", what, 1, &frame_elements));
  DCR_TRY(int_field(layout, "bundle_below", what, 0, &bundle_below));
  long long train_pp = 1, train_dp = 1;  // absent from the layouts of a dcr before them: 1
  std::vector<int> pp_layers;
  if (layout.contains("train_pp")) DCR_TRY(int_field(layout, "train_pp", what, 1, &train_pp));
  if (layout.contains("train_dp")) DCR_TRY(int_field(layout, "train_dp", what, 1, &train_dp));
  if (layout.contains("train_pp_layers") && !layout["train_pp_layers"].empty()) {
    DCR_TRY(int_list(layout, "train_pp_layers", what, &pp_layers));
  }
  std::vector<int> tps, eps;
  DCR_TRY(int_list(layout, "serve_tp", what, &tps));
  DCR_TRY(int_list(layout, "serve_ep", what, &eps));
  nlohmann::json quant, family, family_text, model, tensors;
  DCR_TRY(field(layout, "serve_quant", &nlohmann::json::is_string, what, &quant));
  DCR_TRY(field(layout, "family", &nlohmann::json::is_string, what, &family));
  DCR_TRY(field(layout, "family_text", &nlohmann::json::is_string, what, &family_text));
  DCR_TRY(field(layout, "model", &nlohmann::json::is_string, what, &model));
  DCR_TRY(field(layout, "tensors", &nlohmann::json::is_array, what, &tensors));
  DCR_REQUIRE(layout.contains("config") && (layout["config"].is_null() || layout["config"].is_object()), Code::corrupt,
              what + " has no valid \"config\"");
  Manifest manifest;
  DCR_TRY(manifest_from(tensors, what, &manifest));
  DCR_REQUIRE(hex16(manifest.hash()) == model.get<std::string>(), Code::corrupt,
              what + ": its tensors do not hash to its \"model\" " + shown(model));
  RefitOptions taken = *options;
  taken.trainers = static_cast<int>(trainers);
  taken.train_tp = static_cast<int>(train_tp);
  taken.train_ep = static_cast<int>(train_ep);
  taken.train_pp = static_cast<int>(train_pp);
  taken.train_dp = static_cast<int>(train_dp);
  taken.train_pp_layers = pp_layers;
  taken.frame_elements = static_cast<uint64_t>(frame_elements);
  taken.bundle_below = static_cast<uint64_t>(bundle_below);
  taken.serve_tp = tps;
  taken.serve_ep = eps;
  taken.model_family = family.get<std::string>();
  const std::vector<ServeShape> promised = promised_layouts(taken);
  const ServeShape mine{options->rollout_tp, options->rollout_ep};
  DCR_REQUIRE(std::find(promised.begin(), promised.end(), mine) != promised.end(), Code::invalid_argument,
              "store '" + store + "' promises the serving layouts " + describe_layouts(promised) +
                  "; this follow job's " + describe_layouts({mine}) + " (--rollout-tp " + std::to_string(mine.tp) +
                  ", --rollout-ep " + std::to_string(mine.ep) + ") is not among them. Follow it with one of those, "
                  "or publish to a fresh prefix with --serve-tp / --serve-ep including " + std::to_string(mine.tp) +
                  (mine.ep > 1 ? " / " + std::to_string(mine.ep) : std::string()));
  DCR_REQUIRE(quant.get<std::string>() == serve_quant_name(options->serve_quant), Code::invalid_argument,
              "store '" + store + "' publishes the served form --serve-quant " + quant.get<std::string>() +
                  "; this follow job serves " + serve_quant_name(options->serve_quant) +
                  ": follow it with --serve-quant " + quant.get<std::string>() + ", or follow a publisher of that form");
  *options = taken;
  plan->model = std::move(manifest);
  plan->model_config = layout["config"];
  plan->family_text = family_text.get<std::string>();
  return Status::ok();
}

Status check_plan(const nlohmann::json& layout, const RefitPlan& plan) {
  uint64_t frames = 0;
  for (const auto& per_trainer : plan.frames) frames += per_trainer.size();
  DCR_REQUIRE(layout.value("frames", uint64_t{0}) == frames && layout.value("plan", std::string()) == hex16(plan_hash(plan)),
              Code::invalid_argument,
              "this follow job cuts the publication's frames otherwise (" + std::to_string(frames) + " frames, plan " +
                  hex16(plan_hash(plan)) + "; the store's " + shown(layout.value("frames", nlohmann::json())) +
                  ", " + shown(layout.value("plan", nlohmann::json())) +
                  "): the publisher runs another dcr version; follow it with the publisher's");
  return Status::ok();
}

Status put_closed(const FrameSpool& spool, const Keyring* keys, uint64_t last) {
  std::string text = std::string(kClosedFirstLine) + "\npublication " + spool.publication() + "\nlast " +
                     std::to_string(last) + "\n";
  if (keys) {
    uint32_t key_id = 0;
    const std::string tag = text_tag(*keys, text, &key_id);
    text += "mac " + std::to_string(key_id) + " " + tag + "\n";
  }
  text += "end " + hex16(hash64(text.data(), text.size())) + "\n";
  return spool.store().put(kClosedKey, reinterpret_cast<const uint8_t*>(text.data()), text.size(), true);
}

Status read_closed(const FrameSpool& spool, const Keyring* keys, uint64_t* last) {
  *last = kNoVersion;
  std::vector<uint8_t> bytes;
  bool found = false;
  DCR_TRY(spool.store().get(kClosedKey, &bytes, &found));
  if (!found) return Status::ok();
  const std::string what = "close record " + object(spool, kClosedKey), text(bytes.begin(), bytes.end());
  std::string publication, mac;
  size_t covers = 0;
  uint64_t version = kNoVersion;
  DCR_TRY(parse_closed(text, what, &publication, &version, &mac, &covers));
  DCR_REQUIRE(publication == spool.publication(), Code::corrupt,
              what + " belongs to publication '" + publication + "', not this store's " + spool.publication() +
                  ": copied from another store; refused");
  if (keys) {
    const std::vector<std::string> w = words_of(mac);
    DCR_REQUIRE(w.size() == 3 && !w[1].empty() && w[1].size() <= 9 && w[1].find_first_not_of("0123456789") == std::string::npos,
                Code::corrupt, what + " is not authenticated (no mac) but this job has a key file: refused");
    DCR_TRY(check_text_tag(*keys, text.substr(0, covers), static_cast<uint32_t>(std::stoul(w[1])), w[2], what));
  }
  *last = version;
  return Status::ok();
}

}  // namespace dcr
