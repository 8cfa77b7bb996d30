#include "src/codec/decode/change_reader.h"

#include <algorithm>
#include <string>

#include "src/codec/common/buffer.h"
#include "src/codec/decode/plain_sections.h"
#include "src/codec/tokens/joint.h"

namespace dcr {

Status ChangeReader::open(const FrameHeader& header, ByteReader* payload, StreamCodec* codec, uint32_t* positions,
                          uint64_t* words, const std::vector<ElementRun>* base) {
  h_ = header;
  base_ = base;
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
  if (joint_) {
    lazy_values_ = false;
    grow_to(&escape_words_, escapes_);
    return values_.open(payload, codec_, escapes_, 2, "escape value token");
  }
  if (contexts_) {
    lazy_values_ = false;
    return context_values_.open(payload, codec_, h_.changed, h_.elem_width, base_);
  }
  lazy_values_ = h_.value_packing == ValuePacking::tokens;
  if (lazy_values_) return values_.open(payload, codec_, h_.changed, 2, "value token");
  return read_value_bytes(h_.value_packing, payload, codec_, h_.changed, h_.elem_width, words_);
}

Status ChangeReader::decode(uint64_t upto) {
  if (joint_) DCR_TRY(decode_joint(upto));
  if (lazy_gaps_) DCR_TRY(decode_token_gaps(&gaps_, upto, h_.count(), &next_, positions_, !joint_));
  if (lazy_values_) DCR_TRY(decode_token_words(&values_, upto, h_.elem_width, words_));
  if (contexts_ && !defer_) DCR_TRY(decode_contexts(upto));
  done_ = upto;
  return Status::ok();
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
    DCR_TRY(decode_token_words(&values_, ready, h_.elem_width, escape_words_.data()));
    escapes_ready_ = ready;
  }
  escapes_used_ += merge_joint(joint_bytes_ + done_, upto - done_, escape_gaps_ + escapes_used_,
                               escape_words_.data() + escapes_used_, gap_tokens_.data() + done_, words_ + done_);
  DCR_REQUIRE(upto < h_.changed || escapes_used_ == escapes_, Code::corrupt,
              "escape streams hold more changes than the joint stream escapes");
  return Status::ok();
}

// Words [context_values_.done(), upto), their tokens decoded ahead to the next multiple of kSlice:
// those changes' positions are decoded (decode's slices are whole) and their base bits still in place.
Status ChangeReader::decode_contexts(uint64_t upto) {
  const uint64_t ahead = std::min<uint64_t>(h_.changed, (upto + kSlice - 1) / kSlice * kSlice);
  return context_values_.decode(upto, ahead, positions_, words_);
}

}  // namespace dcr
