#include "dcr/codec/frame.h"

#include "dcr/codec/byte_io.h"
#include "dcr/core/hash.h"

namespace dcr {

std::string FrameHeader::describe() const {
  const std::string what =
      is_bundle() ? "bundle " + std::to_string(box.row0) + " of " + std::to_string(box.cols) + " elements" : box.describe();
  return what + " v" + std::to_string(base_version) + "->v" + std::to_string(target_version) +
         (is_full() ? " (full)" : "");
}

// Byte layout (little-endian):
//   0 magic u32 | 4 format version u16 | 6 header bytes u16 | 8 tensor id u32 | 12 element width u8
//  13 position coding u8 | 14 value mode u8 | 15 value packing u8 | 16 flags u8 | 17 seal u8
//  18 key id u32 | 22..23 zero
//  24 row0 u64 | 32 rows u64 | 40 col0 u64 | 48 cols u64 | 56 changed u64 | 64 base version u64
//  72 target version u64 | 80 base hash u64 | 88 target hash u64 | 96 payload bytes u64
// 104 payload hash u64 | 112 header hash u64 (hash64 of bytes 0..111)
void write_frame_header(const FrameHeader& h, uint8_t* out) {
  std::vector<uint8_t> b;
  b.reserve(kFrameHeaderBytes);
  put_le(&b, kFrameMagic, 4);
  put_le(&b, kFrameFormatVersion, 2);
  put_le(&b, kFrameHeaderBytes, 2);
  put_le(&b, h.box.tensor, 4);
  put_le(&b, h.elem_width, 1);
  put_le(&b, static_cast<uint8_t>(h.pos_coding), 1);
  put_le(&b, static_cast<uint8_t>(h.value_mode), 1);
  put_le(&b, static_cast<uint8_t>(h.value_packing), 1);
  put_le(&b, h.flags, 1);
  put_le(&b, static_cast<uint8_t>(h.seal), 1);
  put_le(&b, h.key_id, 4);
  put_le(&b, 0, 2);
  for (uint64_t v : {h.box.row0, h.box.rows, h.box.col0, h.box.cols, h.changed, h.base_version,
                     h.target_version, h.base_hash, h.target_hash, h.payload_bytes, h.payload_hash}) {
    put_le(&b, v, 8);
  }
  put_le(&b, hash64(b.data(), b.size()), 8);
  std::copy(b.begin(), b.end(), out);
}

size_t seal_trailer_bytes(Seal seal) {
  switch (seal) {
    case Seal::none: return 0;
    case Seal::hmac_sha256: return 32;
    case Seal::aes256_gcm: return 12 + 16;
  }
  return 0;
}

namespace {
Status check_fields(const uint8_t* p, FrameHeader* h) {
  const uint64_t magic = get_le(p, 4);
  DCR_REQUIRE(magic == kFrameMagic, Code::corrupt, "not a dcr frame (bad magic)");
  const uint64_t version = get_le(p + 4, 2);
  DCR_REQUIRE(version == kFrameFormatVersion, Code::corrupt,
              "frame format version " + std::to_string(version) + " is not supported (this build reads " +
                  std::to_string(kFrameFormatVersion) + ")");
  DCR_REQUIRE(get_le(p + 6, 2) == kFrameHeaderBytes, Code::corrupt, "frame header has the wrong size");
  DCR_REQUIRE(get_le(p + 112, 8) == hash64(p, 112), Code::corrupt, "frame header checksum mismatch");
  h->box.tensor = static_cast<uint32_t>(get_le(p + 8, 4));
  h->elem_width = p[12];
  DCR_REQUIRE(h->elem_width == 1 || h->elem_width == 2 || h->elem_width == 4 || h->elem_width == 8,
              Code::corrupt, "frame element width " + std::to_string(h->elem_width) + " is not 1, 2, 4 or 8");
  DCR_REQUIRE(p[13] < kPosCodingCount, Code::corrupt, "unknown position coding");
  DCR_REQUIRE(p[14] < kValueModeCount, Code::corrupt, "unknown value mode");
  DCR_REQUIRE(p[15] < kValuePackingCount, Code::corrupt, "unknown value packing");
  DCR_REQUIRE((p[16] & ~(kFrameFlagFull | kFrameFlagBundle)) == 0 && get_le(p + 22, 2) == 0, Code::corrupt,
              "frame header has unknown flags or non-zero reserved bytes");
  DCR_REQUIRE(p[17] < kSealCount, Code::corrupt, "unknown frame seal " + std::to_string(p[17]));
  h->seal = static_cast<Seal>(p[17]);
  h->key_id = static_cast<uint32_t>(get_le(p + 18, 4));
  DCR_REQUIRE(h->seal != Seal::none || h->key_id == 0, Code::corrupt, "unsealed frame names a key id");
  h->pos_coding = static_cast<PosCoding>(p[13]);
  h->value_mode = static_cast<ValueMode>(p[14]);
  h->value_packing = static_cast<ValuePacking>(p[15]);
  h->flags = p[16];
  uint64_t* fields[] = {&h->box.row0, &h->box.rows, &h->box.col0, &h->box.cols, &h->changed,
                        &h->base_version, &h->target_version, &h->base_hash, &h->target_hash,
                        &h->payload_bytes, &h->payload_hash};
  for (int i = 0; i < 11; ++i) *fields[i] = get_le(p + 24 + 8 * i, 8);
  const Box& b = h->box;
  DCR_REQUIRE(b.rows <= kMaxFrameElements && b.cols <= kMaxFrameElements && b.rows * b.cols <= kMaxFrameElements,
              Code::corrupt, "frame box holds more than 2^32-1 elements");
  DCR_REQUIRE(b.row0 <= UINT64_MAX - b.rows && b.col0 <= UINT64_MAX - b.cols, Code::corrupt, "frame box overflows");
  DCR_REQUIRE(h->changed <= h->count(), Code::corrupt, "frame claims more changes than elements");
  DCR_REQUIRE(h->pos_coding != PosCoding::all || h->changed == h->count(), Code::corrupt,
              "frame codes positions as 'all' but not every element changed");
  DCR_REQUIRE((h->pos_coding == PosCoding::gaps_joint) == (h->value_packing == ValuePacking::joint), Code::corrupt,
              "position coding gaps-joint and value packing joint come only together");
  DCR_REQUIRE(!h->is_full() || (h->pos_coding == PosCoding::all && h->value_mode == ValueMode::overwrite &&
                                h->value_packing == ValuePacking::words),
              Code::corrupt, "full frame not coded as all / overwrite / words");
  DCR_REQUIRE((b.tensor == kBundleTensor) == h->is_bundle() && (!h->is_bundle() || (b.rows == 1 && b.col0 == 0)),
              Code::corrupt, "bundle flag, tensor id and box disagree (a bundle is one row of tensor 0xffffffff "
                             "from column 0)");
  return Status::ok();
}
}  // namespace

Status peek_frame_header(const uint8_t* frame, size_t size, FrameHeader* header) {
  DCR_REQUIRE(size >= kFrameHeaderBytes, Code::corrupt,
              "frame truncated: " + std::to_string(size) + " bytes, header alone needs " +
                  std::to_string(kFrameHeaderBytes));
  DCR_TRY(check_fields(frame, header));
  const uint64_t body = size - kFrameHeaderBytes, trailer = seal_trailer_bytes(header->seal);
  DCR_REQUIRE(body >= trailer && header->payload_bytes == body - trailer, Code::corrupt,
              "frame " + header->describe() + ": payload" + (trailer ? " and seal are " : " is ") +
                  std::to_string(body) + " bytes, header says " + std::to_string(header->payload_bytes) +
                  (trailer ? " + " + std::to_string(trailer) : "") +
                  (body < header->payload_bytes + trailer ? " (truncated)" : " (trailing bytes)"));
  return Status::ok();
}

Status check_stored_frame(const uint8_t* frame, size_t size, FrameHeader* header) {
  DCR_TRY(peek_frame_header(frame, size, header));
  return header->seal == Seal::none ? parse_frame_header(frame, size, header) : Status::ok();
}

Status parse_frame_header(const uint8_t* frame, size_t size, FrameHeader* header) {
  FrameView view;
  DCR_TRY(view_frame(frame, size, &view));
  DCR_TRY(check_payload(&view));
  *header = view.header;
  return Status::ok();
}

Status view_frame(const uint8_t* frame, size_t size, FrameView* out) {
  *out = FrameView{frame, size, FrameHeader{}, false};
  return peek_frame_header(frame, size, &out->header);
}

Status check_payload(FrameView* view) {
  if (view->payload_checked) return Status::ok();
  const FrameHeader& h = view->header;
  DCR_REQUIRE(h.seal == Seal::none, Code::corrupt,
              "frame " + h.describe() + " is sealed (" + seal_name(h.seal) + ", key " + std::to_string(h.key_id) +
                  "): it must be opened with the job's key before it is applied");
  DCR_REQUIRE(hash64(view->payload(), view->size - kFrameHeaderBytes) == h.payload_hash, Code::corrupt,
              "frame " + h.describe() + ": payload checksum mismatch");
  view->payload_checked = true;
  return Status::ok();
}

}  // namespace dcr
