// Internal to the codec: the 32-state rANS coder, states 0-15 and 16-31 in two AVX-512 registers
// (two independent dependency chains). Both loops write and read exactly what the scalar loops in
// rans_encode.cc and rans_decode.cc do (tests compare them); call them only where simd_level() is
// SimdLevel::avx512 or above (elsewhere they do nothing and return 0).
#pragma once

#include <cstddef>
#include <cstdint>

#include "dcr/codec/rans.h"

namespace dcr {

constexpr uint32_t kRansLow = 1u << 15;  // lower bound of a normalised state

// Encodes groups [0, groups) of 32 symbols, last group first, moving `ptr` down over the words.
void rans_encode_groups_avx512(const uint8_t* symbols, size_t groups, const RansTable& table, uint32_t* states,
                               uint8_t*& ptr);
// The same, symbol i by tables[buckets[i]] (rans_encode_buckets).
void rans_encode_bucket_groups_avx512(const uint8_t* symbols, const uint8_t* buckets, size_t groups,
                                      const RansTable* tables, unsigned table_count, uint32_t* states, uint8_t*& ptr);

// The decoder's slot table (kRansProbScale entries of rans_slot), sixteen slots per store.
void rans_fill_slots_avx512(const RansTable& table, RansSlot* lookup);

// Decodes whole groups of 32 while 64 bytes of code remain; returns the symbols decoded. With
// `buckets`, symbol i takes the slot table of buckets[i] (RansDecoder::start_buckets' layout).
size_t rans_decode_groups_avx512(const uint8_t* code, size_t code_bytes, const RansSlot* lookup,
                                 const uint8_t* buckets, size_t count, uint32_t* states, size_t& pos,
                                 uint8_t* symbols);

}  // namespace dcr
