#define XXH_INLINE_ALL
#include <xxhash.h>

#include "src/core/hash_avx2.h"

namespace dcr {

uint64_t hash64_avx2(const void* data, size_t bytes) { return XXH3_64bits(data, bytes); }

void hash_update_avx2(XXH3_state_t* state, const void* data, size_t bytes) {
  XXH3_64bits_update(state, data, bytes);
}

}  // namespace dcr
