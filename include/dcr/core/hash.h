// 64-bit content hashes (XXH3) of byte ranges; the one hash used for frames, manifests and journals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace dcr {

uint64_t hash64(const void* data, size_t bytes);

// A hash as text: 16 lowercase hex digits; and back (false for anything else).
std::string hex16(uint64_t value);
bool parse_hex16(const std::string& text, uint64_t* value);

// Incremental form of hash64: feeding the same bytes in any split gives the same value.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  void reset();
  void update(const void* data, size_t bytes);
  uint64_t digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dcr
