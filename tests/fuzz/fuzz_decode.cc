// libFuzzer target for the frame decoder, the safe apply and sealed frames. Each input is tried
// twice: as is (almost always stopped by the checksums) and with its checksums recomputed, so the
// fuzzer reaches the structure checks of every section behind them. A sealed input is verified
// and opened with the seeds' key (HMAC-SHA-256 and AES-256-GCM seeds are among the seeds).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dcr/auth/seal.h"
#include "dcr/codec/decoder.h"
#include "dcr/core/hash.h"
#include "fuzz/seed_frames.h"

namespace {

constexpr uint64_t kMaxElements = 1 << 16;

const dcr::Keyring& seed_keys() {
  static const dcr::Keyring keys = [] {
    dcr::Key key;
    key.id = 1;
    key.bytes.fill(7);
    return dcr::Keyring::of({key});
  }();
  return keys;
}

// A bundle: applied to a destination per listed box (a refused one leaves them all as they were).
void try_bundle(dcr::FrameDecoder& decoder, const uint8_t* data, size_t size, unsigned width) {
  std::vector<dcr::Box> boxes;
  if (!decoder.bundle_boxes(data, size, &boxes).is_ok()) return;
  std::vector<std::vector<uint8_t>> bits;
  std::vector<dcr::Region> dsts;
  for (const dcr::Box& box : boxes) bits.emplace_back(box.elements() * width, 0x5a);
  for (size_t i = 0; i < boxes.size(); ++i) dsts.push_back(dcr::dense_region(boxes[i], width, bits[i].data()));
  dcr::ApplyOutcome outcome;
  if (decoder.apply_bundle(data, size, dsts, dcr::kAnyVersion, &outcome).is_ok()) return;
  for (const auto& box : bits) {
    for (uint8_t byte : box) {
      if (byte != 0x5a) __builtin_trap();
    }
  }
}

void try_frame(dcr::FrameDecoder& decoder, const uint8_t* data, size_t size) {
  dcr::FrameHeader header;
  if (!dcr::parse_frame_header(data, size, &header).is_ok() || header.count() > kMaxElements) return;
  std::vector<uint8_t> base(header.count() * header.elem_width, 0x5a);
  const dcr::Region base_bits = dcr::dense_region(header.box, header.elem_width, base.data());
  dcr::DecodedFrame decoded;
  decoder.decode(data, size, kMaxElements, &decoded, &base_bits);
  if (header.is_bundle()) return try_bundle(decoder, data, size, header.elem_width);
  std::vector<uint8_t> dst(header.count() * header.elem_width, 0x5a);
  dcr::ApplyOutcome outcome;
  const dcr::Status applied =
      decoder.apply(data, size, dcr::dense_region(header.box, header.elem_width, dst.data()), dcr::kAnyVersion, &outcome);
  if (applied.is_ok()) return;
  for (uint8_t byte : dst) {  // a refused frame leaves the box as it was, even one refused midway
    if (byte != 0x5a) __builtin_trap();
  }
}

// A sealed frame: checked and opened (a wrong tag must be refused without touching anything).
void try_sealed(dcr::FrameDecoder& decoder, const uint8_t* data, size_t size) {
  dcr::FrameHeader header;
  if (!dcr::peek_frame_header(data, size, &header).is_ok() || header.seal == dcr::Seal::none) return;
  const bool verified = dcr::verify_frame(seed_keys(), data, size).is_ok();
  std::vector<uint8_t> frame(data, data + size);
  const bool opened = dcr::open_frame(seed_keys(), &frame).is_ok();
  if (verified != opened) __builtin_trap();  // one verdict for relays and rollouts
  if (opened) try_frame(decoder, frame.data(), frame.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dcr::FrameDecoder decoder;
  try_frame(decoder, data, size);
  try_sealed(decoder, data, size);
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

std::vector<std::vector<uint8_t>> dcr_fuzz_seeds() {
  std::vector<std::vector<uint8_t>> seeds = dcr::test::seed_frames();
  for (size_t i = 0; i < 4 && i < seeds.size(); ++i) {
    for (bool encrypt : {false, true}) {
      std::vector<uint8_t> sealed = seeds[i];
      if (dcr::seal_frame(seed_keys(), encrypt, &sealed).is_ok()) seeds.push_back(sealed);
    }
  }
  return seeds;
}
