// Deterministic test data: base arrays and targets that differ in chosen ways.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "dcr/codec/scan.h"

namespace dcr::test {

inline std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(rng());
  return out;
}

// Copy of `base` (count elements of `width` bytes) with about `fraction` of the elements moved by
// small steps in their sign-magnitude order (what optimizer steps do to floats); when `wild` is set
// the new values are random bit patterns instead.
inline std::vector<uint8_t> perturb(const std::vector<uint8_t>& base, unsigned width, double fraction,
                                    uint64_t seed, bool wild = false) {
  std::vector<uint8_t> target = base;
  const uint64_t count = base.size() / width;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  for (uint64_t i = 0; i < count; ++i) {
    if (coin(rng) >= fraction) continue;
    const uint64_t old_bits = load_word(base.data(), i, width);
    uint64_t new_bits;
    if (wild) {
      new_bits = rng() & width_mask(width);
    } else {
      const uint64_t step = 1 + (rng() % 3);
      const uint64_t key = sm_key(old_bits, width) + ((rng() & 1) ? step : width_mask(width) + 1 - step);
      new_bits = sm_unkey(key & width_mask(width), width);
    }
    if (new_bits == old_bits) new_bits ^= 1;
    store_word(target.data(), i, width, new_bits);
  }
  return target;
}

}  // namespace dcr::test

#include "dcr/core/region.h"
#include "dcr/core/tensor.h"

namespace dcr::test {

// A model's canonical bits at `version`: random at version 1 (tensor t from seed + t), each later
// version v a 3% step on the one before (seed 10 * seed * v + t).
inline std::vector<std::vector<uint8_t>> versioned_model(const Manifest& m, uint64_t version, uint64_t seed) {
  std::vector<std::vector<uint8_t>> bits;
  for (uint32_t t = 0; t < m.tensors.size(); ++t) {
    const unsigned width = static_cast<unsigned>(m.tensors[t].width());
    bits.push_back(random_bytes(m.tensors[t].nbytes(), seed + t));
    for (uint64_t v = 2; v <= version; ++v) bits.back() = perturb(bits.back(), width, 0.03, 10 * seed * v + t);
  }
  return bits;
}

// `count` elements of one tensor row starting at column `col0`, stored densely at `data`.
inline Region flat(uint32_t tensor, const void* data, uint64_t count, unsigned width, uint64_t col0 = 0) {
  return dense_region(Box{tensor, 0, 1, col0, count}, width, data);
}

}  // namespace dcr::test
