#include "src/codec/scan/scan_hash.h"

#include <algorithm>
#include <cstring>

#include "dcr/codec/simd.h"
#include "src/codec/scan/scan_kernels.h"
#include "src/codec/tokens/tokenize_avx512.h"
#include "src/codec/values/value_mode_avx512.h"

// XXH3's own scrambler and last-stripe step, compiled here for AVX-512 next to its portable build;
// the stripe step (SplitAcc below) and the loop that drives them follow XXH3's long-input loop. Its
// internal names are those of 0.8.
#define XXH_INLINE_ALL
#define XXH_DISPATCH_AVX512 1
#define XXH_ACC_ALIGN 64  // as XXH3's own x86 dispatch build sets it
#define XXH_TARGET_AVX512 __attribute__((__target__("avx512f")))
#include <xxhash.h>
static_assert(XXH_VERSION_MAJOR == 0 && XXH_VERSION_MINOR == 8, "StripeHash follows XXH3 0.8's long-input loop");

namespace dcr {

namespace {
constexpr uint64_t kStripesPerBlock = (XXH_SECRET_DEFAULT_SIZE - XXH_STRIPE_LEN) / XXH_SECRET_CONSUME_RATE;
constexpr uint64_t kShortest = XXH3_MIDSIZE_MAX + 1;  // shorter inputs take XXH3's short-input paths
static_assert(kShortest == StripeHash::kLongInput, "XXH3's short-input paths end at 240 bytes");
}  // namespace

void StripeHash::start(uint64_t length) {
  static const uint64_t kInit[8] = XXH3_INIT_ACC;
  std::copy(kInit, kInit + 8, acc_);
  length_ = length;
  stripes_ = length >= kShortest ? (length - 1) / XXH_STRIPE_LEN : 0;
  blocks_ = length >= kShortest ? (length - 1) / (XXH_STRIPE_LEN * kStripesPerBlock) : 0;
}

uint64_t StripeHash::finish(const uint8_t* buffer) const {
  if (length_ < kShortest) return XXH3_64bits(buffer, length_);
  return finish_long(buffer + length_ - XXH_STRIPE_LEN);
}

uint64_t StripeHash::finish_long(const uint8_t* last_stripe) const {
  alignas(64) uint64_t acc[8];
  std::copy(acc_, acc_ + 8, acc);
  XXH3_accumulate_512(acc, last_stripe,
                      XXH3_kSecret + XXH_SECRET_DEFAULT_SIZE - XXH_STRIPE_LEN - XXH_SECRET_LASTACC_START);
  return XXH3_mergeAccs(acc, XXH3_kSecret + XXH_SECRET_MERGEACCS_START, length_ * XXH_PRIME64_1);
}

bool feed_available() { return simd_level() >= SimdLevel::avx512; }

#if defined(__x86_64__)
// XXH3's accumulator split in two, so that a stripe costs no shuffle: the sum of the products, and
// the plain sum of the stripes, whose 64-bit halves XXH3 swaps before adding. Addition commutes with
// the swap, so swapping the sum once, before each scramble and at the end, gives XXH3's lanes.
struct SplitAcc {
  __m512i product;
  __m512i data;
};

DCR_AVX512 inline SplitAcc load_acc(const uint64_t* acc) {
  return SplitAcc{_mm512_loadu_si512(acc), _mm512_setzero_si512()};
}

DCR_AVX512 inline __m512i merged(const SplitAcc& a) {
  return _mm512_add_epi64(a.product, _mm512_shuffle_epi32(a.data, _MM_PERM_BADC));
}

DCR_AVX512 inline void store_acc(const SplitAcc& a, uint64_t* acc) { _mm512_storeu_si512(acc, merged(a)); }

// XXH3's stripe step: the product of each 64-bit lane's halves after the key, and the stripe itself.
DCR_AVX512 inline void accumulate(SplitAcc& a, __m512i stripe, const uint8_t* secret) {
  const __m512i key = _mm512_xor_si512(stripe, _mm512_loadu_si512(secret));
  a.product = _mm512_add_epi64(a.product, _mm512_mul_epu32(key, _mm512_srli_epi64(key, 32)));
  a.data = _mm512_add_epi64(a.data, stripe);
}

DCR_AVX512 inline void scramble(SplitAcc& a) {
  alignas(64) uint64_t acc[8];
  store_acc(a, acc);
  XXH3_scrambleAcc_avx512(acc, XXH3_kSecret + XXH_SECRET_DEFAULT_SIZE - XXH_STRIPE_LEN);
  a = load_acc(acc);
}

// One step of XXH3's main loop: stripe s, then the scramble that closes each whole block.
DCR_AVX512 inline void accumulate_stripe(SplitAcc& acc, __m512i stripe, uint64_t s, uint64_t blocks) {
  const uint64_t n = s % kStripesPerBlock;
  accumulate(acc, stripe, XXH3_kSecret + n * XXH_SECRET_CONSUME_RATE);
  if (n == kStripesPerBlock - 1 && s / kStripesPerBlock < blocks) scramble(acc);
}

// The main loop over stripes [first, last) of the hashed bytes, with the accumulators in
// registers; `buffer` holds them from stripe `at` on.
DCR_AVX512 static void accumulate_stripes(uint64_t* acc_out, const uint8_t* buffer, uint64_t at, uint64_t first,
                                          uint64_t last, uint64_t blocks) {
  SplitAcc acc = load_acc(acc_out);
  for (uint64_t s = first; s < last; ++s) {
    accumulate_stripe(acc, _mm512_loadu_si512(buffer + (s - at) * XXH_STRIPE_LEN), s, blocks);
  }
  store_acc(acc, acc_out);
}
#endif

void StripeHash::feed(const uint8_t* buffer, uint64_t begin, uint64_t end, uint64_t offset) {
#if defined(__x86_64__)
  accumulate_stripes(acc_, buffer, offset / XXH_STRIPE_LEN, (offset + begin) / XXH_STRIPE_LEN,
                     std::min(stripes_, (offset + end) / XXH_STRIPE_LEN), blocks_);
#endif
}

bool scan_and_hash_available(unsigned width) { return width == 2 && simd_level() >= SimdLevel::avx512_vbmi; }

#if defined(__x86_64__)
// Tokenising is spread evenly over the scan, one group of sixteen changes every `pace` chunks: the
// groups a staged run of positions makes ready are spread over the next run's chunks, leaving one
// group's worth of slack (at 3% changed about one group per 16 chunks, at 5% one per 9). Spread
// thin, that work hides between the scan's reads: bursts of it (every group as soon as it was
// ready) measured slower than tokenising after the scan, one group every 8 chunks whatever the
// rate faster, and spreading by the rate faster again at 1% and 3% (encode in dcr bench codec, two
// builds alternated; the stage tool's 4 Mi-element frames showed no difference). kMaxPace bounds
// the pace where few groups wait (below about 1% changed), so they are done early in the run; the
// bound was chosen, not tuned, and changes when work is done, never the tokens.
constexpr uint64_t kRunChunks = kScanStageElements / 32;
constexpr uint64_t kMaxPace = 32;

// Feeds the stripes the scan reads to both hashes (stripe c of each buffer is its chunk c). Both
// buffers have one length, so one count bounds both. The hook is a local of the scan's caller, so
// its accumulators stay in registers for the whole block instead of round-tripping through memory.
// When tokenising, it also tokenises a group of sixteen changes every `pace` chunks where one is
// ready (positions written, not yet tokenised): a few dozen vector steps between the scan's reads,
// done while those are in flight.
struct StripeHook {
  SplitAcc base_acc;
  SplitAcc target_acc;
  uint64_t first;  // the stripe of the hashed whole that the scanned buffer's chunk 0 is
  uint64_t stripes;
  uint64_t blocks;
  uint16_t* base_words;
  uint16_t* target_words;
  bool tokenising;
  bool sign_magnitude;
  uint32_t offset;  // the buffers' element 0 in the box
  const uint32_t* positions;
  uint64_t written;    // positions[0, written) are final
  uint64_t tokenised;  // and [0, tokenised) tokenised
  avx512::GroupTokenizer* tokens;  // apart, so that the hook's registers stay registers

  uint64_t pace = kMaxPace;       // chunks between two groups
  uint64_t countdown = kMaxPace;  // chunks until the next group

  void positions_final(uint64_t n) {
    written = n;
    pace = std::clamp<uint64_t>(kRunChunks / ((written - tokenised) / 16 + 1), 1, kMaxPace);
    countdown = std::min(countdown, pace);
  }

  DCR_AVX512_VBMI void tokenize_group() {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base_words + tokenised));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(target_words + tokenised));
    const __m256i deltas = sign_magnitude ? avx512::encode16_packed<ValueMode::delta_sm>(a, b)
                                          : avx512::encode16_packed<ValueMode::delta_tc>(a, b);
    tokens->group(positions + tokenised, _mm512_cvtepu16_epi32(deltas), offset);
    tokenised += 16;
  }

  DCR_AVX512_VBMI void operator()(uint64_t c, __m512i base_chunk, __m512i target_chunk, __mmask32 mask, uint64_t j) {
    store_compressed(base_words + j, mask, base_chunk);
    store_compressed(target_words + j, mask, target_chunk);
    if (tokenising && --countdown == 0) {
      countdown = pace;
      if (tokenised + 16 <= written) tokenize_group();
    }
    if (first + c >= stripes) return;
    accumulate_stripe(base_acc, base_chunk, first + c, blocks);
    accumulate_stripe(target_acc, target_chunk, first + c, blocks);
  }
};

// The loop works on a local copy of the hook, which the compiler keeps in registers.
__attribute__((flatten)) DCR_AVX512_VBMI uint64_t scan_hooked(const uint8_t* base, const uint8_t* target,
                                                              uint64_t begin, uint64_t end, uint32_t* positions,
                                                              StripeHook* hook) {
  StripeHook local = *hook;
  const uint64_t changed = scan_w2_vbmi2(base, target, begin, end, positions, local);
  *hook = local;
  return changed;
}

DCR_AVX512_VBMI void start_tokens(const ScanTokens& from, const uint32_t* positions, uint64_t offset,
                                  avx512::GroupTokenizer* tokens, StripeHook* hook) {
  hook->tokenising = true;
  hook->sign_magnitude = from.delta_mode == ValueMode::delta_sm;
  hook->offset = static_cast<uint32_t>(offset);
  hook->positions = positions;
  hook->written = hook->tokenised = 0;
  hook->tokens = tokens;
  tokens->start(from.gaps, from.deltas, from.next);
}

// The groups still whole once every position and word is in, then the last changes one at a time.
DCR_AVX512_VBMI void finish_tokens(StripeHook* hook, uint64_t changed, ChangedWords words, ScanTokens* to) {
  hook->written = changed;
  while (hook->tokenised + 16 <= changed) hook->tokenize_group();
  hook->tokens->finish(&to->gaps, &to->deltas, &to->next);
  for (uint64_t j = hook->tokenised; j < changed; ++j) {
    const uint64_t p = hook->positions[j] + uint64_t{hook->offset};
    to->gaps.add(p - to->next);
    to->next = p + 1;
    to->deltas.add(encode_word(to->delta_mode, words.base[j], words.target[j], 2));
  }
  to->done += changed;
}
#endif

uint64_t scan_and_hash(const uint8_t* base, const uint8_t* target, uint64_t begin, uint64_t end,
                       uint32_t* positions, StripeHash* base_hash, StripeHash* target_hash, ChangedWords words,
                       uint64_t offset, ScanTokens* tokens) {
#if defined(__x86_64__)
  StripeHook hook;
  hook.tokenising = false;
  avx512::GroupTokenizer tokenizer;
  if (tokens != nullptr) start_tokens(*tokens, positions, offset, &tokenizer, &hook);
  hook.first = offset / 32;
  hook.base_words = words.base;
  hook.target_words = words.target;
  hook.base_acc = load_acc(base_hash->acc_);
  hook.target_acc = load_acc(target_hash->acc_);
  hook.stripes = base_hash->stripes_;
  hook.blocks = base_hash->blocks_;
  const uint64_t changed = scan_hooked(base, target, begin, end, positions, &hook);
  store_acc(hook.base_acc, base_hash->acc_);
  store_acc(hook.target_acc, target_hash->acc_);
  for (uint64_t j = changed; j-- > 0 && positions[j] >= (end & ~31ull);) {  // past the last whole chunk
    std::memcpy(words.base + j, base + 2 * positions[j], 2);
    std::memcpy(words.target + j, target + 2 * positions[j], 2);
  }
  if (tokens != nullptr) finish_tokens(&hook, changed, words, tokens);
  return changed;
#else
  return 0;
#endif
}

}  // namespace dcr
