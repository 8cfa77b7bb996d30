#include "src/codec/decode/plain_sections.h"

#include <string>

#include "dcr/codec/scan.h"

namespace dcr {

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

}  // namespace dcr
