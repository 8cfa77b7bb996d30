// Internal to the codec: the function attributes of the vector loops, one per SimdLevel of
// dcr/codec/simd.h, and the intrinsics they use. A function carrying one may run only where
// simd_level() is at that level or above.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics pass a deliberately undefined merge operand, which -Wuninitialized
// reports at every call (GCC bug 105593); the files that include this header silence it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define DCR_AVX2 __attribute__((target("avx2,bmi,bmi2")))
#define DCR_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512cd,popcnt")))
#define DCR_AVX512_VBMI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512cd,avx512vbmi,avx512vbmi2,popcnt")))

namespace dcr::avx512 {

// Sixteen 32-bit loads at base + Scale * index, as two 8-lane gathers: faster than one 16-lane
// gather on the Zen 4 this was measured on.
template <int Scale>
DCR_AVX512 inline __m512i gather32(const void* base, __m512i index) {
  const int* p = static_cast<const int*>(base);
  const __m256i low = _mm256_i32gather_epi32(p, _mm512_castsi512_si256(index), Scale);
  const __m256i high = _mm256_i32gather_epi32(p, _mm512_extracti64x4_epi64(index, 1), Scale);
  return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
}

}  // namespace dcr::avx512
#endif
