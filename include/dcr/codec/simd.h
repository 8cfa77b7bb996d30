// Which vector instructions the codec's hot loops use. Every vectorised loop has a portable twin
// that produces the same bytes; tests lower the level to compare them.
#pragma once

namespace dcr {

enum class SimdLevel { scalar = 0, avx2 = 1, avx512 = 2 };

// The best level this CPU runs (AVX-512 needs F, BW, VL and CD), capped by limit_simd.
SimdLevel simd_level();

// Whether the AVX-512 level also has VBMI2 (16- and 8-bit compress), for loops that use it.
bool simd_has_vbmi2();

// Caps simd_level() for the whole process (tests and benchmarks); SimdLevel::avx512 lifts the cap.
void limit_simd(SimdLevel max);

}  // namespace dcr
