// The change words of a value mode gathered from a base and a target (the encoder's) and scattered
// into a destination, keeping the old bits (apply's); scatter_avx512.cc is the AVX-512 twin of
// the scatter for 2-byte elements.
#include "dcr/codec/scan.h"

#include "src/codec/values/scatter_avx512.h"

namespace dcr {

namespace {
// The loops below are instantiated per width and mode so the element access and arithmetic
// fold to straight-line code.
template <unsigned W, ValueMode M>
void gather_fixed(const void* base, const void* target, const uint32_t* positions, uint64_t changed,
                  uint64_t* words) {
  for (uint64_t j = 0; j < changed; ++j) {
    const uint64_t p = positions[j];
    words[j] = encode_word(M, load_word(base, p, W), load_word(target, p, W), W);
  }
}

template <unsigned W, ValueMode M>
void scatter_fixed(void* dst, const uint32_t* positions, uint64_t changed, uint64_t* words) {
  for (uint64_t j = 0; j < changed; ++j) {
    const uint64_t p = positions[j];
    const uint64_t old_bits = load_word(dst, p, W);
    store_word(dst, p, W, apply_word(M, old_bits, words[j], W));
    words[j] = old_bits;
  }
}

template <template <unsigned, ValueMode> class Op, unsigned W, typename... Args>
void dispatch_mode(ValueMode mode, Args... args) {
  switch (mode) {
    case ValueMode::xor_mask: Op<W, ValueMode::xor_mask>::run(args...); break;
    case ValueMode::overwrite: Op<W, ValueMode::overwrite>::run(args...); break;
    case ValueMode::delta_sm: Op<W, ValueMode::delta_sm>::run(args...); break;
    case ValueMode::delta_tc: Op<W, ValueMode::delta_tc>::run(args...); break;
  }
}

template <template <unsigned, ValueMode> class Op, typename... Args>
void dispatch(unsigned width, ValueMode mode, Args... args) {
  switch (width) {
    case 1: dispatch_mode<Op, 1>(mode, args...); break;
    case 2: dispatch_mode<Op, 2>(mode, args...); break;
    case 4: dispatch_mode<Op, 4>(mode, args...); break;
    default: dispatch_mode<Op, 8>(mode, args...); break;
  }
}

template <unsigned W, ValueMode M>
struct Gather {
  static void run(const void* b, const void* t, const uint32_t* p, uint64_t n, uint64_t* w) {
    gather_fixed<W, M>(b, t, p, n, w);
  }
};

template <unsigned W, ValueMode M>
struct Scatter {
  static void run(void* d, const uint32_t* p, uint64_t n, uint64_t* w) { scatter_fixed<W, M>(d, p, n, w); }
};
}  // namespace

void gather_words(const void* base, const void* target, unsigned width, ValueMode mode,
                  const uint32_t* positions, uint64_t changed, uint64_t* words) {
  dispatch<Gather>(width, mode, base, target, positions, changed, words);
}

void scatter_swap(void* dst, uint64_t elements, unsigned width, ValueMode mode, const uint32_t* positions,
                  uint64_t changed, uint64_t* words) {
  const uint64_t done =
      width == 2 ? scatter_swap_avx512_w2(static_cast<uint8_t*>(dst), elements, mode, positions, changed, words) : 0;
  dispatch<Scatter>(width, mode, dst, positions + done, changed - done, words + done);
}

}  // namespace dcr
