#include "src/codec/encode/section.h"

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

}  // namespace dcr
