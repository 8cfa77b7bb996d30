#include "src/codec/encode/build_section.h"

#include <algorithm>
#include <utility>

#include "dcr/codec/bit_io.h"
#include "dcr/codec/byte_io.h"
#include "dcr/codec/scan.h"
#include "dcr/codec/tokens.h"
#include "src/codec/tokens/joint.h"

namespace dcr {

namespace {

// Tokens of `values` into stream 0, their raw low bits into stream 1.
template <typename ValueAt>
void build_tokens(uint64_t n, ValueAt value_at, Section* section) {
  section->reset(2);
  std::vector<uint8_t>& symbols = section->streams[0].bytes;
  symbols.resize(n);
  section->streams[1].raw_only = true;  // the low bits of tokens are close to uniform
  std::vector<uint8_t>& extra_bytes = section->streams[1].bytes;
  extra_bytes.resize(BitPacker::capacity(64 * n));
  BitPacker extras(extra_bytes.data());
  for (uint64_t j = 0; j < n; ++j) {
    const Token t = make_token(value_at(j));
    symbols[j] = t.symbol;
    extras.put(t.extra, t.extra_bits);
  }
  extra_bytes.resize(extras.bytes());
}

}  // namespace

void build_positions(PosCoding coding, const uint32_t* positions, uint64_t changed, uint64_t count,
                     Section* section) {
  switch (coding) {
    case PosCoding::all:
    case PosCoding::gaps_joint:  // built with the values, by build_joint
      section->reset(0);
      return;
    case PosCoding::bitmap: {
      section->reset(1);
      std::vector<uint8_t>& bitmap = section->streams[0].bytes;
      bitmap.assign((count + 7) / 8, 0);
      for (uint64_t j = 0; j < changed; ++j) bitmap[positions[j] >> 3] |= uint8_t(1u << (positions[j] & 7));
      section->streams[0].try_zstd = true;
      return;
    }
    case PosCoding::gaps_varint: {
      section->reset(1);
      std::vector<uint8_t>& out = section->streams[0].bytes;
      uint64_t next = 0;
      for (uint64_t j = 0; j < changed; ++j) {
        put_varint(&out, positions[j] - next);
        next = uint64_t(positions[j]) + 1;
      }
      section->streams[0].try_zstd = true;
      return;
    }
    case PosCoding::gaps_token:
      build_tokens(changed, [&](uint64_t j) { return j == 0 ? positions[0] : positions[j] - positions[j - 1] - 1ull; },
                   section);
      return;
  }
}

void build_values(ValuePacking packing, const uint64_t* words, uint64_t changed, unsigned width,
                  Section* section) {
  if (packing == ValuePacking::tokens) {
    build_tokens(changed, [&](uint64_t j) { return words[j]; }, section);
    return;
  }
  if (packing == ValuePacking::words) {
    section->reset(1);
    std::vector<uint8_t>& out = section->streams[0].bytes;
    out.resize(changed * width);
    for (uint64_t j = 0; j < changed; ++j) store_word(out.data(), j, width, words[j]);
    return;
  }
  section->reset(width);
  for (unsigned b = 0; b < width; ++b) {
    std::vector<uint8_t>& plane = section->streams[b].bytes;
    plane.resize(changed);
    for (uint64_t j = 0; j < changed; ++j) plane[j] = static_cast<uint8_t>(words[j] >> (8 * b));
    section->streams[b].try_zstd = true;
  }
}

void build_joint(const Section& gaps, const Section& values, Section* positions, Section* joint_values) {
  constexpr uint64_t kChunk = 4096;  // split through stack buffers: the streams grow without zero-filling
  const uint8_t* gap_tokens = gaps.streams[0].data();
  const uint8_t* value_tokens = values.streams[0].data();
  const uint64_t changes = gaps.streams[0].size();
  positions->reset(3);
  joint_values->reset(2);
  RawStream& joint = positions->streams[0];
  RawStream& escape_gaps = positions->streams[1];
  RawStream& escape_values = joint_values->streams[0];
  const uint8_t bound = joint_gap_bound(gaps.streams[0].histogram().data());
  JointMax max;
  for (uint64_t first = 0; first < changes; first += kChunk) {
    const uint64_t n = std::min<uint64_t>(kChunk, changes - first);
    uint8_t bytes[kChunk], chunk_gaps[kChunk + 64], chunk_values[kChunk + 64];
    JointMax chunk_max;
    const uint64_t escapes = split_joint(gap_tokens + first, value_tokens + first, n, bound, bytes,
                                         chunk_gaps, chunk_values, &chunk_max);
    joint.bytes.insert(joint.bytes.end(), bytes, bytes + n);
    escape_gaps.bytes.insert(escape_gaps.bytes.end(), chunk_gaps, chunk_gaps + escapes);
    escape_values.bytes.insert(escape_values.bytes.end(), chunk_values, chunk_values + escapes);
    max = JointMax{std::max(max.joint, chunk_max.joint), std::max(max.escape_gap, chunk_max.escape_gap),
                   std::max(max.escape_value, chunk_max.escape_value)};
  }
  const std::pair<RawStream*, uint8_t> counted[] = {
      {&joint, max.joint}, {&escape_gaps, max.escape_gap}, {&escape_values, max.escape_value}};
  for (const auto& [stream, largest] : counted) {
    sampled_histogram_of(stream->bytes.data(), stream->bytes.size(), largest, &stream->hist);
    stream->counted = true;
  }
  positions->streams[2] = gaps.streams[1];  // the extra bits: every gap's, and only escaped words have any
  joint_values->streams[1] = values.streams[1];
}

}  // namespace dcr
