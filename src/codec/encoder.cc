#include "dcr/codec/encoder.h"

#include <string>

#include "dcr/codec/scan.h"
#include "dcr/core/hash.h"
#include "src/codec/sections.h"

namespace dcr {

struct FrameEncoder::Scratch {
  StreamCodec codec;
  std::vector<uint32_t> positions;
  std::vector<uint64_t> words;
  Section candidate;
  Section best;
  std::vector<uint8_t> trial;
};

FrameEncoder::FrameEncoder(EncodeOptions options) : options_(options), scratch_(new Scratch) {}
FrameEncoder::~FrameEncoder() { delete scratch_; }

namespace {

Status check_range(const FrameRange& range) {
  DCR_REQUIRE(range.width == 1 || range.width == 2 || range.width == 4 || range.width == 8,
              Code::invalid_argument, "element width " + std::to_string(range.width) + " is not 1, 2, 4 or 8");
  DCR_REQUIRE(range.count <= kMaxFrameElements, Code::invalid_argument,
              "a frame covers at most 2^32-1 elements, asked for " + std::to_string(range.count));
  return Status::ok();
}

struct ValueChoice {
  ValueMode mode;
  ValuePacking packing;
};

template <typename T, size_t N>
std::vector<T> allowed(const std::optional<T>& forced, const T (&all)[N]) {
  if (forced) return {*forced};
  return std::vector<T>(all, all + N);
}

// The size a section would be written with: estimated from histograms, or written for real when
// the options ask for exhaustive search (zstd sizes cannot be estimated).
double measure(const Section& section, const EncodeOptions& options, StreamCodec* codec,
               std::vector<uint8_t>* trial) {
  if (!options.exhaustive) return section.estimate();
  trial->clear();
  return static_cast<double>(section.write(codec, options.zstd_level, true, trial));
}

}  // namespace

Status FrameEncoder::encode_delta(const FrameRange& range, const void* base, const void* target,
                                  uint64_t base_version, uint64_t target_version,
                                  std::vector<uint8_t>* frame, EncodeStats* stats) {
  DCR_TRY(check_range(range));
  Scratch& s = *scratch_;
  if (s.positions.size() < range.count) s.positions.resize(range.count);
  const uint64_t changed = scan_changes(base, target, range.count, range.width, s.positions.data());
  return encode_delta_at(range, base, target, s.positions.data(), changed, base_version,
                         target_version, frame, stats);
}

Status FrameEncoder::encode_delta_at(const FrameRange& range, const void* base, const void* target,
                                     const uint32_t* positions, uint64_t changed,
                                     uint64_t base_version, uint64_t target_version,
                                     std::vector<uint8_t>* frame, EncodeStats* stats) {
  DCR_TRY(check_range(range));
  DCR_REQUIRE(changed <= range.count, Code::invalid_argument, "more changed positions than elements");
  Scratch& s = *scratch_;
  const unsigned width = range.width;

  FrameHeader header;
  header.tensor_id = range.tensor_id;
  header.elem_width = static_cast<uint8_t>(width);
  header.first = range.first;
  header.count = range.count;
  header.changed = changed;
  header.base_version = base_version;
  header.target_version = target_version;
  header.base_hash = hash64(base, range.count * width);
  header.target_hash = hash64(target, range.count * width);

  // Positions: 'all' when every element changed, else the smallest of the sparse codings.
  static constexpr PosCoding kSparse[] = {PosCoding::gaps_token, PosCoding::bitmap, PosCoding::gaps_varint};
  std::vector<PosCoding> pos_options = allowed(options_.pos_coding, kSparse);
  if (!options_.pos_coding && changed == range.count) pos_options = {PosCoding::all};
  double best_pos = -1;
  for (PosCoding coding : pos_options) {
    if (coding == PosCoding::all && changed != range.count) {
      return Status(Code::invalid_argument, "position coding 'all' needs every element changed");
    }
    // Bitmaps and varints rarely win on sparse changes; only try them where they may.
    const bool plausible = options_.exhaustive || options_.pos_coding || coding == PosCoding::all ||
                           coding == PosCoding::gaps_token ||
                           (coding == PosCoding::bitmap && changed * 16 >= range.count);
    if (!plausible) continue;
    build_positions(coding, positions, changed, range.count, &s.candidate);
    const double size = measure(s.candidate, options_, &s.codec, &s.trial);
    if (best_pos < 0 || size < best_pos) {
      best_pos = size;
      header.pos_coding = coding;
      std::swap(s.candidate, s.best);
    }
  }
  std::vector<uint8_t>& out = *frame;
  out.assign(kFrameHeaderBytes, 0);
  const size_t position_bytes = s.best.write(&s.codec, options_.zstd_level, options_.exhaustive, &out);

  // Values: the smallest of XOR masks, ordered deltas (tokens) and overwrite values (planes).
  const ValueMode delta = options_.sign_magnitude ? ValueMode::delta_sm : ValueMode::delta_tc;
  const ValueChoice kValueChoices[] = {{delta, ValuePacking::tokens},
                                       {ValueMode::xor_mask, ValuePacking::tokens},
                                       {ValueMode::overwrite, ValuePacking::planes},
                                       {ValueMode::xor_mask, ValuePacking::planes}};
  if (s.words.size() < changed) s.words.resize(changed);
  double best_value = -1;
  for (const ValueChoice& c : kValueChoices) {
    if (options_.value_mode && *options_.value_mode != c.mode) continue;
    if (options_.value_packing && *options_.value_packing != c.packing) continue;
    gather_words(base, target, width, c.mode, positions, changed, s.words.data());
    build_values(c.packing, s.words.data(), changed, width, &s.candidate);
    const double size = measure(s.candidate, options_, &s.codec, &s.trial);
    if (best_value < 0 || size < best_value) {
      best_value = size;
      header.value_mode = c.mode;
      header.value_packing = c.packing;
      std::swap(s.candidate, s.best);
    }
  }
  if (best_value < 0) {  // a forced pair that no choice lists (e.g. delta planes): build it as asked
    header.value_mode = *options_.value_mode;
    header.value_packing = options_.value_packing.value_or(ValuePacking::tokens);
    gather_words(base, target, width, header.value_mode, positions, changed, s.words.data());
    build_values(header.value_packing, s.words.data(), changed, width, &s.best);
  }
  const size_t value_bytes = s.best.write(&s.codec, options_.zstd_level, options_.exhaustive, &out);

  header.payload_bytes = out.size() - kFrameHeaderBytes;
  header.payload_hash = hash64(out.data() + kFrameHeaderBytes, header.payload_bytes);
  write_frame_header(header, out.data());
  if (stats != nullptr) {
    *stats = EncodeStats{changed, out.size(), position_bytes, value_bytes,
                         header.pos_coding, header.value_mode, header.value_packing};
  }
  return Status::ok();
}

Status FrameEncoder::encode_full(const FrameRange& range, const void* target, uint64_t target_version,
                                 std::vector<uint8_t>* frame, EncodeStats* stats) {
  DCR_TRY(check_range(range));
  Scratch& s = *scratch_;
  const unsigned width = range.width;
  if (s.words.size() < range.count) s.words.resize(range.count);
  for (uint64_t i = 0; i < range.count; ++i) s.words[i] = load_word(target, i, width);

  FrameHeader header;
  header.tensor_id = range.tensor_id;
  header.elem_width = static_cast<uint8_t>(width);
  header.pos_coding = PosCoding::all;
  header.value_mode = ValueMode::overwrite;
  header.value_packing = ValuePacking::planes;
  header.flags = kFrameFlagFull;
  header.first = range.first;
  header.count = range.count;
  header.changed = range.count;
  header.base_version = target_version;
  header.target_version = target_version;
  header.target_hash = hash64(target, range.count * width);

  std::vector<uint8_t>& out = *frame;
  out.assign(kFrameHeaderBytes, 0);
  build_values(ValuePacking::planes, s.words.data(), range.count, width, &s.best);
  const size_t value_bytes = s.best.write(&s.codec, options_.zstd_level, options_.exhaustive, &out);
  header.payload_bytes = out.size() - kFrameHeaderBytes;
  header.payload_hash = hash64(out.data() + kFrameHeaderBytes, header.payload_bytes);
  write_frame_header(header, out.data());
  if (stats != nullptr) {
    *stats = EncodeStats{range.count, out.size(), 0, value_bytes, header.pos_coding,
                         header.value_mode, header.value_packing};
  }
  return Status::ok();
}

}  // namespace dcr
