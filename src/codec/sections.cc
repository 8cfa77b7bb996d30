#include "src/codec/sections.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "dcr/codec/bit_io.h"
#include "dcr/codec/scan.h"
#include "dcr/codec/tokens.h"
#include "src/codec/buffer.h"
#include "src/codec/detokenize_avx512.h"
#include "src/codec/joint.h"

namespace dcr {

void Section::reset(size_t count) {
  streams.resize(count);
  for (RawStream& s : streams) {
    s.bytes.clear();
    s.view = nullptr;
    s.view_size = 0;
    s.try_zstd = false;
    s.raw_only = false;
    s.counted = false;
    s.coded = false;
  }
}

Histogram RawStream::histogram() const {
  if (counted) return hist;
  Histogram counts;
  histogram_of(data(), size(), &counts);
  return counts;
}

double Section::estimate() const {
  double total = 0;
  for (const RawStream& s : streams) {
    if (s.coded) {
      total += static_cast<double>(s.size());
      continue;
    }
    if (s.raw_only) {
      total += 3 + static_cast<double>(s.size());  // coder byte, two varints, the bytes
      continue;
    }
    total += StreamCodec::estimate(s.histogram(), s.size());
  }
  return total;
}

size_t Section::write(StreamCodec* codec, int zstd_level, bool zstd_everywhere,
                      std::vector<uint8_t>* out) const {
  const size_t before = out->size();
  for (const RawStream& s : streams) {
    if (s.coded) {
      out->insert(out->end(), s.data(), s.data() + s.size());
      continue;
    }
    StreamOptions options;
    options.try_zstd = s.try_zstd || zstd_everywhere;
    options.raw_only = s.raw_only && !zstd_everywhere;  // exhaustive mode tries every coder
    options.zstd_level = zstd_level;
    codec->write(s.data(), s.size(), options, out, s.counted ? &s.hist : nullptr);
  }
  return out->size() - before;
}

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

namespace {

Status read_bitmap(ByteReader* reader, StreamCodec* codec, uint64_t changed, uint64_t count,
                   uint32_t* positions) {
  const uint8_t* bitmap;
  size_t size;
  DCR_TRY(codec->read(reader, (count + 7) / 8, 0, &bitmap, &size));
  DCR_REQUIRE(size == (count + 7) / 8, Code::corrupt, "position bitmap has the wrong length");
  DCR_REQUIRE(count % 8 == 0 || (bitmap[size - 1] >> (count % 8)) == 0, Code::corrupt,
              "position bitmap marks elements past the end of the range");
  uint64_t found = 0;
  for (size_t i = 0; i < size; ++i) {
    for (unsigned bits = bitmap[i]; bits != 0; bits &= bits - 1) {
      DCR_REQUIRE(found < changed, Code::corrupt, "position bitmap marks more changes than the header");
      positions[found++] = static_cast<uint32_t>(8 * i + __builtin_ctz(bits));
    }
  }
  DCR_REQUIRE(found == changed, Code::corrupt, "position bitmap marks fewer changes than the header");
  return Status::ok();
}

Status read_varint_gaps(ByteReader* reader, StreamCodec* codec, uint64_t changed, uint64_t count,
                        uint32_t* positions) {
  const uint8_t* bytes;
  size_t size;
  DCR_TRY(codec->read(reader, 10 * changed, 0, &bytes, &size));
  ByteReader gaps(bytes, size, "varint gap stream");
  uint64_t next = 0;
  for (uint64_t j = 0; j < changed; ++j) {
    uint64_t gap = 0;
    DCR_TRY(gaps.read_varint(&gap));
    DCR_REQUIRE(gap < count - next, Code::corrupt, "varint gap points past the end of the range");
    positions[j] = static_cast<uint32_t>(next + gap);
    next += gap + 1;
  }
  DCR_REQUIRE(gaps.remaining() == 0, Code::corrupt, "varint gap stream has trailing bytes");
  return Status::ok();
}

// Values packed as whole words or byte planes (not tokens), decoded in full.
Status read_value_bytes(ValuePacking packing, ByteReader* reader, StreamCodec* codec, uint64_t changed,
                        unsigned width, uint64_t* words) {
  if (packing == ValuePacking::words) {
    const uint8_t* bytes;
    size_t size;
    DCR_TRY(codec->read(reader, changed * width, 2, &bytes, &size));
    DCR_REQUIRE(size == changed * width, Code::corrupt, "value words stream has the wrong length");
    for (uint64_t j = 0; j < changed; ++j) words[j] = load_word(bytes, j, width);
    return Status::ok();
  }
  for (uint64_t j = 0; j < changed; ++j) words[j] = 0;
  for (unsigned b = 0; b < width; ++b) {
    const uint8_t* plane;
    size_t size;
    DCR_TRY(codec->read(reader, changed, 2, &plane, &size));
    DCR_REQUIRE(size == changed, Code::corrupt, "value plane " + std::to_string(b) + " has the wrong length");
    for (uint64_t j = 0; j < changed; ++j) words[j] |= static_cast<uint64_t>(plane[j]) << (8 * b);
  }
  return Status::ok();
}

}  // namespace

Status ChangeReader::Tokens::open(ByteReader* reader, StreamCodec* stream_codec, uint64_t count, int first_slot,
                                  const char* name) {
  codec = stream_codec;
  slot = first_slot;
  what = name;
  n = count;
  done = bit_pos = 0;
  size_t symbol_count;
  DCR_TRY(codec->open(reader, n, slot, &symbols, &symbol_count));
  DCR_REQUIRE(symbol_count == n, Code::corrupt,
              std::string(what) + " stream holds " + std::to_string(symbol_count) + " tokens, expected " +
                  std::to_string(n));
  return codec->read(reader, 8 * n, slot + 1, &extras, &extra_bytes);
}

Status ChangeReader::Tokens::open_extras(ByteReader* reader, StreamCodec* stream_codec, uint64_t count,
                                         const uint8_t* from, int extras_slot, const char* name) {
  codec = stream_codec;
  slot = -1;  // no symbol stream of its own
  what = name;
  n = count;
  done = bit_pos = 0;
  symbols = from;
  return codec->read(reader, 8 * n, extras_slot, &extras, &extra_bytes);
}

// Tokens [done, upto). `prefix(tokens from done, done, upto, &bit_pos)` may decode a first part
// itself (the vectorised decoders) and returns how many tokens it took; emit(j, value) is then
// called for each of the others and returns false for a value the caller cannot accept.
template <typename Prefix, typename Emit>
Status ChangeReader::Tokens::decode(uint64_t upto, Prefix prefix, Emit emit) {
  DCR_TRY(codec->decode(slot, upto));
  return detokenize(upto, prefix, emit);
}

template <typename Prefix, typename Emit>
Status ChangeReader::Tokens::detokenize(uint64_t upto, Prefix prefix, Emit emit) {
  uint64_t j = done + prefix(TokenPair{symbols + done, extras, extra_bytes}, done, upto, &bit_pos);
  BitReader bits(extras, extra_bytes);
  bits.seek(bit_pos);
  for (; j < upto && bits.has_window(); ++j) {  // the usual case, without bounds checks
    const uint8_t symbol = symbols[j];
    const unsigned extra_bits = token_extra_bits(symbol);
    if (extra_bits > 56) break;
    if (!emit(j, token_value(symbol, bits.get_unchecked(extra_bits)))) {
      return Status(Code::corrupt, std::string(what) + " out of range");
    }
  }
  for (; j < upto; ++j) {
    const uint8_t symbol = symbols[j];
    uint64_t value = symbol;
    if (symbol >= kDirectTokens) {
      uint64_t extra = 0;
      if (!bits.get(token_extra_bits(symbol), &extra)) {
        return Status(Code::corrupt, std::string(what) + " extra-bit stream is too short");
      }
      value = token_value(symbol, extra);
    }
    if (!emit(j, value)) return Status(Code::corrupt, std::string(what) + " out of range");
  }
  bit_pos = bits.position();
  done = upto;
  DCR_REQUIRE(done < n || bits.at_end(), Code::corrupt, std::string(what) + " extra-bit stream is too long");
  return Status::ok();
}

void append_runs(const Region& r, std::vector<ElementRun>* runs) {
  if (r.contiguous()) {
    runs->push_back({r.row(0), r.box.elements()});
    return;
  }
  for (uint64_t k = 0; k < r.box.rows; ++k) runs->push_back({r.row(k), r.box.cols});
}

Status ChangeReader::open(const FrameHeader& header, ByteReader* payload, StreamCodec* codec, uint32_t* positions,
                          uint64_t* words, const std::vector<ElementRun>* base) {
  h_ = header;
  base_ = base;
  base_run_ = 0;
  run_start_ = 0;
  run_end_ = base != nullptr && !base->empty() ? (*base)[0].elements : 0;
  codec_ = codec;
  positions_ = positions;
  words_ = words;
  next_ = done_ = 0;
  DCR_TRY(open_positions(payload));
  return open_values(payload);
}

Status ChangeReader::open_positions(ByteReader* payload) {
  lazy_gaps_ = joint_ = false;
  switch (h_.pos_coding) {
    case PosCoding::all:
      for (uint64_t j = 0; j < h_.changed; ++j) positions_[j] = static_cast<uint32_t>(j);
      return Status::ok();
    case PosCoding::bitmap: return read_bitmap(payload, codec_, h_.changed, h_.count(), positions_);
    case PosCoding::gaps_varint: return read_varint_gaps(payload, codec_, h_.changed, h_.count(), positions_);
    case PosCoding::gaps_token:
      lazy_gaps_ = true;
      return gaps_.open(payload, codec_, h_.changed, 0, "gap token");
    case PosCoding::gaps_joint: return open_joint(payload);
  }
  return Status(Code::corrupt, "unknown position coding");
}

// Slots: joint bytes 0, gap extra bits 1, the escapes' value tokens 2 and extra bits 3, their gap
// tokens 4.
Status ChangeReader::open_joint(ByteReader* payload) {
  joint_ = lazy_gaps_ = true;
  size_t size;
  DCR_TRY(codec_->open(payload, h_.changed, 0, &joint_bytes_, &size));
  DCR_REQUIRE(size == h_.changed, Code::corrupt,
              "joint stream holds " + std::to_string(size) + " bytes, expected " + std::to_string(h_.changed));
  DCR_TRY(codec_->open(payload, h_.changed, 4, &escape_gaps_, &size));
  escapes_ = size;
  escapes_ready_ = escapes_used_ = 0;
  return gaps_.open_extras(payload, codec_, h_.changed, grow_to(&gap_tokens_, h_.changed), 1, "gap token");
}

Status ChangeReader::open_values(ByteReader* payload) {
  // Every frame sets these: a reader goes from frame to frame, and a contexts frame must not leave
  // the next (joint) frame's values to decode_contexts.
  contexts_ = !joint_ && h_.value_packing == ValuePacking::contexts;
  defer_ = false;
  values_done_ = 0;
  if (joint_) {
    lazy_values_ = false;
    grow_to(&escape_words_, escapes_);
    return values_.open(payload, codec_, escapes_, 2, "escape value token");
  }
  if (contexts_) return open_contexts(payload);
  lazy_values_ = h_.value_packing == ValuePacking::tokens;
  if (lazy_values_) return values_.open(payload, codec_, h_.changed, 2, "value token");
  return read_value_bytes(h_.value_packing, payload, codec_, h_.changed, h_.elem_width, words_);
}

Status ChangeReader::decode(uint64_t upto) {
  if (joint_) DCR_TRY(decode_joint(upto));
  if (lazy_gaps_) DCR_TRY(decode_gaps(upto));
  if (lazy_values_) DCR_TRY(decode_words(upto, &values_, words_));
  if (contexts_ && !defer_) DCR_TRY(decode_contexts(upto));
  done_ = upto;
  return Status::ok();
}

Status ChangeReader::decode_gaps(uint64_t upto) {
  const uint64_t count = h_.count();
  const auto vectorised = [&](const TokenPair& tokens, uint64_t from, uint64_t to, uint64_t* bit_pos) {
    return decode_gaps_avx512(tokens, to - from, count, &next_, bit_pos, positions_ + from);
  };
  const auto emit = [&](uint64_t j, uint64_t gap) {
    if (gap >= count - next_) return false;  // past the end of the box
    positions_[j] = static_cast<uint32_t>(next_ + gap);
    next_ += gap + 1;
    return true;
  };
  return joint_ ? gaps_.detokenize(upto, vectorised, emit) : gaps_.decode(upto, vectorised, emit);
}

// Words [tokens->done, upto) of a token pair into out; `symbols` false when the symbols are there
// already (not decoded from a stream of their own).
Status ChangeReader::decode_words(uint64_t upto, Tokens* tokens, uint64_t* out, bool symbols) {
  const unsigned width = h_.elem_width;
  const uint64_t mask = width_mask(width);
  const auto vectorised = [&](const TokenPair& pair, uint64_t from, uint64_t to, uint64_t* bit_pos) {
    return decode_words_avx512(pair, to - from, width, bit_pos, out + from);
  };
  const auto emit = [&](uint64_t j, uint64_t word) {
    out[j] = word;
    return (word & ~mask) == 0;  // no wider than the element
  };
  return symbols ? tokens->decode(upto, vectorised, emit) : tokens->detokenize(upto, vectorised, emit);
}

// The gap tokens and words of changes [done_, upto) from their joint bytes; the escapes' come from
// their own streams, decoded a batch ahead of need.
Status ChangeReader::decode_joint(uint64_t upto) {
  constexpr uint64_t kEscapeBatch = 256;  // a multiple of the rANS lanes
  DCR_TRY(codec_->decode(0, upto));
  const uint64_t need = escapes_used_ + count_escapes(joint_bytes_ + done_, upto - done_);
  DCR_REQUIRE(need <= escapes_, Code::corrupt, "joint stream escapes more changes than its escape streams hold");
  if (need > escapes_ready_) {
    const uint64_t ready = std::min(escapes_, (need + kEscapeBatch - 1) / kEscapeBatch * kEscapeBatch);
    DCR_TRY(codec_->decode(4, ready));
    DCR_TRY(decode_words(ready, &values_, escape_words_.data()));
    escapes_ready_ = ready;
  }
  escapes_used_ += merge_joint(joint_bytes_ + done_, upto - done_, escape_gaps_ + escapes_used_,
                               escape_words_.data() + escapes_used_, gap_tokens_.data() + done_, words_ + done_);
  DCR_REQUIRE(upto < h_.changed || escapes_used_ == escapes_, Code::corrupt,
              "escape streams hold more changes than the joint stream escapes");
  return Status::ok();
}

// Slots: the rule, then the token stream 2 (decoded as far as asked), the extra bits 3.
Status ChangeReader::open_contexts(ByteReader* payload) {
  lazy_values_ = false;
  DCR_REQUIRE(base_ != nullptr && !base_->empty(), Code::invalid_argument,
              "value packing contexts decodes against the base bits: apply the frame to its destination");
  const uint8_t* bytes;
  size_t size;
  DCR_TRY(codec_->read(payload, 3, 2, &bytes, &size));
  DCR_REQUIRE(size == 3, Code::corrupt, "context rule stream holds " + std::to_string(size) + " bytes, expected 3");
  rule_ = ContextRule{bytes[0], bytes[1], bytes[2]};
  DCR_REQUIRE(rule_.shift < 8 * h_.elem_width && rule_.buckets >= 1 && rule_.buckets <= kMaxContextBuckets &&
                  rule_.first + rule_.buckets <= 256,
              Code::corrupt, "context rule (shift " + std::to_string(rule_.shift) + ", first " +
                                 std::to_string(rule_.first) + ", buckets " + std::to_string(rule_.buckets) +
                                 ") is out of range");
  rule_.fill_table(bucket_of_);
  grow_to(&buckets_, h_.changed);
  buckets_done_ = 0;
  Tokens& t = context_values_;
  t.codec = codec_;
  t.slot = -1;  // the symbols decode in decode_contexts, by their buckets
  t.what = "context value token";
  t.n = h_.changed;
  t.done = t.bit_pos = 0;
  DCR_TRY(codec_->open_buckets(payload, h_.changed, rule_.buckets, 2, &t.symbols));
  return codec_->read(payload, 8 * h_.changed, 3, &t.extras, &t.extra_bytes);
}

namespace {

// The buckets of changes [j, n) that lie in the run of box elements [start, end), from the base
// bits of `run`, elements of W bytes (0: of `width`); returns the first change past them.
template <unsigned W>
uint64_t read_buckets(const uint8_t* run, uint64_t start, uint64_t end, const uint32_t* positions, uint64_t j,
                      uint64_t n, unsigned shift, const uint8_t* bucket_of, uint8_t* buckets, unsigned width = W) {
  for (; j < n && positions[j] < end; ++j) {
    buckets[j] = bucket_of[static_cast<uint8_t>(load_word(run, positions[j] - start, W == 0 ? width : W) >> shift)];
  }
  return j;
}

}  // namespace

// Words [values_done_, upto): each change's token is decoded by the table of the bucket of the base
// bits at its position (not yet scattered over: changes are applied only once decoded). The
// changes' buckets are read first, then their tokens decoded and detokenised with their extra bits
// like any token pair. Tokens decode in whole groups of the stream's states, up to the next multiple
// of kSlice: their positions are decoded (decode's slices are whole) and their base bits are
// still in place.
Status ChangeReader::decode_contexts(uint64_t upto) {
  const unsigned width = h_.elem_width, shift = rule_.shift;
  const std::vector<ElementRun>& runs = *base_;
  const uint32_t* positions = positions_;
  uint8_t* buckets = buckets_.data();
  const uint64_t ahead = std::min<uint64_t>(h_.changed, (upto + kSlice - 1) / kSlice * kSlice);
  for (uint64_t j = buckets_done_; j < ahead;) {
    while (positions[j] >= run_end_) {  // positions ascend, so the runs are walked once
      DCR_REQUIRE(base_run_ + 1 < runs.size(), Code::corrupt,
                  "change position " + std::to_string(positions[j]) + " lies past the frame's box");
      run_start_ = run_end_;
      run_end_ += runs[++base_run_].elements;
    }
    const uint8_t* run = runs[base_run_].data;
    j = width == 2 ? read_buckets<2>(run, run_start_, run_end_, positions, j, ahead, shift, bucket_of_, buckets)
                   : read_buckets<0>(run, run_start_, run_end_, positions, j, ahead, shift, bucket_of_, buckets, width);
  }
  buckets_done_ = std::max(buckets_done_, ahead);
  DCR_TRY(codec_->decode_buckets(2, ahead, buckets));
  values_done_ = upto;
  return decode_words(upto, &context_values_, words_, false);
}

}  // namespace dcr
