// Malformed frames: every single-bit flip and every truncation of sample frames is rejected with a
// clear error; payload damage behind valid checksums is caught by structure checks or by the
// target hash, and the destination is never left changed unless it equals the target (also when
// the damage is found after apply has scattered earlier blocks).
#include <gtest/gtest.h>

#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/core/hash.h"
#include "support/random_data.h"

namespace dcr {
namespace {

struct Sample {
  std::string name;
  unsigned width;
  std::vector<uint8_t> base, target, frame;
};

std::vector<Sample> samples() {
  std::vector<Sample> out;
  struct Spec {
    const char* name;
    unsigned width;
    uint64_t count;
    double fraction;
    EncodeOptions options;
    bool full;
  };
  EncodeOptions bitmap, varint, planes, xor_tokens, joint, separate, contexts;
  contexts.value_packing = ValuePacking::contexts;
  contexts.context_shift = 7;
  joint.pos_coding = PosCoding::gaps_joint;
  separate.pos_coding = PosCoding::gaps_token;
  separate.value_packing = ValuePacking::tokens;
  bitmap.pos_coding = PosCoding::bitmap;
  varint.pos_coding = PosCoding::gaps_varint;
  planes.value_mode = ValueMode::overwrite;
  xor_tokens.value_mode = ValueMode::xor_mask;
  const Spec specs[] = {
      {"bf16 tokens", 2, 3000, 0.03, separate, false}, {"bf16 joint", 2, 3000, 0.03, joint, false},
      {"u8 bitmap", 1, 900, 0.2, bitmap, false},
      {"f32 varint", 4, 700, 0.05, varint, false}, {"i64 overwrite", 8, 300, 0.1, planes, false},
      {"bf16 xor", 2, 2000, 0.02, xor_tokens, false}, {"bf16 full", 2, 500, 1.0, {}, true},
      // Longer than two of apply's blocks (16Ki elements), which it decodes one at a time and
      // scatters as it goes: damage found late in the payload comes after earlier blocks changed.
      // The second has streams long enough for the 32-state rANS coder, decoded a slice at a time.
      {"bf16 tokens, 3 blocks", 2, 40000, 0.02, separate, false},
      {"bf16 tokens, 3 dense blocks", 2, 34000, 0.3, separate, false},
      {"bf16 joint, 3 dense blocks", 2, 34000, 0.3, joint, false},
      {"bf16 contexts", 2, 3000, 0.03, contexts, false},
      {"bf16 contexts, 3 blocks", 2, 40000, 0.05, contexts, false},
  };
  for (const Spec& s : specs) {
    Sample sample{s.name, s.width, test::random_bytes(s.count * s.width, s.count), {}, {}};
    sample.target = test::perturb(sample.base, s.width, s.fraction, s.count + 1);
    FrameEncoder encoder(s.options);
    const Region base = test::flat(4, sample.base.data(), s.count, s.width);
    const Region target = test::flat(4, sample.target.data(), s.count, s.width);
    const Status st = s.full ? encoder.encode_full(target, 2, &sample.frame)
                             : encoder.encode_delta(base, target, {1, 2}, &sample.frame);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    out.push_back(std::move(sample));
  }
  return out;
}

// Applies `frame` to a copy of the sample's base; the result is either an error with the
// destination untouched, or success with the destination equal to the target.
void expect_safe_apply(const Sample& s, const std::vector<uint8_t>& frame, bool must_fail, const std::string& what) {
  std::vector<uint8_t> dst = s.base;
  FrameDecoder decoder;
  ApplyOutcome outcome;
  const Status st = decoder.apply(frame.data(), frame.size(), test::flat(4, dst.data(), s.base.size() / s.width, s.width),
                                  1, &outcome);
  if (st.is_ok()) {
    EXPECT_FALSE(must_fail) << s.name << ": " << what << " was accepted";
    EXPECT_EQ(dst, s.target) << s.name << ": " << what;
  } else {
    EXPECT_FALSE(st.message().empty());
    EXPECT_EQ(dst, s.base) << s.name << ": " << what << " changed the destination: " << st.to_string();
  }
}

TEST(Corruption, EverySingleBitFlipIsRejected) {
  for (const Sample& s : samples()) {
    for (size_t bit = 0; bit < s.frame.size() * 8; ++bit) {
      std::vector<uint8_t> bad = s.frame;
      bad[bit / 8] ^= uint8_t(1u << (bit % 8));
      expect_safe_apply(s, bad, true, "flip of bit " + std::to_string(bit));
      DecodedFrame decoded;
      FrameDecoder decoder;
      EXPECT_EQ(decoder.decode(bad.data(), bad.size(), 1 << 20, &decoded).code(), Code::corrupt);
    }
  }
}

TEST(Corruption, EveryTruncationAndExtensionIsRejected) {
  for (const Sample& s : samples()) {
    for (size_t len = 0; len < s.frame.size(); ++len) {
      std::vector<uint8_t> cut(s.frame.begin(), s.frame.begin() + len);
      expect_safe_apply(s, cut, true, "truncation to " + std::to_string(len));
    }
    std::vector<uint8_t> longer = s.frame;
    longer.push_back(0);
    expect_safe_apply(s, longer, true, "one trailing byte");
  }
}

TEST(Corruption, PayloadDamageBehindRecomputedChecksumsNeverCorruptsTheDestination) {
  // An attacker (or a bug upstream) that keeps the checksums consistent: the decoder's structure
  // checks or the target hash must still stop every damaged payload.
  for (const Sample& s : samples()) {
    FrameHeader header;
    ASSERT_TRUE(parse_frame_header(s.frame.data(), s.frame.size(), &header).is_ok());
    for (size_t bit = kFrameHeaderBytes * 8; bit < s.frame.size() * 8; ++bit) {
      std::vector<uint8_t> bad = s.frame;
      bad[bit / 8] ^= uint8_t(1u << (bit % 8));
      FrameHeader fixed = header;
      fixed.payload_hash = hash64(bad.data() + kFrameHeaderBytes, bad.size() - kFrameHeaderBytes);
      write_frame_header(fixed, bad.data());
      expect_safe_apply(s, bad, false, "payload flip of bit " + std::to_string(bit));
    }
  }
}

TEST(Corruption, ErrorsNameWhatIsWrong) {
  const Sample s = samples()[0];
  FrameDecoder decoder;
  DecodedFrame decoded;
  std::vector<uint8_t> bad = s.frame;
  bad[0] ^= 1;
  EXPECT_NE(decoder.decode(bad.data(), bad.size(), 1 << 20, &decoded).message().find("magic"), std::string::npos);
  bad = s.frame;
  bad.back() ^= 1;
  EXPECT_NE(decoder.decode(bad.data(), bad.size(), 1 << 20, &decoded).message().find("payload checksum"), std::string::npos);
  bad.assign(s.frame.begin(), s.frame.begin() + 50);
  EXPECT_NE(decoder.decode(bad.data(), bad.size(), 1 << 20, &decoded).message().find("truncated"), std::string::npos);
  bad.assign(s.frame.begin(), s.frame.end() - 3);
  EXPECT_NE(decoder.decode(bad.data(), bad.size(), 1 << 20, &decoded).message().find("truncated"), std::string::npos);
  EXPECT_EQ(decoder.decode(s.frame.data(), s.frame.size(), 10, &decoded).code(), Code::corrupt);
}

}  // namespace
}  // namespace dcr
