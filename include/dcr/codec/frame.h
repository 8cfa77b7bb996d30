// The frame: one self-describing encoded change of one canonical range, base bits -> target bits.
// docs/frame-format.md is the specification; this header is its C++ form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dcr/codec/value_mode.h"
#include "dcr/core/box.h"
#include "dcr/core/status.h"

namespace dcr {

constexpr uint32_t kFrameMagic = 0x46524344;  // "DCRF" in little-endian byte order
constexpr uint16_t kFrameFormatVersion = 4;
constexpr size_t kFrameHeaderBytes = 120;
constexpr uint64_t kMaxFrameElements = 0xffffffffull;  // positions are 32-bit offsets in the box

enum class PosCoding : uint8_t {
  all = 0,          // every element changed: no positions
  bitmap = 1,       // one bit per element, LSB first
  gaps_varint = 2,  // LEB128 gaps between changed positions
  gaps_token = 3,   // bucketed gap tokens + raw low bits
  gaps_joint = 4,   // one byte per change: its gap token with a value word of 1 or 2, or an escape
};
constexpr int kPosCodingCount = 5;

enum class ValuePacking : uint8_t {
  planes = 0,  // byte b of every word in plane b
  tokens = 1,  // bucketed word tokens + raw low bits
  words = 2,   // the words themselves, W bytes each, little-endian
  joint = 3,   // with gaps-joint positions only: the escaped changes' words, as tokens
  contexts = 4,  // word tokens in one stream per context bucket of the base bits (src/codec/contexts/)
};
constexpr int kValuePackingCount = 5;

// Applies over any destination bits (first sync, repair). A full frame always codes positions
// 'all', values 'overwrite' packed as 'words': the bits of the box as they are.
constexpr uint8_t kFrameFlagFull = 1;
// A bundle: several boxes of one element width in one frame, their elements concatenated in order
// (many small tensors share one header and one set of tables). Its header's box is the
// concatenation, tensor kBundleTensor, one row from column 0, its row0 an id for routing; the
// payload starts with the list of boxes. A bundle may be a full frame.
constexpr uint8_t kFrameFlagBundle = 2;
constexpr uint32_t kBundleTensor = 0xffffffff;
constexpr uint64_t kMaxBundleBoxes = 4096;

// How a frame is sealed (dcr/auth/seal.h): none, HMAC-SHA-256 (a 32-byte tag after the payload),
// or AES-256-GCM (payload encrypted; a 12-byte nonce and a 16-byte tag after it).
enum class Seal : uint8_t { none = 0, hmac_sha256 = 1, aes256_gcm = 2 };
constexpr int kSealCount = 3;
size_t seal_trailer_bytes(Seal seal);
const char* seal_name(Seal seal);

struct FrameHeader {
  Box box;  // the canonical elements: positions are offsets in its row-major order
  uint8_t elem_width = 0;
  PosCoding pos_coding = PosCoding::all;
  ValueMode value_mode = ValueMode::overwrite;
  ValuePacking value_packing = ValuePacking::planes;
  uint8_t flags = 0;
  Seal seal = Seal::none;
  uint32_t key_id = 0;   // the job key that sealed it (0 when not sealed)
  uint64_t changed = 0;  // elements whose bits differ between base and target
  uint64_t base_version = 0;
  uint64_t target_version = 0;
  uint64_t base_hash = 0;    // hash64 of the box's base bits, row-major
  uint64_t target_hash = 0;  // hash64 of the box's target bits
  uint64_t payload_bytes = 0;
  uint64_t payload_hash = 0;

  uint64_t count() const { return box.elements(); }
  bool is_full() const { return (flags & kFrameFlagFull) != 0; }
  bool is_bundle() const { return (flags & kFrameFlagBundle) != 0; }
  uint64_t frame_bytes() const { return kFrameHeaderBytes + payload_bytes + seal_trailer_bytes(seal); }
  std::string describe() const;  // "tensor 3 rows [0, 8) cols [0, 4096) v7->v8" for error messages
};

const char* pos_coding_name(PosCoding coding);
const char* value_mode_name(ValueMode mode);
const char* value_packing_name(ValuePacking packing);

// A bundle's boxes: 1 to kMaxBundleBoxes, each inside the 2^32-1 element limit, pairwise disjoint,
// `elements` in all.
Status check_bundle_boxes(const std::vector<Box>& boxes, uint64_t elements);

// Serialises the header (computing its own checksum) into the first kFrameHeaderBytes of `out`.
void write_frame_header(const FrameHeader& header, uint8_t* out);

// Parses and validates the header of a plain (unsealed) `frame`: every field, the header checksum,
// the total length and the payload checksum. A sealed frame is refused (open it first:
// dcr/auth/seal.h). On success the payload is frame + kFrameHeaderBytes.
Status parse_frame_header(const uint8_t* frame, size_t size, FrameHeader* header);

// The same without reading the payload (no payload checksum), sealed frames included: for relays,
// which route frames by their box and forward them undecoded, and for opening sealed frames.
Status peek_frame_header(const uint8_t* frame, size_t size, FrameHeader* header);
// A frame as stored or forwarded: a plain frame checked whole (parse_frame_header), a sealed one by
// its structure (peek_frame_header: its tag protects the payload and is checked when it is opened).
Status check_stored_frame(const uint8_t* frame, size_t size, FrameHeader* header);

// A frame as one hop reads it: its header parsed once, where its payload lies, and whether the
// payload is known to be the sender's. Sealing, routing, verifying and applying take the view, so
// a frame's header is parsed once per hop and a payload a MAC already covered is not hashed again.
struct FrameView {
  const uint8_t* data = nullptr;
  size_t size = 0;
  FrameHeader header;
  bool payload_checked = false;  // its XXH3 checksum, or a seal over it, matched
  const uint8_t* payload() const { return data + kFrameHeaderBytes; }
};

// The view of `frame` (peek_frame_header: every header field and the length; not the payload).
Status view_frame(const uint8_t* frame, size_t size, FrameView* out);
// A plain frame's payload against its checksum, once: a view already checked passes at once.
Status check_payload(FrameView* view);

}  // namespace dcr
