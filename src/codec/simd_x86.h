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
#endif
