#include "dcr/core/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "src/core/hash_avx2.h"

namespace dcr {

// XXH3 is compiled into dcr (not taken from the shared library, which is built for plain x86-64
// and runs at a third of the speed) twice: here for the baseline ISA and in hash_avx2.cc for AVX2,
// chosen once at run time. Both produce the same values; the streaming state is the same struct.
namespace {
bool use_avx2() {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}
}  // namespace

uint64_t hash64(const void* data, size_t bytes) {
#if defined(__x86_64__)
  if (use_avx2()) return hash64_avx2(data, bytes);
#endif
  return XXH3_64bits(data, bytes);
}

struct Hasher::State {
  XXH3_state_t xxh;
};

Hasher::Hasher() : state_(new State) { reset(); }
Hasher::~Hasher() = default;
void Hasher::reset() { XXH3_64bits_reset(&state_->xxh); }

void Hasher::update(const void* data, size_t bytes) {
#if defined(__x86_64__)
  if (use_avx2()) {
    hash_update_avx2(&state_->xxh, data, bytes);
    return;
  }
#endif
  XXH3_64bits_update(&state_->xxh, data, bytes);
}

uint64_t Hasher::digest() const { return XXH3_64bits_digest(&state_->xxh); }

std::string hex16(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) text[static_cast<size_t>(i)] = digits[value & 15];
  return text;
}

bool parse_hex16(const std::string& text, uint64_t* value) {
  if (text.size() != 16) return false;
  uint64_t v = 0;
  for (char c : text) {
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return false;
    v = v << 4 | static_cast<uint64_t>(digit);
  }
  *value = v;
  return true;
}

}  // namespace dcr
