// Which vector instructions the codec's hot loops use. Every vectorised loop has a portable twin
// that produces the same bytes; tests lower the level to compare them.
#pragma once

namespace dcr {

// avx512: F, BW, VL and CD (Skylake-X and later); avx512_vbmi: also VBMI and VBMI2, byte permutes
// and 16-bit compresses (Ice Lake, Zen 4 and later).
enum class SimdLevel { scalar = 0, avx2 = 1, avx512 = 2, avx512_vbmi = 3 };

// The best level this CPU runs, capped by limit_simd.
SimdLevel simd_level();

// Caps simd_level() for the whole process (tests and benchmarks); SimdLevel::avx512_vbmi lifts the cap.
void limit_simd(SimdLevel max);

}  // namespace dcr
