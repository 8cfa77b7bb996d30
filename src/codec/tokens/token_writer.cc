#include "src/codec/tokens/token_writer.h"

#include "dcr/codec/stream.h"

namespace dcr {

double token_pair_cost(const Histogram& hist, uint64_t count, uint64_t extra_bits) {
  return StreamCodec::estimate(hist, count) + (extra_bits + 7) / 8 + 3;
}

void TokenWriter::start(Section* section, uint64_t capacity, unsigned max_extra_bits) {
  section_ = section;
  section->reset(2);
  section->streams[1].raw_only = true;  // the low bits of tokens are close to uniform
  cursor_ = Cursor{symbols_.reserve(capacity + 16), 0,
                   BitPacker(bits_.reserve(BitPacker::capacity(capacity * max_extra_bits))), 0};
}

void TokenWriter::finish() {
  RawStream& symbols = section_->streams[0];
  symbols.view = cursor_.symbols;
  symbols.view_size = cursor_.count;
  sampled_histogram_of(symbols.view, cursor_.count, cursor_.max_symbol, &symbols.hist);
  symbols.counted = true;
  section_->streams[1].view = bits_.data();
  section_->streams[1].view_size = cursor_.bits.bytes();
}

double TokenWriter::cost() const {
  return token_pair_cost(section_->streams[0].hist, cursor_.count, cursor_.bits.bits());
}

}  // namespace dcr
