#include "src/spool/manifest.h"

#include <cstring>

#include <sstream>

#include "dcr/core/hash.h"

namespace dcr::spool {
namespace {

constexpr const char* kFirstLine = "dcr-frame-spool 1";

bool parse_decimal(const std::string& text, uint64_t* value) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *value = v;
  return true;
}

bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Parses one body line (after the first) into *out, marking base (1), target (2) and writer (4)
// lines in *seen; false when it is not a valid line.
bool parse_line(const std::vector<std::string>& w, Manifest* out, int* seen) {
  uint64_t a = 0, b = 0, h = 0;
  if (w.size() == 2 && w[0] == "base") return (*seen |= 1) && parse_decimal(w[1], &out->base);
  if (w.size() == 2 && w[0] == "target") return (*seen |= 2) && parse_decimal(w[1], &out->target);
  if (w.size() == 4 && w[0] == "writer" && w[2] == "of") {
    *seen |= 4;
    if (!parse_decimal(w[1], &a) || !parse_decimal(w[3], &b) || b == 0 || a >= b || b > UINT32_MAX) return false;
    out->writer = static_cast<uint32_t>(a);
    out->writers = static_cast<uint32_t>(b);
    return true;
  }
  if (w.size() == 1 && w[0] == "full" && !out->full) return out->full = true;
  if (w.size() == 2 && w[0] == "published" && out->published_us == 0)
    return parse_decimal(w[1], &out->published_us) && out->published_us > 0;
  if (w.size() == 2 && w[0] == "publication" && out->publication.empty())
    return (out->publication = w[1]).size() == 32 && w[1].find_first_not_of("0123456789abcdef") == std::string::npos;
  if (w.size() == 2 && w[0] == "state" && out->state == 0) return parse_hex16(w[1], &out->state) && out->state != 0;
  if (w.size() == 4 && w[0] == "frame") {
    if (!plain_name(w[1]) || !parse_decimal(w[2], &a) || !parse_hex16(w[3], &h)) return false;
    out->frames.push_back(ManifestEntry{w[1], a, h});
    return true;
  }
  return false;
}

Status corrupt(const std::string& path, const std::string& why) {
  return Status(Code::corrupt, "spool manifest '" + path + "' is corrupt: " + why);
}

}  // namespace

std::string format_manifest(const Manifest& m, const std::function<std::string(const std::string&, uint32_t*)>& mac) {
  std::ostringstream text;
  text << kFirstLine << "\nbase " << m.base << "\ntarget " << m.target << "\nwriter " << m.writer << " of "
       << m.writers << "\n";
  if (m.full) text << "full\n";
  if (m.published_us > 0) text << "published " << m.published_us << "\n";
  if (!m.publication.empty()) text << "publication " << m.publication << "\n";
  if (m.state != 0) text << "state " << hex16(m.state) << "\n";
  for (const ManifestEntry& f : m.frames) text << "frame " << f.name << " " << f.bytes << " " << hex16(f.hash) << "\n";
  std::string body = text.str();
  if (mac) {
    uint32_t key_id = 0;
    const std::string tag = mac(body, &key_id);
    body += "mac " + std::to_string(key_id) + " " + tag + "\n";
  }
  return body + "end " + std::to_string(m.frames.size()) + " " + hex16(hash64(body.data(), body.size())) + "\n";
}

Status parse_manifest(const std::string& text, const std::string& path, Manifest* out) {
  if (text.empty() || text.back() != '\n') return corrupt(path, "truncated (no final newline)");
  const size_t last = text.size() < 2 ? 0 : text.rfind('\n', text.size() - 2) + 1;  // npos + 1 == 0
  const std::vector<std::string> end = words_of(text.substr(last));
  uint64_t count = 0, hash = 0;
  if (end.size() != 3 || end[0] != "end" || !parse_decimal(end[1], &count) || !parse_hex16(end[2], &hash))
    return corrupt(path, "truncated (no end line)");
  if (hash64(text.data(), last) != hash) return corrupt(path, "content hash mismatch");
  std::istringstream lines(text.substr(0, last));
  std::string line;
  if (!std::getline(lines, line) || line != kFirstLine) return corrupt(path, "not a frame spool manifest");
  *out = Manifest{};
  int seen = 0;
  size_t offset = std::strlen(kFirstLine) + 1;
  for (int number = 2; std::getline(lines, line); ++number) {
    const std::vector<std::string> w = words_of(line);
    uint64_t id = 0;
    if (w.size() == 3 && w[0] == "mac" && out->mac.empty() && parse_decimal(w[1], &id) && id > 0 && id <= UINT32_MAX &&
        w[2].size() == 64 && w[2].find_first_not_of("0123456789abcdef") == std::string::npos) {
      out->mac_key = static_cast<uint32_t>(id);
      out->mac = w[2];
      out->mac_covers = offset;
    } else if (!out->mac.empty() || !parse_line(w, out, &seen)) {  // nothing may follow the mac line
      return corrupt(path, "line " + std::to_string(number) + " is invalid");
    }
    offset += line.size() + 1;
  }
  if (seen != 7) return corrupt(path, "lacks its base, target or writer line");
  if (out->full && out->base != out->target)
    return corrupt(path, "a full snapshot of version " + std::to_string(out->target) + " names base " +
                             std::to_string(out->base));
  if (!out->full && out->base >= out->target)  // a delta moves forward; base == target would loop a chain walk
    return corrupt(path, "base " + std::to_string(out->base) + " is not before target " + std::to_string(out->target));
  if (out->frames.size() != count)
    return corrupt(path, "lists " + std::to_string(out->frames.size()) + " frames, its end line says " +
                             std::to_string(count));
  return Status::ok();
}

}  // namespace dcr::spool
