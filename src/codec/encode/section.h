// Internal to the codec: a section of a frame's payload (positions, then values) as the encoder
// builds it, a list of byte streams; build_section.h fills them, and write() sends each through the
// entropy stage (or as it is) into the frame. The decode side reads them back in
// src/codec/decode/change_reader.h.
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/codec/rans.h"
#include "dcr/codec/stream.h"

namespace dcr {

struct RawStream {
  std::vector<uint8_t> bytes;  // the stream, unless it is a view
  // Or a view of bytes held elsewhere for as long as the section is used (the token writers'
  // buffers), so that finishing a stream copies nothing.
  const uint8_t* view = nullptr;
  size_t view_size = 0;
  const uint8_t* data() const { return view != nullptr ? view : bytes.data(); }
  size_t size() const { return view != nullptr ? view_size : bytes.size(); }
  bool try_zstd = false;
  bool raw_only = false;  // stored as is (no entropy stage) unless the encoder tries every coder
  bool counted = false;  // `hist` already holds the byte histogram
  bool coded = false;    // `bytes` are a whole stream already (header and code): written as they are
  Histogram hist;
  Histogram histogram() const;  // `hist` where counted, else counted now
};

struct Section {
  std::vector<RawStream> streams;
  void reset(size_t count);
  double estimate() const;  // coded size if each stream takes the better of raw and rANS
  size_t write(StreamCodec* codec, int zstd_level, bool zstd_everywhere, std::vector<uint8_t>* out) const;
};

}  // namespace dcr
