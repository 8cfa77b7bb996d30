#include "dcr/core/hash.h"

#include <xxhash.h>

namespace dcr {

uint64_t hash64(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

struct Hasher::State {
  XXH3_state_t* xxh = XXH3_createState();
  ~State() { XXH3_freeState(xxh); }
};

Hasher::Hasher() : state_(new State) { reset(); }
Hasher::~Hasher() = default;
void Hasher::reset() { XXH3_64bits_reset(state_->xxh); }
void Hasher::update(const void* data, size_t bytes) { XXH3_64bits_update(state_->xxh, data, bytes); }
uint64_t Hasher::digest() const { return XXH3_64bits_digest(state_->xxh); }

}  // namespace dcr
