#include "dcr/bench/reference_encodings.h"

#include <zstd.h>

#include <algorithm>
#include <cmath>

#include "dcr/codec/byte_io.h"
#include "dcr/codec/scan.h"

namespace dcr {

struct ReferenceEncodings::Impl {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  std::vector<uint8_t> raw;
  std::vector<uint8_t> packed;
  ~Impl() { ZSTD_freeCCtx(cctx); }
};

ReferenceEncodings::ReferenceEncodings() : impl_(new Impl) {}
ReferenceEncodings::~ReferenceEncodings() = default;

uint64_t ReferenceEncodings::compressed_size(int level) {
  impl_->packed.resize(ZSTD_compressBound(impl_->raw.size()));
  const size_t n = ZSTD_compressCCtx(impl_->cctx, impl_->packed.data(), impl_->packed.size(),
                                     impl_->raw.data(), impl_->raw.size(), level);
  return ZSTD_isError(n) ? impl_->raw.size() : n;
}

namespace {
// The narrowest of 1, 2, 4 bytes that holds every gap (NeMo starts at 2 bytes).
unsigned gap_width(const uint32_t* positions, uint64_t changed, unsigned narrowest) {
  uint64_t largest = 0, prev = 0;
  for (uint64_t j = 0; j < changed; ++j) {
    largest = std::max<uint64_t>(largest, positions[j] - prev);
    prev = positions[j];
  }
  for (unsigned w = narrowest; w < 4; w *= 2) {
    if (largest < (1ull << (8 * w))) return w;
  }
  return 4;
}
}  // namespace

uint64_t ReferenceEncodings::nemo_style_bytes(const void* base, const void* target, unsigned width,
                                              const uint32_t* positions, uint64_t changed) {
  if (changed == 0) return 0;
  std::vector<uint8_t>& raw = impl_->raw;
  raw.clear();
  const unsigned gw = gap_width(positions, changed, 2);
  uint64_t prev = 0;
  for (uint64_t j = 0; j < changed; ++j) {
    put_le(&raw, positions[j] - prev, gw);
    prev = positions[j];
  }
  for (uint64_t j = 0; j < changed; ++j) {
    put_le(&raw, load_word(base, positions[j], width) ^ load_word(target, positions[j], width), width);
  }
  return compressed_size(1);
}

uint64_t ReferenceEncodings::pulse_style_bytes(const void* target, unsigned width,
                                               const uint32_t* positions, uint64_t changed) {
  if (changed == 0) return 0;
  std::vector<uint8_t>& raw = impl_->raw;
  raw.clear();
  const unsigned gw = gap_width(positions, changed, 1);
  uint64_t prev = 0;
  for (uint64_t j = 0; j < changed; ++j) {
    put_le(&raw, positions[j] - prev, gw);
    prev = positions[j];
  }
  for (uint64_t j = 0; j < changed; ++j) put_le(&raw, load_word(target, positions[j], width), width);
  return compressed_size(3);
}

void EntropyBound::WordCounts::add(unsigned width, uint64_t word) {
  if (width <= 2) {
    std::vector<uint64_t>& table = narrow[width];
    if (table.empty()) table.assign(size_t(1) << (8 * width), 0);
    ++table[word];
  } else {
    ++wide[width][word];
  }
}

double EntropyBound::WordCounts::entropy_bits() const {
  std::vector<uint64_t> counts;
  for (const auto& table : narrow) {
    for (uint64_t c : table) if (c) counts.push_back(c);
  }
  for (const auto& map : wide) {
    for (const auto& entry : map) counts.push_back(entry.second);
  }
  double n = 0, bits = 0;
  for (uint64_t c : counts) n += static_cast<double>(c);
  for (uint64_t c : counts) bits -= c * std::log2(c / n);
  return bits;
}

void EntropyBound::add(const void* base, const void* target, unsigned width, uint64_t count,
                       const uint32_t* positions, uint64_t changed, bool sign_magnitude, int exponent_shift) {
  elements_ += count;
  changed_ += changed;
  const ValueMode delta = sign_magnitude ? ValueMode::delta_sm : ValueMode::delta_tc;
  for (uint64_t j = 0; j < changed; ++j) {
    const uint64_t a = load_word(base, positions[j], width), b = load_word(target, positions[j], width);
    xor_words_.add(width, encode_word(ValueMode::xor_mask, a, b, width));
    const uint64_t word = encode_word(delta, a, b, width);
    delta_words_.add(width, word);
    const uint64_t exponent = exponent_shift < 0 ? 0 : (a >> exponent_shift) & 0xff;
    by_exponent_[static_cast<uint32_t>(width << 8 | exponent)].add(width, word);
  }
}

double EntropyBound::position_bits() const {
  if (changed_ == 0 || changed_ == elements_) return 0;
  const double p = static_cast<double>(changed_) / elements_;
  return elements_ * (-p * std::log2(p) - (1 - p) * std::log2(1 - p));
}

double EntropyBound::xor_bound_bytes() const { return (position_bits() + xor_words_.entropy_bits()) / 8; }
double EntropyBound::delta_bound_bytes() const { return (position_bits() + delta_words_.entropy_bits()) / 8; }

double EntropyBound::exponent_bound_bytes() const {
  double bits = position_bits();
  for (const auto& entry : by_exponent_) bits += entry.second.entropy_bits();
  return bits / 8;
}

}  // namespace dcr
