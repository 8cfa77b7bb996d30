#include "src/codec/tokens/token_reader.h"

namespace dcr {

Status TokenReader::open(ByteReader* reader, StreamCodec* stream_codec, uint64_t count, int first_slot,
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

Status TokenReader::open_extras(ByteReader* reader, StreamCodec* stream_codec, uint64_t count,
                                const uint8_t* from, int extras_slot, const char* name) {
  codec = stream_codec;
  slot = -1;  // no symbol stream of its own
  what = name;
  n = count;
  done = bit_pos = 0;
  symbols = from;
  return codec->read(reader, 8 * n, extras_slot, &extras, &extra_bytes);
}

}  // namespace dcr
