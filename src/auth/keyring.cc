#include "dcr/auth/keyring.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

namespace dcr {

namespace {

constexpr uint64_t kMaxKeyFileBytes = 1 << 20;

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

bool parse_hex(const std::string& hex, std::array<uint8_t, kKeyBytes>* out) {
  if (hex.size() != 2 * kKeyBytes) return false;
  for (size_t i = 0; i < kKeyBytes; ++i) {
    unsigned v = 0;
    if (std::sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1 || !std::isxdigit(hex[2 * i]) || !std::isxdigit(hex[2 * i + 1]))
      return false;
    (*out)[i] = static_cast<uint8_t>(v);
  }
  return true;
}

Status parse_line(const std::string& path, int number, const std::string& line, Key* key, bool* has) {
  std::istringstream in(line);
  std::string tag, id, hex, extra;
  in >> tag;
  *has = !tag.empty() && tag[0] != '#';
  if (!*has) return Status::ok();
  in >> id >> hex >> extra;
  const bool digits = !id.empty() && id.size() <= 9 && id.find_first_not_of("0123456789") == std::string::npos;
  DCR_REQUIRE(tag == "dcr-key" && digits && extra.empty() && parse_hex(hex, &key->bytes) && std::stoul(id) > 0,
              Code::invalid_argument,
              "key file '" + path + "' line " + std::to_string(number) +
                  " is not 'dcr-key ID HEX' (ID a positive integer, HEX 64 hex digits)");
  key->id = static_cast<uint32_t>(std::stoul(id));
  return Status::ok();
}

}  // namespace

Status Keyring::load(const std::string& path, Keyring* out) {
  struct stat st {};
  DCR_REQUIRE(::stat(path.c_str(), &st) == 0, Code::not_found, "key file '" + path + "' not found");
  DCR_REQUIRE(S_ISREG(st.st_mode), Code::invalid_argument, "key file '" + path + "' is not a regular file");
  DCR_REQUIRE((st.st_mode & 077) == 0, Code::invalid_argument,
              "key file '" + path + "' may be read or written by group or others (mode " + mode_text(st.st_mode) +
                  "); make it readable by its owner only: chmod 600 '" + path + "'");
  DCR_REQUIRE(static_cast<uint64_t>(st.st_size) <= kMaxKeyFileBytes, Code::invalid_argument,
              "key file '" + path + "' is larger than 1 MiB");
  std::ifstream in(path);
  DCR_REQUIRE(in.good(), Code::io_error, "cannot read key file '" + path + "'");
  Keyring ring;
  ring.path_ = path;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    Key key;
    bool has = false;
    DCR_TRY(parse_line(path, number, line, &key, &has));
    if (!has) continue;
    DCR_REQUIRE(ring.find(key.id) == nullptr, Code::invalid_argument,
                "key file '" + path + "' holds key id " + std::to_string(key.id) + " twice");
    ring.keys_.push_back(key);
  }
  DCR_REQUIRE(!ring.keys_.empty(), Code::invalid_argument, "key file '" + path + "' holds no key");
  *out = std::move(ring);
  return Status::ok();
}

Status Keyring::generate(const std::string& path, uint32_t* id) {
  Keyring ring;
  const bool exists = ::access(path.c_str(), F_OK) == 0;
  if (exists) DCR_TRY(load(path, &ring));
  Key key;
  for (const Key& k : ring.keys_) key.id = std::max(key.id, k.id);
  key.id += 1;
  DCR_REQUIRE(RAND_bytes(key.bytes.data(), static_cast<int>(key.bytes.size())) == 1, Code::internal,
              "OpenSSL could not generate a random key");
  std::string line = "dcr-key " + std::to_string(key.id) + " ";
  for (uint8_t b : key.bytes) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02x", b);
    line += hex;
  }
  line += "\n";
  if (!exists) line = "# dcr job keys: the last line seals, every line opens (dcr keygen appends)\n" + line;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | (exists ? 0 : O_EXCL), 0600);
  DCR_REQUIRE(fd >= 0, Code::io_error, "cannot write key file '" + path + "'");
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && ::fsync(fd) == 0;
  ::close(fd);
  DCR_REQUIRE(written, Code::io_error, "writing key file '" + path + "' failed");
  *id = key.id;
  return Status::ok();
}

Keyring Keyring::of(std::vector<Key> keys) {
  Keyring ring;
  ring.keys_ = std::move(keys);
  return ring;
}

Keyring Keyring::for_publication(const std::string& id) const {
  Keyring ring = *this;
  ring.publication_ = id;
  return ring;
}

std::string new_publication_id() {
  uint8_t bytes[16] = {};
  if (RAND_bytes(bytes, sizeof bytes) != 1) {  // never expected; the clock and pid still tell runs apart
    const uint64_t words[2] = {static_cast<uint64_t>(::getpid()), static_cast<uint64_t>(std::time(nullptr))};
    std::memcpy(bytes, words, sizeof bytes);
  }
  std::string id;
  for (uint8_t b : bytes) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", b);
    id += two;
  }
  return id;
}

const Key* Keyring::find(uint32_t id) const {
  for (const Key& k : keys_) {
    if (k.id == id) return &k;
  }
  return nullptr;
}

}  // namespace dcr
