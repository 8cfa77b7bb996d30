// Internal to the codec: the AVX-512 twin of scatter_swap for 2-byte elements (gather_scatter.cc is
// the reference; tests compare them).
#pragma once

#include <cstdint>

#include "dcr/codec/value_mode.h"

namespace dcr {

// scatter_swap over whole groups of 16 changes, in order, stopping before a group with the last
// element of `dst` (each lane reads its element and the next one as one 32-bit word).
// Returns the changes done; on CPUs without AVX-512 it does nothing.
uint64_t scatter_swap_avx512_w2(uint8_t* dst, uint64_t elements, ValueMode mode, const uint32_t* positions,
                                uint64_t changed, uint64_t* words);

}  // namespace dcr
