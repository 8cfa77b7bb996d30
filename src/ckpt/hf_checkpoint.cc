#include "dcr/ckpt/hf_checkpoint.h"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "dcr/ckpt/safetensors.h"
#include "src/ckpt/tensor_size.h"
#include "src/core/files.h"
#include "src/core/mapped_file.h"

namespace dcr {

namespace {

using json = nlohmann::json;

constexpr const char* kConfig = "config.json";
constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";

bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

Status read_json_file(const std::string& path, json* out) {
  DCR_TRY(files::check_regular_file(path, 100'000'000, nullptr));  // config.json and the index are small
  std::ifstream in(path);
  DCR_REQUIRE(in.is_open(), Code::not_found, "'" + path + "' does not exist or cannot be read");
  try {
    *out = json::parse(in);
  } catch (const json::exception& e) {
    return Status(Code::invalid_argument, "'" + path + "' is not valid JSON: " + e.what());
  }
  DCR_REQUIRE(out->is_object(), Code::invalid_argument, "'" + path + "' is not a JSON object");
  return Status::ok();
}

// The index's weight_map: tensor name -> shard file name.
Status read_index(const std::string& path, std::map<std::string, std::string>* weight_map) {
  json index;
  DCR_TRY(read_json_file(path, &index));
  DCR_REQUIRE(index.contains("weight_map") && index["weight_map"].is_object(), Code::invalid_argument,
              "'" + path + "' has no \"weight_map\" object");
  for (const auto& item : index["weight_map"].items()) {
    DCR_REQUIRE(item.value().is_string(), Code::invalid_argument,
                "'" + path + "': the shard of tensor '" + item.key() + "' is not a file name");
    const std::string file = item.value().get<std::string>();
    DCR_REQUIRE(!has_control(file) && !has_control(item.key()), Code::invalid_argument,
                "'" + path + "': tensor '" + printable(item.key()) + "' names shard '" + printable(file) +
                    "': a control character in a name (a NUL would cut it short)");
    DCR_REQUIRE(file.find('/') == std::string::npos && file != ".." && !file.empty(), Code::invalid_argument,
                "'" + path + "': tensor '" + item.key() + "' names shard '" + file + "' outside the checkpoint");
    (*weight_map)[item.key()] = file;
  }
  DCR_REQUIRE(!weight_map->empty(), Code::invalid_argument, "'" + path + "' names no tensors");
  return Status::ok();
}

// The Rss of the mapping that starts at `start`, from /proc/self/smaps.
uint64_t mapping_rss(const void* start) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t want = reinterpret_cast<uintptr_t>(start);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    const size_t dash = line.find('-');
    if (dash != std::string::npos && dash < 17 && line.find(' ') > dash) {
      inside = std::strtoull(line.substr(0, dash).c_str(), nullptr, 16) == want;
      continue;
    }
    if (inside && line.rfind("Rss:", 0) == 0) return std::strtoull(line.c_str() + 4, nullptr, 10) * 1024;
  }
  return 0;
}

// Whether a glob match is a directory (after symlinks). A match that leads nowhere is refused: the
// caller numbers checkpoints by their place in the list.
Status look_at_match(const std::string& path, bool* directory) {
  struct stat st {};
  *directory = false;
  if (::stat(path.c_str(), &st) == 0) {
    *directory = S_ISDIR(st.st_mode);
    return Status::ok();
  }
  const int error = errno;
  const std::string shift = "; it is not skipped, as every later checkpoint's version would shift down by one";
  DCR_REQUIRE(error != ELOOP, Code::invalid_argument, "'" + path + "' is a symlink loop" + shift);
  struct stat link {};
  if (error == ENOENT && ::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    std::string target(4096, '\0');
    const ssize_t n = ::readlink(path.c_str(), target.data(), target.size());
    target.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return Status(Code::invalid_argument,
                  "'" + path + "' is a dangling symlink (to '" + printable(target) + "', which does not exist)" + shift);
  }
  if (error == ENOENT) return Status::ok();  // removed since glob listed it: not there
  return Status(Code::io_error, "cannot look at '" + path + "': " + std::strerror(error));
}

}  // namespace

HfCheckpoint::~HfCheckpoint() = default;

Status HfCheckpoint::map_file(const std::string& name, size_t* index) {
  std::unique_ptr<MappedFile> file;
  DCR_TRY(MappedFile::open(dir_ + "/" + name, &file));
  file->advise_random();  // read only the pages touched
  files_.push_back(std::move(file));
  *index = files_.size() - 1;
  return Status::ok();
}

Status HfCheckpoint::open(const std::string& dir, std::unique_ptr<HfCheckpoint>* out) {
  std::unique_ptr<HfCheckpoint> c(new HfCheckpoint());
  c->dir_ = dir;
  DCR_TRY(read_json_file(dir + "/" + kConfig, &c->config_).with_context("checkpoint '" + dir + "'"));
  std::map<std::string, std::string> weight_map;  // empty: one model.safetensors
  const std::string index_path = dir + "/" + kIndex;
  if (exists(index_path)) DCR_TRY(read_index(index_path, &weight_map).with_context("checkpoint '" + dir + "'"));
  std::set<std::string> files;
  for (const auto& item : weight_map) files.insert(item.second);
  if (weight_map.empty()) files.insert(kSingle);
  std::set<std::string> seen;
  for (const std::string& file : files) {  // shard files in name order, tensors in offset order
    const std::string path = dir + "/" + file;
    DCR_REQUIRE(exists(path), Code::not_found,
                "checkpoint '" + dir + "': shard file '" + file + "'" + (weight_map.empty() ? "" : " named by " + std::string(kIndex)) +
                    " does not exist");
    size_t mapping = 0;  // mapped before the header is read: check_unchanged() then covers the header too
    DCR_TRY(c->map_file(file, &mapping));
    std::vector<SafetensorsEntry> entries;
    const Status header = read_safetensors_header(path, &entries);
    if (!header.is_ok()) DCR_TRY(c->check_unchanged());  // a header torn by a writer is not damage
    DCR_TRY(header);
    const uint64_t mapped = c->files_[mapping]->size();
    for (SafetensorsEntry& e : entries) {
      const std::string& name = e.desc.name;
      DCR_REQUIRE(e.end <= mapped, Code::io_error,
                  "checkpoint file '" + path + "' changed while it was being read (its header places tensor '" + name +
                      "' up to byte " + std::to_string(e.end) + ", the file mapped before had " + std::to_string(mapped) + ")");
      if (!weight_map.empty()) {
        const auto it = weight_map.find(name);
        DCR_REQUIRE(it != weight_map.end() && it->second == file, Code::corrupt,
                    "checkpoint '" + dir + "': shard '" + file + "' holds tensor '" + name + "', which " + kIndex +
                        (it == weight_map.end() ? " does not name" : " places in '" + it->second + "'"));
      }
      DCR_REQUIRE(seen.insert(name).second, Code::corrupt,
                  "checkpoint '" + dir + "': tensor '" + name + "' appears twice (again in '" + file + "')");
      c->bytes_.push_back(c->files_[mapping]->data() + e.begin);
      c->manifest_.tensors.push_back(std::move(e.desc));
    }
  }
  for (const auto& item : weight_map) {
    DCR_REQUIRE(seen.count(item.first), Code::corrupt,
                "checkpoint '" + dir + "': " + kIndex + " places tensor '" + item.first + "' in shard '" + item.second +
                    "', which does not hold it");
  }
  DCR_TRY(c->manifest_.validate().with_context("checkpoint '" + dir + "'"));
  DCR_TRY(c->check_unchanged());  // the headers read are those of the files mapped
  *out = std::move(c);
  return Status::ok();
}

uint64_t HfCheckpoint::resident_bytes() const {
  uint64_t total = 0;
  for (const std::unique_ptr<MappedFile>& f : files_) total += f->data() ? mapping_rss(f->data()) : 0;
  return total;
}

Status HfCheckpoint::check_unchanged() const {
  for (const std::unique_ptr<MappedFile>& f : files_) {
    const Status st = f->check_unchanged();
    if (!st.is_ok()) return Status(st.code(), "checkpoint file " + st.message());
  }
  return Status::ok();
}

bool hf_checkpoint_complete(const std::string& dir) {
  return exists(dir + "/" + kConfig) && (exists(dir + "/" + kIndex) || exists(dir + "/" + kSingle));
}

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i1 = i, j1 = j;
      while (i1 < a.size() && std::isdigit(static_cast<unsigned char>(a[i1]))) ++i1;
      while (j1 < b.size() && std::isdigit(static_cast<unsigned char>(b[j1]))) ++j1;
      const std::string x = a.substr(i, i1 - i), y = b.substr(j, j1 - j);
      const std::string xs = x.substr(std::min(x.find_first_not_of('0'), x.size()));
      const std::string ys = y.substr(std::min(y.find_first_not_of('0'), y.size()));
      if (xs.size() != ys.size()) return xs.size() < ys.size();
      if (xs != ys) return xs < ys;
      i = i1;
      j = j1;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

Status list_checkpoints(const std::string& pattern, std::vector<std::string>* dirs) {
  std::string trimmed = pattern;  // glob drops what is not a directory from "dir/*/" unasked
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  glob_t g{};
  const int rc = glob(trimmed.c_str(), 0, nullptr, &g);
  std::vector<std::string> matches(g.gl_pathv, g.gl_pathv + (rc == 0 ? g.gl_pathc : 0));
  globfree(&g);
  dirs->clear();
  for (const std::string& m : matches) {
    bool directory = false;
    DCR_TRY(look_at_match(m, &directory));
    if (directory) dirs->push_back(m);
  }
  DCR_REQUIRE(!dirs->empty(), Code::not_found, "no checkpoint directory matches '" + pattern + "'");
  std::sort(dirs->begin(), dirs->end(), natural_less);
  return Status::ok();
}

std::string manifest_difference(const Manifest& before, const Manifest& after) {
  std::map<std::string, const TensorDesc*> old;
  for (const TensorDesc& t : before.tensors) old[t.name] = &t;
  for (const TensorDesc& t : after.tensors) {
    const auto it = old.find(t.name);
    if (it == old.end()) return "tensor '" + t.name + "' is new";
    const TensorDesc& o = *it->second;
    if (o.dtype != t.dtype) return "tensor '" + t.name + "' changed dtype from " + dtype_name(o.dtype) + " to " + dtype_name(t.dtype);
    if (o.shape != t.shape) {
      return "tensor '" + t.name + "' changed shape from " + shape_text(o.shape) + " to " + shape_text(t.shape);
    }
    old.erase(it);
  }
  if (!old.empty()) return "tensor '" + old.begin()->first + "' is gone";
  return "";
}

}  // namespace dcr
