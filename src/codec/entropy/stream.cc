#include "dcr/codec/stream.h"

#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "src/codec/common/buffer.h"

namespace dcr {

struct StreamCodec::Impl {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  std::vector<uint8_t> candidate;
  std::vector<uint8_t> rans_scratch;
  Histogram hist;
  RansTable table;
  std::vector<RansTable> tables;  // write_buckets'
  struct Reading {  // one stream being read
    std::vector<uint8_t> decoded;
    RansTable table;
    std::vector<RansTable> tables;  // open_buckets'
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
Coder rans_coder(size_t size) { return size >= kWideRansSymbols ? Coder::rans32 : Coder::rans; }

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
  const double states = 4.0 * rans_lanes(rans_coder(size));
  return header + std::min<double>(static_cast<double>(size), estimate_table_and_code(hist, size) + states);
}

double StreamCodec::estimate_table_and_code(const Histogram& hist, size_t size) {
  double total = 0;
  for (uint64_t c : hist) total += static_cast<double>(c);
  if (size == 0 || total == 0) return 2;
  double bits = 0, table = 1;
  const double log_total = std::log2(total), two_byte_count = 128.0 * total / kRansProbScale;
  for (uint64_t c : hist) {
    if (c == 0) continue;
    bits += static_cast<double>(c) * (log_total - std::log2(static_cast<double>(c)));
    table += c >= two_byte_count ? 3 : 2;
  }
  return table + bits / total * static_cast<double>(size) / 8;
}

double StreamCodec::bucket_stream_overhead(size_t size) {
  return 1 + 2.0 * varint_bytes(size) + 4.0 * rans_lanes(rans_coder(size));
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
    const Coder rans = rans_coder(size);
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

void StreamCodec::write_buckets(const uint8_t* data, const uint8_t* buckets, size_t size, const Histogram* hists,
                                unsigned table_count, std::vector<uint8_t>* out) {
  Impl& m = *impl_;
  m.tables.resize(table_count);
  m.candidate.clear();
  for (unsigned b = 0; b < table_count; ++b) {
    Histogram counts = hists[b];
    bool empty = true;
    for (uint64_t c : counts) empty = empty && c == 0;
    if (empty) counts[0] = 1;  // a bucket no change falls in still has a table: symbol 0 alone
    m.tables[b].build(counts);
    m.tables[b].write(&m.candidate);
  }
  const Coder rans = rans_coder(size);
  rans_encode_buckets(data, buckets, size, m.tables.data(), table_count, rans_lanes(rans), &m.rans_scratch,
                      &m.candidate);
  put_stream(rans, size, m.candidate.data(), m.candidate.size(), out);
}

Status StreamCodec::read(ByteReader* reader, size_t max_size, int slot, const uint8_t** data,
                         size_t* decoded_size) {
  DCR_TRY(open(reader, max_size, slot, data, decoded_size));
  return decode(slot, *decoded_size);
}

namespace {

// A stream's coder, decoded size and code, the size at most `max_size`.
Status read_stream(ByteReader* reader, size_t max_size, uint64_t* coder, uint64_t* size, const uint8_t** code,
                   uint64_t* code_size) {
  DCR_TRY(reader->read_le(1, coder));
  DCR_TRY(reader->read_varint(size));
  DCR_TRY(reader->read_varint(code_size));
  DCR_REQUIRE(*size <= max_size, Code::corrupt,
              "stream holds " + std::to_string(*size) + " bytes where the header allows at most " +
                  std::to_string(max_size));
  return reader->take(*code_size, code);
}

}  // namespace

Status StreamCodec::open(ByteReader* reader, size_t max_size, int slot, const uint8_t** data,
                         size_t* decoded_size) {
  Impl::Reading& r = impl_->reading[slot];
  r.lazy = false;
  uint64_t coder = 0, size = 0, code_size = 0;
  const uint8_t* code;
  DCR_TRY(read_stream(reader, max_size, &coder, &size, &code, &code_size));
  *decoded_size = size;
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
      grow_to(&r.lookup, kRansProbScale);
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

Status StreamCodec::open_buckets(ByteReader* reader, size_t size, unsigned table_count, int slot,
                                 const uint8_t** data) {
  Impl::Reading& r = impl_->reading[slot];
  r.lazy = false;
  uint64_t coder = 0, decoded_size = 0, code_size = 0;
  const uint8_t* code;
  DCR_TRY(read_stream(reader, size, &coder, &decoded_size, &code, &code_size));
  DCR_REQUIRE(decoded_size == size, Code::corrupt,
              "context token stream holds " + std::to_string(decoded_size) + " tokens, expected " +
                  std::to_string(size));
  DCR_REQUIRE(coder == static_cast<uint64_t>(Coder::rans) || coder == static_cast<uint64_t>(Coder::rans32),
              Code::corrupt, "context token stream: coder " + std::to_string(coder) + " is not rANS");
  ByteReader table_reader(code, code_size, "rANS table");
  r.tables.resize(table_count);
  for (RansTable& table : r.tables) DCR_TRY(table.read(&table_reader));
  const size_t table_size = table_reader.position();
  grow_to(&r.decoded, size);
  grow_to(&r.lookup, table_count * size_t{kRansProbScale});
  DCR_TRY(r.rans.start_buckets(code + table_size, code_size - table_size, r.tables.data(), table_count, size,
                               rans_lanes(static_cast<Coder>(coder)), r.lookup.data()));
  r.lazy = true;
  *data = r.decoded.data();
  return Status::ok();
}

Status StreamCodec::decode_buckets(int slot, size_t upto, const uint8_t* buckets) {
  Impl::Reading& r = impl_->reading[slot];
  if (!r.lazy || upto <= r.rans.done()) return Status::ok();
  return r.rans.decode(upto, r.decoded.data(), buckets);
}

Status StreamCodec::decode(int slot, size_t upto) {
  Impl::Reading& r = impl_->reading[slot];
  if (!r.lazy || upto <= r.rans.done()) return Status::ok();
  return r.rans.decode(upto, r.decoded.data());
}

}  // namespace dcr
