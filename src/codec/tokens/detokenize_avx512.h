// Internal to the codec: AVX-512 twins of the scalar token-pair decoding in token_reader.h, sixteen
// tokens at a time (symbols below 128, extra bits fetched per lane and prefix-summed). Each decodes
// the longest prefix of whole groups it can prove valid and stops before the first group it cannot
// (a symbol of 128 or more, a gap or word out of range, extra bits too close to the stream's end);
// the scalar loop goes on from there and reports any error, so both paths accept and refuse the
// same frames. On CPUs without AVX-512 they decode nothing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dcr {

struct TokenPair {
  const uint8_t* symbols;
  const uint8_t* extras;
  size_t extra_bytes;
};

// Gap tokens into positions below `count`; *next is the position after the previous change and
// *bit_pos the extra bits consumed, both updated. Returns the tokens decoded.
uint64_t decode_gaps_avx512(const TokenPair& tokens, uint64_t n, uint64_t count, uint64_t* next, uint64_t* bit_pos,
                            uint32_t* positions);

// Value tokens into words of `width` (1, 2 or 4) bytes; *bit_pos as above. Returns the tokens decoded.
uint64_t decode_words_avx512(const TokenPair& tokens, uint64_t n, unsigned width, uint64_t* bit_pos, uint64_t* words);

}  // namespace dcr
