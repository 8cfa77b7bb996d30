#include "dcr/codec/stream.h"

#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "src/codec/buffer.h"

namespace dcr {

struct StreamCodec::Impl {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::vector<uint8_t> candidate;
  std::vector<uint8_t> rans_scratch;
  Histogram hist;
  RansTable table;
  struct Reading {  // one stream being read
    std::vector<uint8_t> decoded;
    RansTable table;
    std::vector<RansSlot> lookup;
    RansDecoder rans;
    bool lazy = false;  // rANS: decoded as far as asked
  };
  Reading reading[kStreamSlots];
  ~Impl() {
    ZSTD_freeCCtx(cctx);
    ZSTD_freeDCtx(dctx);
  }
};

StreamCodec::StreamCodec() : impl_(new Impl) {}
StreamCodec::~StreamCodec() { delete impl_; }

namespace {
unsigned rans_lanes(Coder coder) { return coder == Coder::rans32 ? 32 : 4; }

void put_stream(Coder coder, size_t size, const uint8_t* code, size_t code_size,
                std::vector<uint8_t>* out) {
  out->push_back(static_cast<uint8_t>(coder));
  put_varint(out, size);
  put_varint(out, code_size);
  out->insert(out->end(), code, code + code_size);
}
}  // namespace

// `size` symbols at the Shannon cost of the counts' distribution, the table (a symbol byte and a
// frequency of one or two bytes per present symbol) and the flushed states: close to what rANS
// writes, without building its table (encoders estimate several choices per frame, and frames can
// be small).
double StreamCodec::estimate(const Histogram& hist, size_t size) {
  const double header = 1 + varint_bytes(size) + varint_bytes(size);
  double total = 0;
  for (uint64_t c : hist) total += static_cast<double>(c);
  if (size == 0 || total == 0) return header;
  double bits = 0, table = 1;
  const double log_total = std::log2(total), two_byte_count = 128.0 * total / kRansProbScale;
  for (uint64_t c : hist) {
    if (c == 0) continue;
    bits += static_cast<double>(c) * (log_total - std::log2(static_cast<double>(c)));
    table += c >= two_byte_count ? 3 : 2;
  }
  const double payload = bits / total * static_cast<double>(size) / 8;
  const double states = 4.0 * rans_lanes(size >= kWideRansSymbols ? Coder::rans32 : Coder::rans);
  return header + std::min<double>(static_cast<double>(size), table + payload + states);
}

Coder StreamCodec::write(const uint8_t* data, size_t size, const StreamOptions& options,
                         std::vector<uint8_t>* out, const Histogram* hist) {
  Impl& m = *impl_;
  Coder best = Coder::raw;
  size_t best_size = size;
  if (size > 0 && !options.raw_only) {
    if (hist == nullptr) histogram_of(data, size, &m.hist);
    m.table.build(hist != nullptr ? *hist : m.hist);
    m.candidate.clear();
    m.table.write(&m.candidate);
    const Coder rans = size >= kWideRansSymbols ? Coder::rans32 : Coder::rans;
    rans_encode(data, size, m.table, rans_lanes(rans), &m.rans_scratch, &m.candidate);
    if (m.candidate.size() < best_size) {
      best = rans;
      best_size = m.candidate.size();
    }
  }
  if (options.try_zstd && !options.raw_only && size > 0) {
    std::vector<uint8_t>& z = m.rans_scratch;  // rANS scratch is free again here
    z.resize(ZSTD_compressBound(size));
    const size_t zsize = ZSTD_compressCCtx(m.cctx, z.data(), z.size(), data, size, options.zstd_level);
    if (!ZSTD_isError(zsize) && zsize < best_size) {
      put_stream(Coder::zstd, size, z.data(), zsize, out);
      return Coder::zstd;
    }
  }
  if (best == Coder::rans || best == Coder::rans32) {
    put_stream(best, size, m.candidate.data(), m.candidate.size(), out);
  } else {
    put_stream(Coder::raw, size, data, size, out);
  }
  return best;
}

Status StreamCodec::read(ByteReader* reader, size_t max_size, int slot, const uint8_t** data,
                         size_t* decoded_size) {
  DCR_TRY(open(reader, max_size, slot, data, decoded_size));
  return decode(slot, *decoded_size);
}

Status StreamCodec::open(ByteReader* reader, size_t max_size, int slot, const uint8_t** data,
                         size_t* decoded_size) {
  Impl::Reading& r = impl_->reading[slot];
  r.lazy = false;
  uint64_t coder = 0, size = 0, code_size = 0;
  DCR_TRY(reader->read_le(1, &coder));
  DCR_TRY(reader->read_varint(&size));
  DCR_TRY(reader->read_varint(&code_size));
  DCR_REQUIRE(size <= max_size, Code::corrupt,
              "stream holds " + std::to_string(size) + " bytes where the header allows at most " +
                  std::to_string(max_size));
  *decoded_size = size;
  const uint8_t* code;
  DCR_TRY(reader->take(code_size, &code));
  std::vector<uint8_t>& out = r.decoded;
  switch (static_cast<Coder>(coder)) {
    case Coder::raw:
      DCR_REQUIRE(code_size == size, Code::corrupt, "raw stream length differs from its size");
      *data = code;
      return Status::ok();
    case Coder::zstd: {
      grow_to(&out, size);
      const size_t got = ZSTD_decompressDCtx(impl_->dctx, out.data(), size, code, code_size);
      DCR_REQUIRE(!ZSTD_isError(got), Code::corrupt,
                  std::string("zstd stream: ") + ZSTD_getErrorName(got));
      DCR_REQUIRE(got == size, Code::corrupt, "zstd stream decodes to the wrong length");
      *data = out.data();
      return Status::ok();
    }
    case Coder::rans:
    case Coder::rans32: {
      ByteReader table_reader(code, code_size, "rANS table");
      DCR_TRY(r.table.read(&table_reader));
      const size_t table_size = table_reader.position();
      grow_to(&out, size);
      r.lookup.resize(kRansProbScale);
      DCR_TRY(r.rans.start(code + table_size, code_size - table_size, r.table, size,
                           rans_lanes(static_cast<Coder>(coder)), r.lookup.data()));
      r.lazy = true;
      *data = out.data();
      // A short stream (4 states) decodes in full here: a slice of it is little work next to the
      // call, and decoding the streams of a frame one after the other keeps one slot table in L1.
      return static_cast<Coder>(coder) == Coder::rans ? decode(slot, size) : Status::ok();
    }
  }
  return Status(Code::corrupt, "unknown stream coder " + std::to_string(coder));
}

Status StreamCodec::decode(int slot, size_t upto) {
  Impl::Reading& r = impl_->reading[slot];
  if (!r.lazy || upto <= r.rans.done()) return Status::ok();
  return r.rans.decode(upto, r.decoded.data());
}

}  // namespace dcr
