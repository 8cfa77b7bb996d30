// Internal to the codec: the scan kernels shared by the plain scan (scan.cc) and the scan that also
// hashes what it reads (scan_hash.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "src/codec/common/simd_x86.h"

namespace dcr {

// The ascending indices in [begin, end) where base and target differ, appended at positions[changed].
inline uint64_t scan_scalar(const uint8_t* base, const uint8_t* target, uint64_t begin, uint64_t end,
                            unsigned width, uint32_t* positions, uint64_t changed) {
  for (uint64_t i = begin; i < end; ++i) {
    if (std::memcmp(base + i * width, target + i * width, width) != 0) {
      positions[changed++] = static_cast<uint32_t>(i);
    }
  }
  return changed;
}

#if defined(__x86_64__)
// AVX-512: one compare of 64 bytes gives one mask bit per element.
template <unsigned W>
DCR_AVX512 uint64_t change_mask(const uint8_t* b, const uint8_t* t) {
  const __m512i x = _mm512_loadu_si512(b), y = _mm512_loadu_si512(t);
  if (W == 1) return _mm512_cmpneq_epi8_mask(x, y);
  if (W == 2) return _mm512_cmpneq_epi16_mask(x, y);
  if (W == 4) return _mm512_cmpneq_epi32_mask(x, y);
  return _mm512_cmpneq_epi64_mask(x, y);
}

// A chunk hook that does nothing.
struct NoChunkHook {
  DCR_AVX512 void operator()(uint64_t, __m512i, __m512i, __mmask32, uint64_t) {}
  void positions_final(uint64_t) {}
};

// The 16-bit lanes of `v` under `mask`, in order, stored at `out` as a whole register: its first 8
// lanes, and the rest only when there are more (the output has room for 32). Most chunks of a sparse
// delta hold at most 8 changes, and a 16-byte store crosses a cache line far less often than a
// 64-byte one.
DCR_AVX512_VBMI inline void store_compressed(uint16_t* out, __mmask32 mask, __m512i v) {
  const __m512i packed = _mm512_maskz_compress_epi16(mask, v);
  if (__builtin_popcount(mask) <= 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_castsi512_si128(packed));
  } else {
    _mm512_storeu_si512(out, packed);
  }
}

// How far ahead the 2-byte scan asks for both copies' lines. The hardware streams one copy well
// but two read together (with the scan's stores between) less so; asking 256 bytes ahead made the
// fused scan faster from memory in timing loops outside the repository (1024 and 4096 bytes were
// no better). The bench shows it only within this machine's noise.
constexpr uint64_t kScanPrefetchBytes = 256;

// The elements of one run of the 2-byte scan: their positions are staged as 16-bit offsets, then
// widened (and become final, hook.positions_final) at the run's end.
constexpr uint64_t kScanStageElements = 4096;

// 2-byte elements with AVX512-VBMI2: the 32 mask bits of a chunk compress 16-bit offsets in one
// instruction and one store (half the work of two 16-lane compresses), staged per run of
// kScanStageElements and widened to positions afterwards. hook(c, base chunk, target chunk, mask, j)
// sees every whole 64-byte chunk c (counted from element 0) in order, in the registers the compare
// read, with the chunk's change mask and the index j its first change takes in `positions`;
// hook.positions_final(n) learns when positions[0, n) are written.
template <class Hook>
DCR_AVX512_VBMI uint64_t scan_w2_vbmi2(const uint8_t* base, const uint8_t* target, uint64_t begin, uint64_t end,
                                       uint32_t* positions, Hook& hook) {
  const uint64_t first_chunk = (begin + 31) / 32, chunks = end / 32;
  if (first_chunk >= chunks) return scan_scalar(base, target, begin, end, 2, positions, 0);
  uint64_t changed = scan_scalar(base, target, begin, first_chunk * 32, 2, positions, 0);
  alignas(64) uint16_t stage[kScanStageElements + 32];
  for (uint64_t run = first_chunk; run < chunks; run += kScanStageElements / 32) {
    const uint64_t run_end = std::min(chunks, run + kScanStageElements / 32);
    __m512i offsets = _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13,
                                       12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    uint64_t staged = 0;
    for (uint64_t c = run; c < run_end; ++c) {
      _mm_prefetch(reinterpret_cast<const char*>(base + c * 64 + kScanPrefetchBytes), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(target + c * 64 + kScanPrefetchBytes), _MM_HINT_T0);
      const __m512i x = _mm512_loadu_si512(base + c * 64), y = _mm512_loadu_si512(target + c * 64);
      const __mmask32 mask = _mm512_cmpneq_epi16_mask(x, y);
      hook(c, x, y, mask, changed + staged);
      store_compressed(stage + staged, mask, offsets);
      staged += static_cast<uint64_t>(__builtin_popcount(mask));
      offsets = _mm512_add_epi16(offsets, _mm512_set1_epi16(32));
    }
    const __m512i first = _mm512_set1_epi32(static_cast<int>(run * 32));
    for (uint64_t j = 0; j < staged; j += 16) {  // whole registers: positions has kScanSlack spare entries
      const __m512i wide = _mm512_cvtepu16_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(stage + j)));
      _mm512_storeu_si512(positions + changed + j, _mm512_add_epi32(wide, first));
    }
    changed += staged;
    hook.positions_final(changed);
  }
  return scan_scalar(base, target, chunks * 32, end, 2, positions, changed);
}
#endif

}  // namespace dcr
