// The CPU reference of the element-wise stages: find changed positions, turn them into words of a
// value mode, and scatter words back in place. The CUDA kernels in cuda/ must match these bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dcr/codec/value_mode.h"

namespace dcr {

// Loads/stores one little-endian element of `width` bytes (1, 2, 4 or 8) as an unsigned word.
inline uint64_t load_word(const void* data, uint64_t index, unsigned width) {
  const uint8_t* p = static_cast<const uint8_t*>(data) + index * width;
  switch (width) {
    case 1: return *p;
    case 2: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: { uint64_t v; std::memcpy(&v, p, 8); return v; }
  }
}

inline void store_word(void* data, uint64_t index, unsigned width, uint64_t word) {
  uint8_t* p = static_cast<uint8_t*>(data) + index * width;
  switch (width) {
    case 1: *p = static_cast<uint8_t>(word); break;
    case 2: { const uint16_t v = static_cast<uint16_t>(word); std::memcpy(p, &v, 2); break; }
    case 4: { const uint32_t v = static_cast<uint32_t>(word); std::memcpy(p, &v, 4); break; }
    default: std::memcpy(p, &word, 8); break;
  }
}

// Spare entries a positions buffer needs past `count`: vectorised scans store whole registers.
constexpr uint64_t kScanSlack = 16;

// Writes the ascending indices i < count where base and target differ to `positions` (room for
// `count + kScanSlack` entries) and returns how many there are. Vectorised where the CPU allows.
uint64_t scan_changes(const void* base, const void* target, uint64_t count, unsigned width,
                      uint32_t* positions);

// The same over elements [begin, end) only (indices stay relative to base/target), so callers can
// interleave the scan with other passes over cache-sized blocks.
uint64_t scan_changes_in(const void* base, const void* target, uint64_t begin, uint64_t end,
                         unsigned width, uint32_t* positions);

// words[j] = encode_word(mode, base[positions[j]], target[positions[j]]).
void gather_words(const void* base, const void* target, unsigned width, ValueMode mode,
                  const uint32_t* positions, uint64_t changed, uint64_t* words);

// dst[positions[j]] = apply_word(mode, dst[positions[j]], words[j]); the replaced bits are written
// back into words[j] so that scatter_swap with ValueMode::overwrite undoes the apply exactly.
// `elements` is the length of dst: vectorised loops read and write whole neighbours inside it.
void scatter_swap(void* dst, uint64_t elements, unsigned width, ValueMode mode, const uint32_t* positions,
                  uint64_t changed, uint64_t* words);

}  // namespace dcr
