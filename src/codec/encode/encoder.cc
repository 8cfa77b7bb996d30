#include "dcr/codec/encoder.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "dcr/codec/scan.h"
#include "src/codec/encode/build_section.h"
#include "src/codec/encode/frame_encoder.h"

namespace dcr {

FrameEncoder::FrameEncoder(EncodeOptions options) : options_(options), scratch_(new Scratch) {}
FrameEncoder::~FrameEncoder() { delete scratch_; }

Status check_frame_region(const Region& r) {
  DCR_REQUIRE(r.width == 1 || r.width == 2 || r.width == 4 || r.width == 8, Code::invalid_argument,
              "element width " + std::to_string(r.width) + " is not 1, 2, 4 or 8");
  DCR_REQUIRE(r.box.rows <= kMaxFrameElements && r.box.cols <= kMaxFrameElements &&
                  r.box.elements() <= kMaxFrameElements,
              Code::invalid_argument, "a frame covers at most 2^32-1 elements, asked for " + r.box.describe());
  DCR_REQUIRE(r.contiguous() || r.pitch >= r.box.cols, Code::invalid_argument,
              "region pitch " + std::to_string(r.pitch) + " is shorter than its rows");
  return Status::ok();
}

namespace {

Status check_pair(const Region& base, const Region& target) {
  DCR_TRY(check_frame_region(base));
  DCR_REQUIRE(base.box == target.box && base.width == target.width, Code::invalid_argument,
              "base " + base.box.describe() + " and target " + target.box.describe() + " differ in shape");
  return Status::ok();
}

// The size a section would be written with: estimated from histograms, or written for real when
// the options ask for exhaustive search (zstd sizes cannot be estimated).
double measure(const Section& section, const EncodeOptions& options, StreamCodec* codec,
               std::vector<uint8_t>* trial) {
  if (!options.exhaustive) return section.estimate();
  trial->clear();
  return static_cast<double>(section.write(codec, options.zstd_level, true, trial));
}

// Room for the header, then a bundle's box list while one is being encoded (s.bundle set).
void start_frame(const std::vector<uint8_t>& bundle, FrameHeader* header, std::vector<uint8_t>* out) {
  out->assign(kFrameHeaderBytes, 0);
  if (bundle.empty()) return;
  header->flags |= kFrameFlagBundle;
  out->insert(out->end(), bundle.begin(), bundle.end());
}

void finish_frame(FrameHeader* header, std::vector<uint8_t>* out) {
  header->payload_bytes = out->size() - kFrameHeaderBytes;
  header->payload_hash = hash64(out->data() + kFrameHeaderBytes, header->payload_bytes);
  write_frame_header(*header, out->data());
}

}  // namespace

void set_dtype(DType dtype, EncodeOptions* options) {
  options->sign_magnitude = dtype_is_float(dtype);
  const int shift = exponent_shift(dtype);
  options->context_shift.reset();
  if (shift >= 0) options->context_shift = static_cast<uint8_t>(shift);
}

ValueMode FrameEncoder::delta_mode() const {
  return options_.sign_magnitude ? ValueMode::delta_sm : ValueMode::delta_tc;
}

Status FrameEncoder::encode_delta(const Region& base_in, const Region& target_in, Versions versions,
                                  std::vector<uint8_t>* frame, EncodeStats* stats) {
  DCR_TRY(check_pair(base_in, target_in));
  Scratch& s = *scratch_;
  if (s.bundle.empty()) s.started = std::chrono::steady_clock::now();  // a bundle started in encode_bundle
  const unsigned width = base_in.width;
  const uint64_t count = base_in.box.elements();
  const Region base = dense_region(base_in.box, width, dense_bytes(base_in, &s.base_copy));
  const Region target = dense_region(target_in.box, width, dense_bytes(target_in, &s.target_copy));
  s.positions.reserve(count + kScanSlack);
  s.collector.start(width, delta_mode(), count, count);
  Hashes hashes;
  s.words_copied = scan_and_hash_available(width);
  const Run whole{base.data, target.data, count};
  const uint64_t changed =
      s.words_copied ? collect_fused(&whole, 1, count, &hashes) : collect_by_block(base, target, &hashes);
  s.collector.finish();
  return encode(base, target, s.positions.data(), changed, hashes, versions, frame, stats);
}

// One uninterrupted pass scans and hashes each run (the box, or a bundle's boxes as they lie), so
// memory streams at full speed, copies out the changed words and tokenises them, in order, between
// its reads (the collector's token streams are lent to it); the collector then only samples the
// other value choices. Runs of a bundle are hashed as one concatenation: every run but the
// last holds whole 64-byte stripes, and all of them at least XXH3's long input (scan_runs).
uint64_t FrameEncoder::collect_fused(const Run* runs, size_t n, uint64_t count, Hashes* hashes) {
  Scratch& s = *scratch_;
  const ChangedWords words{s.base_words.reserve(count + 32), s.target_words.reserve(count + 32)};
  s.base_stripes.start(count * 2);
  s.target_stripes.start(count * 2);
  uint64_t changed = 0, at = 0;
  ScanTokens tokens = s.collector.lend_tokens();
  for (const Run* run = runs; run < runs + n; ++run) {
    uint32_t* found_at = s.positions.data() + changed;
    const ChangedWords run_words{words.base + changed, words.target + changed};
    const uint64_t found = scan_and_hash(run->base, run->target, 0, run->elements, found_at, &s.base_stripes,
                                         &s.target_stripes, run_words, at, &tokens);
    if (at > 0) {
      for (uint64_t j = 0; j < found; ++j) found_at[j] += static_cast<uint32_t>(at);
    }
    changed += found;
    at += run->elements;
  }
  s.collector.take_back(tokens);
  s.collector.add(nullptr, nullptr, s.positions.data(), changed, words);
  if (n == 1) {
    *hashes = Hashes{s.base_stripes.finish(runs[0].base), s.target_stripes.finish(runs[0].target)};
    return changed;
  }
  alignas(64) uint8_t last_base[64], last_target[64];
  last_stripe(n, [&](size_t k) { return std::pair(runs[k].base, runs[k].elements * 2); }, last_base);
  last_stripe(n, [&](size_t k) { return std::pair(runs[k].target, runs[k].elements * 2); }, last_target);
  *hashes = Hashes{s.base_stripes.finish_long(last_base), s.target_stripes.finish_long(last_target)};
  return changed;
}

// Scans, hashes and tokenises block by block, so each block is read from memory once and worked on
// while it is still in cache.
uint64_t FrameEncoder::collect_by_block(const Region& base, const Region& target, Hashes* hashes) {
  constexpr uint64_t kBlockElements = 1 << 14;
  Scratch& s = *scratch_;
  const unsigned width = base.width;
  const uint64_t count = base.box.elements();
  s.base_hash.reset();
  s.target_hash.reset();
  uint64_t changed = 0;
  for (uint64_t begin = 0; begin < count; begin += kBlockElements) {
    const uint64_t end = std::min(count, begin + kBlockElements);
    uint32_t* found_at = s.positions.data() + changed;
    const uint64_t found = scan_changes_in(base.data, target.data, begin, end, width, found_at);
    s.collector.add(base.data, target.data, found_at, found);
    changed += found;
    s.base_hash.update(base.data + begin * width, (end - begin) * width);
    s.target_hash.update(target.data + begin * width, (end - begin) * width);
  }
  *hashes = Hashes{s.base_hash.digest(), s.target_hash.digest()};
  return changed;
}

Status FrameEncoder::encode_delta_at(const Region& base_in, const Region& target_in, const uint32_t* positions,
                                     uint64_t changed, Versions versions, std::vector<uint8_t>* frame,
                                     EncodeStats* stats) {
  DCR_TRY(check_pair(base_in, target_in));
  DCR_REQUIRE(changed <= base_in.box.elements(), Code::invalid_argument, "more changed positions than elements");
  Scratch& s = *scratch_;
  s.started = std::chrono::steady_clock::now();
  const Region base = dense_region(base_in.box, base_in.width, dense_bytes(base_in, &s.base_copy));
  const Region target = dense_region(target_in.box, target_in.width, dense_bytes(target_in, &s.target_copy));
  s.collector.start(base.width, delta_mode(), base.box.elements(), changed);
  s.words_copied = false;
  s.collector.add(base.data, target.data, positions, changed);
  s.collector.finish();
  const Hashes hashes{region_hash(base), region_hash(target)};
  return encode(base, target, positions, changed, hashes, versions, frame, stats);
}

PosCoding FrameEncoder::choose_positions(uint64_t count, const uint32_t* positions, uint64_t changed) {
  if (options_.pos_coding) return *options_.pos_coding;
  if (changed == count) return PosCoding::all;
  // Gap tokens win on sparse changes; bitmaps are measured only where they may win, varints only
  // in exhaustive mode.
  if (!options_.exhaustive && changed * 16 < count) return PosCoding::gaps_token;
  Scratch& s = *scratch_;
  static constexpr PosCoding kSparse[] = {PosCoding::gaps_token, PosCoding::bitmap, PosCoding::gaps_varint};
  PosCoding best = PosCoding::gaps_token;
  double best_size = -1;
  for (PosCoding coding : kSparse) {
    if (coding == PosCoding::gaps_varint && !options_.exhaustive) continue;
    build_positions(coding, positions, changed, count, &s.candidate);
    const double size = measure(s.candidate, options_, &s.codec, &s.trial);
    if (best_size < 0 || size < best_size) {
      best_size = size;
      best = coding;
    }
  }
  return best;
}

ValueChoice FrameEncoder::choose_values(const Region& base, const Region& target, const uint32_t* positions,
                                        uint64_t changed) {
  Scratch& s = *scratch_;
  const ValueChoice choices[] = {{delta_mode(), ValuePacking::tokens},
                                 {ValueMode::xor_mask, ValuePacking::tokens},
                                 {ValueMode::overwrite, ValuePacking::planes},
                                 {ValueMode::xor_mask, ValuePacking::planes},
                                 {ValueMode::overwrite, ValuePacking::words}};
  constexpr int kChoices = 5;
  if (options_.value_mode && !options_.value_packing) {  // a forced mode takes its best packing
    return ValueChoice{*options_.value_mode,
                       *options_.value_mode == ValueMode::overwrite ? ValuePacking::planes : ValuePacking::tokens};
  }
  if (options_.value_mode) return ValueChoice{*options_.value_mode, *options_.value_packing};
  const ValueCosts costs = s.collector.costs();
  double sizes[] = {costs.delta_tokens, costs.xor_tokens, costs.overwrite_planes, costs.xor_planes,
                    static_cast<double>(changed * base.width + 3)};
  if (options_.exhaustive) {  // replace the estimates by the sizes actually written
    for (int i = 0; i < kChoices; ++i) {
      mode_words(choices[i].mode, base, target, positions, changed, s.words.data());
      build_values(choices[i].packing, s.words.data(), changed, base.width, &s.candidate);
      sizes[i] = measure(s.candidate, options_, &s.codec, &s.trial);
    }
  }
  int best = 0;
  for (int i = 0; i < kChoices; ++i) {
    if (options_.value_packing && choices[i].packing != *options_.value_packing) continue;
    const bool allowed_best = !options_.value_packing || choices[best].packing == *options_.value_packing;
    if (!allowed_best || sizes[i] < sizes[best]) best = i;
  }
  return choices[best];
}

// Each change's word in `mode`: from the words the fused scan copied out where it did (the boxes are
// not read again), else from the boxes.
void FrameEncoder::mode_words(ValueMode mode, const Region& base, const Region& target, const uint32_t* positions,
                              uint64_t changed, uint64_t* words) {
  Scratch& s = *scratch_;
  if (!s.words_copied) return gather_words(base.data, target.data, base.width, mode, positions, changed, words);
  const uint16_t* old_words = s.base_words.data();
  const uint16_t* new_words = s.target_words.data();
  for (uint64_t j = 0; j < changed; ++j) words[j] = encode_word(mode, old_words[j], new_words[j], 2);
}

// The value section of the chosen mode and packing: ordered-delta tokens come ready from the
// collector, other choices are built here.
const Section& FrameEncoder::value_section(ValueChoice choice, const Region& base, const Region& target,
                                           const uint32_t* positions, uint64_t changed) {
  Scratch& s = *scratch_;
  if (choice.packing == ValuePacking::joint) return s.joint_values;
  if (choice.packing == ValuePacking::contexts) return s.context_values;
  if (choice.mode == delta_mode() && choice.packing == ValuePacking::tokens) return s.collector.delta_tokens();
  mode_words(choice.mode, base, target, positions, changed, s.words.data());
  build_values(choice.packing, s.words.data(), changed, base.width, &s.best);
  return s.best;
}

const Section& FrameEncoder::position_section(PosCoding coding, uint64_t count, const uint32_t* positions,
                                              uint64_t changed) {
  Scratch& s = *scratch_;
  if (coding == PosCoding::gaps_token) return s.collector.gap_tokens();
  if (coding == PosCoding::gaps_joint) return s.joint_positions;
  build_positions(coding, positions, changed, count, &s.best);
  return s.best;
}

// The gaps-joint sections of the changes' gap tokens and `mode` words.
void FrameEncoder::build_joint_sections(ValueMode mode, const Region& base, const Region& target,
                                        const uint32_t* positions, uint64_t changed) {
  Scratch& s = *scratch_;
  const Section& values = value_section({mode, ValuePacking::tokens}, base, target, positions, changed);
  build_joint(s.collector.gap_tokens(), values, &s.joint_positions, &s.joint_values);
}

namespace {

// The tokens of a stream of value tokens that are not one-step words (1 or 2), of `total`: the
// escapes gaps-joint would code apart (long gaps escape too, at most 0.5% of them).
uint64_t non_steps(const RawStream& tokens, uint64_t* total) {
  const Histogram counts = tokens.histogram();
  *total = 0;
  for (uint64_t c : counts) *total += c;
  return *total - counts[1] - counts[2];
}

}  // namespace

// Whether gap tokens and value tokens go as gaps-joint (the joint sections are then built): when
// neither is forced, the joint sections come within the slack of the pair's bytes, and their
// escapes are at most a third of the changes (below that receivers decode fewer rANS symbols: one a
// change and two an escape, against two a change) yet long enough for the 32-state coder (a shorter
// escape stream would make encode slower than with the pair).
bool FrameEncoder::joint_pays(PosCoding pos, ValueChoice values, const Region& base, const Region& target,
                              const uint32_t* positions, uint64_t changed) {
  if (options_.pos_coding || options_.value_packing || changed == 0) return false;
  if (pos != PosCoding::gaps_token || values.packing != ValuePacking::tokens) return false;
  Scratch& s = *scratch_;
  const Section& value_tokens = value_section(values, base, target, positions, changed);
  uint64_t total = 0;
  const uint64_t escapes = non_steps(value_tokens.streams[0], &total);
  if (escapes < kWideRansSymbols || 3 * escapes > total) return false;
  const double apart = measure(s.collector.gap_tokens(), options_, &s.codec, &s.trial) +
                       measure(value_tokens, options_, &s.codec, &s.trial);
  build_joint_sections(values.mode, base, target, positions, changed);
  const double joint = measure(s.joint_positions, options_, &s.codec, &s.trial) +
                       measure(s.joint_values, options_, &s.codec, &s.trial);
  return joint <= apart * (1 + options_.joint_slack);
}

// The context of each change (from its base bits), and the rule for them: returns the estimated bytes
// of the context value section.
double FrameEncoder::choose_contexts(const Region& base, const uint32_t* positions, uint64_t changed) {
  Scratch& s = *scratch_;
  const unsigned width = base.width, shift = *options_.context_shift;
  uint8_t* contexts = s.base_contexts.reserve(changed);
  if (s.words_copied) {  // the scan copied the base words out: no second look at the box
    contexts_of(s.base_words.data(), changed, shift, contexts);
  } else {
    for (uint64_t j = 0; j < changed; ++j) {
      contexts[j] = static_cast<uint8_t>(load_word(base.data, positions[j], width) >> shift);
    }
  }
  const Section& tokens = s.collector.delta_tokens();
  return s.contexts.choose(contexts, tokens.streams[0].data(), changed, static_cast<uint8_t>(shift)) + 3 +
         static_cast<double>(tokens.streams[1].size());
}

// Whether the delta words' tokens go by the contexts of their base bits (the section is then
// built): when forced, or when the options ask for contexts and give a shift, nothing else is
// forced, the frame's values are delta tokens (alone or joint), and gap tokens with the context
// section come out smaller.
bool FrameEncoder::contexts_pay(PosCoding pos, ValueChoice values, const Region& base, const uint32_t* positions,
                                uint64_t changed) {
  constexpr uint64_t kLeastChanges = 64;  // fewer do not pay for a second table
  Scratch& s = *scratch_;
  const Section& tokens = s.collector.delta_tokens();
  if (options_.value_packing == ValuePacking::contexts) {
    choose_contexts(base, positions, changed);
  } else {
    if (!options_.contexts || !options_.context_shift || options_.value_packing || options_.pos_coding ||
        changed < kLeastChanges) {
      return false;
    }
    if (values.mode != delta_mode() || (pos != PosCoding::gaps_token && pos != PosCoding::gaps_joint)) return false;
    const double gaps = measure(s.collector.gap_tokens(), options_, &s.codec, &s.trial);
    const double current = pos == PosCoding::gaps_joint
                               ? measure(s.joint_positions, options_, &s.codec, &s.trial) +
                                     measure(s.joint_values, options_, &s.codec, &s.trial)
                               : gaps + measure(tokens, options_, &s.codec, &s.trial);
    if (options_.context_rule) {
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
      s.declined = !options_.context_rule(ContextQuestion{changed, current, spent});
      if (s.declined) return false;
    }
    if (gaps + choose_contexts(base, positions, changed) >= current) return false;
  }
  s.contexts.build(s.base_contexts.data(), tokens, &s.codec, &s.context_values);
  return true;
}

Status FrameEncoder::encode(const Region& base, const Region& target, const uint32_t* positions, uint64_t changed,
                            const Hashes& hashes, Versions versions, std::vector<uint8_t>* frame,
                            EncodeStats* stats) {
  Scratch& s = *scratch_;
  const unsigned width = base.width;
  const uint64_t count = base.box.elements();
  s.declined = false;
  FrameHeader header;
  header.box = base.box;
  header.elem_width = static_cast<uint8_t>(width);
  header.changed = changed;
  header.base_version = versions.base;
  header.target_version = versions.target;
  header.base_hash = hashes.base;
  header.target_hash = hashes.target;
  const bool joint_forced = options_.pos_coding == PosCoding::gaps_joint || options_.value_packing == ValuePacking::joint;
  DCR_REQUIRE(!joint_forced || (options_.pos_coding.value_or(PosCoding::gaps_joint) == PosCoding::gaps_joint &&
                                options_.value_packing.value_or(ValuePacking::joint) == ValuePacking::joint),
              Code::invalid_argument, "position coding gaps-joint and value packing joint come only together");
  DCR_REQUIRE(options_.value_packing != ValuePacking::contexts ||
                  (options_.context_shift && options_.value_mode.value_or(delta_mode()) == delta_mode() &&
                   options_.pos_coding != PosCoding::gaps_joint),
              Code::invalid_argument, "value packing contexts needs a context shift, delta words and no joint positions");
  s.words.reserve(changed);
  header.pos_coding = joint_forced ? PosCoding::gaps_joint : choose_positions(count, positions, changed);
  DCR_REQUIRE(header.pos_coding != PosCoding::all || changed == count, Code::invalid_argument,
              "position coding 'all' needs every element changed");
  ValueChoice values{options_.value_mode.value_or(delta_mode()), ValuePacking::joint};
  if (joint_forced) {
    build_joint_sections(values.mode, base, target, positions, changed);
  } else {
    values = choose_values(base, target, positions, changed);
    if (joint_pays(header.pos_coding, values, base, target, positions, changed)) {
      header.pos_coding = PosCoding::gaps_joint;
      values.packing = ValuePacking::joint;
    }
    if (contexts_pay(header.pos_coding, values, base, positions, changed)) {
      if (header.pos_coding == PosCoding::gaps_joint) header.pos_coding = PosCoding::gaps_token;
      values.packing = ValuePacking::contexts;
    }
  }
  header.value_mode = values.mode;
  header.value_packing = values.packing;

  std::vector<uint8_t>& out = *frame;
  start_frame(s.bundle, &header, &out);
  const size_t position_bytes = s.bundle.size() + position_section(header.pos_coding, count, positions, changed)
                                    .write(&s.codec, options_.zstd_level, options_.exhaustive, &out);
  const size_t value_bytes = value_section(values, base, target, positions, changed)
                                 .write(&s.codec, options_.zstd_level, options_.exhaustive, &out);
  finish_frame(&header, &out);
  if (stats != nullptr) {
    *stats = EncodeStats{changed, out.size(), position_bytes, value_bytes,
                         header.pos_coding, header.value_mode, header.value_packing, s.declined};
  }
  return Status::ok();
}

Status FrameEncoder::encode_full(const Region& target_in, uint64_t target_version, std::vector<uint8_t>* frame,
                                 EncodeStats* stats) {
  DCR_TRY(check_frame_region(target_in));
  Scratch& s = *scratch_;
  const unsigned width = target_in.width;
  const uint64_t count = target_in.box.elements();
  const uint8_t* target = dense_bytes(target_in, &s.target_copy);

  FrameHeader header;
  header.box = target_in.box;
  header.elem_width = static_cast<uint8_t>(width);
  header.pos_coding = PosCoding::all;
  header.value_mode = ValueMode::overwrite;
  header.value_packing = ValuePacking::words;
  header.flags = kFrameFlagFull;
  header.changed = count;
  header.base_version = target_version;
  header.target_version = target_version;
  header.target_hash = hash64(target, count * width);

  std::vector<uint8_t>& out = *frame;
  start_frame(s.bundle, &header, &out);
  StreamOptions raw;
  raw.raw_only = true;
  s.codec.write(target, count * width, raw, &out);
  const uint64_t value_bytes = out.size() - kFrameHeaderBytes - s.bundle.size();
  finish_frame(&header, &out);
  if (stats != nullptr) {
    *stats = EncodeStats{count, out.size(), 0, value_bytes, header.pos_coding, header.value_mode,
                         header.value_packing};
  }
  return Status::ok();
}

}  // namespace dcr
