// The CPU reference of the element-wise stages: find changed positions, turn them into words of a
// value mode, and scatter words back in place. The CUDA kernels in cuda/ must match these bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dcr/codec/value_mode.h"

namespace dcr {

// Loads/stores one little-endian element of `width` bytes (1, 2, 4 or 8) as an unsigned word.
uint64_t load_word(const void* data, uint64_t index, unsigned width);
void store_word(void* data, uint64_t index, unsigned width, uint64_t word);

// Writes the ascending indices i < count where base and target differ to `positions` (room for
// `count` entries) and returns how many there are. Vectorised where the CPU allows.
uint64_t scan_changes(const void* base, const void* target, uint64_t count, unsigned width,
                      uint32_t* positions);

// words[j] = encode_word(mode, base[positions[j]], target[positions[j]]).
void gather_words(const void* base, const void* target, unsigned width, ValueMode mode,
                  const uint32_t* positions, uint64_t changed, uint64_t* words);

// dst[positions[j]] = apply_word(mode, dst[positions[j]], words[j]); the replaced bits are written
// back into words[j] so that scatter_swap with ValueMode::overwrite undoes the apply exactly.
void scatter_swap(void* dst, unsigned width, ValueMode mode, const uint32_t* positions,
                  uint64_t changed, uint64_t* words);

}  // namespace dcr
