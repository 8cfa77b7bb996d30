// The job's keys: a key file of "dcr-key ID HEX" lines (32-byte keys, '#' comments), readable by its
// owner only, as munge's key is. The newest key (the last line) seals; every key in the file opens,
// so a job rotates keys between versions by appending the new key on every node, then dropping the
// old one once no frame under it is needed (the spool's catch-up window).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

constexpr size_t kKeyBytes = 32;

struct Key {
  uint32_t id = 0;
  std::array<uint8_t, kKeyBytes> bytes{};
};

class Keyring {
 public:
  // Reads `path`. invalid_argument for a file that group or others may read or write, that is not a
  // regular file, that holds no key, a malformed line (named by number), or a key id twice;
  // not_found when missing.
  static Status load(const std::string& path, Keyring* out);
  // Writes a new random key to `path`: a new file (0600) with key id 1, or, when the file exists
  // (and passes load), the same file with a key of the next id appended. Sets *id.
  static Status generate(const std::string& path, uint32_t* id);
  // A ring holding just these keys (tests, callers without a file).
  static Keyring of(std::vector<Key> keys);

  // The ring for one publication (two jobs joined by a store): the keys for every use are derived
  // with its id, so a frame or manifest sealed for one publication never opens in another under
  // the same job key (docs/frame-format.md, "Seal"). "" (the default): a one-job refit.
  Keyring for_publication(const std::string& id) const;
  const std::string& publication() const { return publication_; }

  const Key& sealing() const { return keys_.back(); }
  const Key* find(uint32_t id) const;
  const std::vector<Key>& keys() const { return keys_; }
  std::string path() const { return path_; }

 private:
  std::vector<Key> keys_;
  std::string path_;
  std::string publication_;
};

// A new publication's id: 128 random bits as 32 hex digits.
std::string new_publication_id();

}  // namespace dcr
