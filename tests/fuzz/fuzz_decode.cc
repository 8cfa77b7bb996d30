// libFuzzer target for the frame decoder and the safe apply. Each input is tried twice: as is
// (almost always stopped by the checksums) and with its checksums recomputed, so the fuzzer
// reaches the structure checks of every section behind them.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dcr/codec/decoder.h"
#include "dcr/core/hash.h"
#include "fuzz/seed_frames.h"

namespace {

constexpr uint64_t kMaxElements = 1 << 16;

void try_frame(dcr::FrameDecoder& decoder, const uint8_t* data, size_t size) {
  dcr::DecodedFrame decoded;
  decoder.decode(data, size, kMaxElements, &decoded);
  dcr::FrameHeader header;
  if (!dcr::parse_frame_header(data, size, &header).is_ok() || header.count() > kMaxElements) return;
  std::vector<uint8_t> dst(header.count() * header.elem_width, 0x5a);
  dcr::ApplyOutcome outcome;
  const dcr::Status applied =
      decoder.apply(data, size, dcr::dense_region(header.box, header.elem_width, dst.data()), dcr::kAnyVersion, &outcome);
  if (applied.is_ok()) return;
  for (uint8_t byte : dst) {  // a refused frame leaves the box as it was, even one refused midway
    if (byte != 0x5a) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dcr::FrameDecoder decoder;
  try_frame(decoder, data, size);
  if (size < dcr::kFrameHeaderBytes) return 0;
  std::vector<uint8_t> fixed(data, data + size);
  // Recompute both checksums so the fuzzer explores past them.
  const uint64_t payload = size - dcr::kFrameHeaderBytes;
  const uint64_t payload_hash = dcr::hash64(fixed.data() + dcr::kFrameHeaderBytes, payload);
  for (int i = 0; i < 8; ++i) fixed[96 + i] = static_cast<uint8_t>(payload >> (8 * i));
  for (int i = 0; i < 8; ++i) fixed[104 + i] = static_cast<uint8_t>(payload_hash >> (8 * i));
  const uint64_t header_hash = dcr::hash64(fixed.data(), 112);
  for (int i = 0; i < 8; ++i) fixed[112 + i] = static_cast<uint8_t>(header_hash >> (8 * i));
  try_frame(decoder, fixed.data(), fixed.size());
  return 0;
}

std::vector<std::vector<uint8_t>> dcr_fuzz_seeds() { return dcr::test::seed_frames(); }
