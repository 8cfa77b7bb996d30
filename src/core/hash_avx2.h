// Internal: the AVX2 build of XXH3 (src/core/hash_avx2.cc is compiled with -mavx2); call only
// where the CPU supports AVX2.
#pragma once

#include <cstddef>
#include <cstdint>

#include <xxhash.h>

namespace dcr {

uint64_t hash64_avx2(const void* data, size_t bytes);
void hash_update_avx2(XXH3_state_t* state, const void* data, size_t bytes);

}  // namespace dcr
