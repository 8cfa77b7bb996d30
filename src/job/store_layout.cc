#include "src/job/store_layout.h"

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
      for (int r : f.receivers) words.push_back(static_cast<uint64_t>(r));
    }
  }
  return hash64(words.data(), words.size() * sizeof(uint64_t));
}

// "rollout_tp: store 2, this job 1; plan: ..." for every field that differs.
std::string differences(const nlohmann::json& store, const nlohmann::json& mine) {
  std::string text;
  for (auto it = mine.begin(); it != mine.end(); ++it) {
    const nlohmann::json there = store.contains(it.key()) ? store[it.key()] : nlohmann::json();
    if (there != it.value()) {
      text += (text.empty() ? "" : "; ") + it.key() + ": store " + there.dump() + ", this job " + it.value().dump();
    }
  }
  return text;
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
Status read_layout(const FrameSpool& spool, const Keyring* keys, nlohmann::json* out, bool* found) {
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
  return {{"format", "dcr-store-layout 1"},
          {"model", hex16(plan.manifest.hash())},
          {"trainers", c.trainers},
          {"train_tp", c.train_tp},
          {"train_ep", c.train_ep},
          {"rollouts", plan.rollout_holdings.size()},
          {"rollout_tp", c.rollout_tp},
          {"rollout_ep", c.rollout_ep},
          {"fuse", c.fuse},
          {"serve_quant", serve_quant_name(plan.quant)},
          {"frame_elements", c.frame_elements},
          {"bundle_below", c.bundle_below},
          {"frames", frames},
          {"plan", hex16(plan_hash(plan))}};
}

Status put_layout(const FrameSpool& spool, const Keyring* keys, const nlohmann::json& mine, std::string* publication) {
  nlohmann::json there;
  bool found = false;
  DCR_TRY(read_layout(spool, keys, &there, &found));
  if (!found) {
    DCR_TRY(write_layout(spool, keys, mine));
    DCR_TRY(read_layout(spool, keys, &there, &found));  // the id as stored
    DCR_REQUIRE(found, Code::io_error, object(spool, kLayoutKey) + " was put but cannot be read back");
  }
  const std::string diff = differences(there, mine);
  DCR_REQUIRE(diff.empty(), Code::invalid_argument,
              "store '" + spool.describe() + "' holds versions published for another layout (" + diff +
                  "); publish to a fresh prefix, or relaunch with the store's options");
  *publication = there["publication"].get<std::string>();
  return Status::ok();
}

Status check_layout(const FrameSpool& spool, const Keyring* keys, const nlohmann::json& mine, std::string* publication) {
  nlohmann::json there;
  bool found = false;
  DCR_TRY(read_layout(spool, keys, &there, &found));
  DCR_REQUIRE(found, Code::not_found, "store '" + spool.describe() + "' has no LAYOUT yet (no publisher has started)");
  const std::string diff = differences(there, mine);
  DCR_REQUIRE(diff.empty(), Code::invalid_argument,
              "store '" + spool.describe() + "' was published for another layout than this follow job's (" + diff +
                  "); launch the follow job with the publisher's --trainers, --train-tp, --rollout-tp, --fuse, "
                  "--serve-quant, --frame-elements, --bundle-below and model, and as many rollout ranks as its --rollouts");
  *publication = there["publication"].get<std::string>();
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
