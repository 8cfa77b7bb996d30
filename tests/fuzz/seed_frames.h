// Seed frames for the decoder fuzz target: one per position coding, value mode and width, plus a
// full frame. The replay test runs them; the fuzz script writes them as the libFuzzer corpus.
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/codec/encoder.h"
#include "support/random_data.h"

namespace dcr::test {

inline std::vector<std::vector<uint8_t>> seed_frames() {
  std::vector<std::vector<uint8_t>> frames;
  for (unsigned width : {1u, 2u, 4u, 8u}) {
    const uint64_t count = 300;
    const std::vector<uint8_t> base = random_bytes(count * width, width);
    for (double fraction : {0.02, 0.4, 1.0}) {
      const std::vector<uint8_t> target = perturb(base, width, fraction, width + 1);
      for (PosCoding pos : {PosCoding::bitmap, PosCoding::gaps_varint, PosCoding::gaps_token, PosCoding::gaps_joint}) {
        for (ValueMode mode : {ValueMode::xor_mask, ValueMode::overwrite, ValueMode::delta_sm, ValueMode::delta_tc}) {
          EncodeOptions options;
          options.pos_coding = pos;
          options.value_mode = mode;
          FrameEncoder encoder(options);
          std::vector<uint8_t> frame;
          if (encoder.encode_delta(flat(1, base.data(), count, width), flat(1, target.data(), count, width), {0, 1},
                                   &frame).is_ok()) {
            frames.push_back(frame);
          }
        }
      }
    }
    EncodeOptions contexts;  // value tokens by the contexts of the base bits
    contexts.value_packing = ValuePacking::contexts;
    contexts.context_shift = static_cast<uint8_t>(width == 1 ? 3 : 8 * width - 9);
    const std::vector<uint8_t> target = perturb(base, width, 0.3, width + 2);
    FrameEncoder encoder(contexts);
    std::vector<uint8_t> frame;
    if (encoder.encode_delta(flat(1, base.data(), count, width), flat(1, target.data(), count, width), {0, 1}, &frame)
            .is_ok()) {
      frames.push_back(frame);
    }
    // A bundle of two boxes, its values by context.
    const std::vector<Region> bases = {flat(3, base.data(), count / 2, width),
                                       flat(4, base.data() + count / 2 * width, count - count / 2, width)};
    const std::vector<Region> targets = {flat(3, target.data(), count / 2, width),
                                         flat(4, target.data() + count / 2 * width, count - count / 2, width)};
    if (encoder.encode_bundle(bases, targets, {0, 1}, &frame).is_ok()) frames.push_back(frame);
    if (encoder.encode_full_bundle(targets, 1, &frame, nullptr, 5).is_ok()) frames.push_back(frame);
    encoder.set_options({});
    if (encoder.encode_full(flat(2, base.data(), count, width), 1, &frame).is_ok()) frames.push_back(frame);
  }
  return frames;
}

}  // namespace dcr::test
