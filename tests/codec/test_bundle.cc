// Bundle frames: several small boxes under one header, applied all together or not at all, bit
// for bit; damaged or mismatched bundles leave every box as it was.
#include <gtest/gtest.h>

#include <cstring>

#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/codec/simd.h"
#include "dcr/core/hash.h"
#include "support/random_data.h"

namespace dcr {
namespace {

// Three tensors, the last one sent as a column slice (strided). Ragged: [40, 30], [1, 700] and
// [64, 100], boxes that are no whole number of 64-byte stripes, so the encoder gathers them into
// one copy and the decoder hashes them through the streaming hasher. Aligned: [64, 64], [1, 2048]
// and [128, 96] with rows of 64 elements in the slice, so both work on the boxes where they lie
// (the fused scan over each run; the striped apply).
struct Model {
  std::vector<Box> tensors, boxes;
  std::vector<std::vector<uint8_t>> base, target;
  explicit Model(bool aligned = false) {
    if (aligned) {
      tensors = {{0, 0, 64, 0, 64}, {3, 0, 1, 0, 2048}, {5, 0, 128, 0, 96}};
      boxes = {{0, 0, 64, 0, 64}, {3, 0, 1, 0, 2048}, {5, 3, 37, 32, 64}};
    } else {
      tensors = {{0, 0, 40, 0, 30}, {3, 0, 1, 0, 700}, {5, 0, 64, 0, 100}};
      boxes = {{0, 0, 40, 0, 30}, {3, 0, 1, 0, 700}, {5, 3, 37, 10, 50}};
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      base.push_back(test::random_bytes(tensors[i].elements() * 2, 40 + i));
      target.push_back(test::perturb(base.back(), 2, 0.04, 50 + i));
    }
  }
  std::vector<Region> regions(std::vector<std::vector<uint8_t>>& bits) const {
    std::vector<Region> out(boxes.size());
    for (size_t i = 0; i < boxes.size(); ++i) {
      EXPECT_TRUE(sub_region(dense_region(tensors[i], 2, bits[i].data()), boxes[i], &out[i]).is_ok());
    }
    return out;
  }
  std::vector<uint8_t> encode(EncodeOptions options = {}) {
    std::vector<uint8_t> frame;
    const Status s = FrameEncoder(options).encode_bundle(regions(base), regions(target), {1, 2}, &frame);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return frame;
  }
  // The bits the receiver should hold: the target inside the boxes, the base elsewhere.
  std::vector<std::vector<uint8_t>> expected() {
    std::vector<std::vector<uint8_t>> out = base;
    std::vector<Region> from = regions(target), to = regions(out);
    for (size_t i = 0; i < boxes.size(); ++i) {
      std::vector<uint8_t> dense(boxes[i].elements() * 2);
      copy_out(from[i], dense.data());
      copy_in(to[i], dense.data());
    }
    return out;
  }
};

TEST(Bundle, AppliesEveryBoxBitExactAndOnlyOnce) {
  for (bool aligned : {false, true}) {
    SCOPED_TRACE(aligned ? "aligned" : "ragged");
    Model m(aligned);
    for (bool contexts : {false, true}) {
      EncodeOptions options;
      set_dtype(DType::bf16, &options);
      if (contexts) options.value_packing = ValuePacking::contexts;
      const std::vector<uint8_t> frame = m.encode(options);
      FrameDecoder decoder;
      std::vector<Box> listed;
      ASSERT_TRUE(decoder.bundle_boxes(frame.data(), frame.size(), &listed).is_ok());
      EXPECT_EQ(listed, m.boxes);
      std::vector<std::vector<uint8_t>> dst = m.base;
      ApplyOutcome outcome;
      Status s = decoder.apply_bundle(frame.data(), frame.size(), m.regions(dst), 1, &outcome);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_EQ(outcome, ApplyOutcome::applied);
      const std::vector<std::vector<uint8_t>> want = m.expected();
      for (size_t i = 0; i < dst.size(); ++i) {
        EXPECT_EQ(hash64(dst[i].data(), dst[i].size()), hash64(want[i].data(), want[i].size()));
        EXPECT_EQ(dst[i], want[i]);
      }
      s = decoder.apply_bundle(frame.data(), frame.size(), m.regions(dst), 1, &outcome);  // a retry
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_EQ(outcome, ApplyOutcome::already_applied);
      EXPECT_EQ(dst, want);
    }
  }
}

// A bundle without changes has the same payload every version. The next version's, received into
// the buffer the last one was (allocators reuse addresses), is read as its own frame, with its own
// versions: the decoder's cache of the last bundle keys on the whole header, not the payload.
TEST(Bundle, AnUnchangedBundleAtTheLastOnesAddressIsReadAsItsOwnFrame) {
  Model m;
  m.target = m.base;
  EncodeOptions options;
  set_dtype(DType::bf16, &options);
  FrameEncoder encoder(options);
  FrameDecoder decoder;
  std::vector<uint8_t> buffer;
  for (uint64_t version = 1; version <= 3; ++version) {
    std::vector<uint8_t> frame;
    ASSERT_TRUE(encoder.encode_bundle(m.regions(m.base), m.regions(m.target), {version, version + 1}, &frame).is_ok());
    if (buffer.empty()) buffer.resize(frame.size());
    ASSERT_EQ(frame.size(), buffer.size());
    std::memcpy(buffer.data(), frame.data(), frame.size());  // the same address every version
    std::vector<std::vector<uint8_t>> dst = m.base;
    ApplyOutcome outcome;
    const Status s = decoder.apply_bundle(buffer.data(), buffer.size(), m.regions(dst), version, &outcome);
    ASSERT_TRUE(s.is_ok()) << "version " << version << ": " << s.to_string();
    EXPECT_EQ(dst, m.base);
  }
}

// Boxes found where they lie (the fused scan over each run) and boxes gathered into one copy (where
// the CPU has no fused scan, or the runs are ragged) give the same frame, byte for byte, and each
// applies on either path.
TEST(Bundle, FramesAreTheSameWhereverTheBoxesAreScanned) {
  Model m(true);
  EncodeOptions options;
  set_dtype(DType::bf16, &options);
  const std::vector<uint8_t> in_place = m.encode(options);
  for (SimdLevel level : {SimdLevel::avx512, SimdLevel::scalar}) {
    limit_simd(level);
    const std::vector<uint8_t> gathered = m.encode(options);
    std::vector<std::vector<uint8_t>> dst = m.base;
    ApplyOutcome outcome;
    const Status s = FrameDecoder().apply_bundle(in_place.data(), in_place.size(), m.regions(dst), 1, &outcome);
    limit_simd(SimdLevel::avx512_vbmi);
    EXPECT_EQ(gathered, in_place) << "level " << static_cast<int>(level);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_EQ(dst, m.expected());
  }
}

// A full bundle (first sync, repair) writes its boxes' bits over anything, and carries its id.
TEST(Bundle, FullBundleAppliesOverAnyBits) {
  for (bool aligned : {false, true}) {
    SCOPED_TRACE(aligned ? "aligned" : "ragged");
    Model m(aligned);
    std::vector<uint8_t> frame;
    ASSERT_TRUE(FrameEncoder().encode_full_bundle(m.regions(m.target), 2, &frame, nullptr, 77).is_ok());
    FrameHeader header;
    ASSERT_TRUE(parse_frame_header(frame.data(), frame.size(), &header).is_ok());
    EXPECT_TRUE(header.is_full() && header.is_bundle());
    EXPECT_EQ(header.box.row0, 77u);
    std::vector<std::vector<uint8_t>> dst = m.base;
    for (auto& t : dst) t.assign(t.size(), 0xee);  // neither base nor target
    std::vector<std::vector<uint8_t>> want = dst;
    {
      std::vector<Region> from = m.regions(m.target), to = m.regions(want);
      for (size_t i = 0; i < from.size(); ++i) {
        std::vector<uint8_t> dense(from[i].box.elements() * 2);
        copy_out(from[i], dense.data());
        copy_in(to[i], dense.data());
      }
    }
    FrameDecoder decoder;
    ApplyOutcome outcome;
    ASSERT_TRUE(decoder.apply_bundle(frame.data(), frame.size(), m.regions(dst), kAnyVersion, &outcome).is_ok());
    EXPECT_EQ(outcome, ApplyOutcome::applied);
    EXPECT_EQ(dst, want);
  }
}

TEST(Bundle, OneBoxOffItsBaseLeavesEveryBoxAsItWas) {
  for (bool aligned : {false, true}) {
    SCOPED_TRACE(aligned ? "aligned" : "ragged");
    Model m(aligned);
    const std::vector<uint8_t> frame = m.encode();
    std::vector<std::vector<uint8_t>> dst = m.base;
    dst[1][6] ^= 1;  // box 1 is neither at its base nor at its target
    const std::vector<std::vector<uint8_t>> before = dst;
    FrameDecoder decoder;
    ApplyOutcome outcome;
    EXPECT_EQ(decoder.apply_bundle(frame.data(), frame.size(), m.regions(dst), 1, &outcome).code(),
              Code::base_mismatch);
    EXPECT_EQ(dst, before);
    EXPECT_EQ(decoder.apply_bundle(frame.data(), frame.size(), m.regions(m.base), 7, &outcome).code(),
              Code::base_mismatch);  // the receiver is at another version
  }
}

TEST(Bundle, WrongCallsAndOverlappingBoxesAreRefusedByName) {
  for (bool aligned : {false, true}) {
    SCOPED_TRACE(aligned ? "aligned" : "ragged");
    Model m(aligned);
    const std::vector<uint8_t> frame = m.encode();
    FrameDecoder decoder;
    ApplyOutcome outcome;
    std::vector<std::vector<uint8_t>> dst = m.base;
    Status s = decoder.apply(frame.data(), frame.size(), m.regions(dst)[0], 1, &outcome);
    EXPECT_EQ(s.code(), Code::invalid_argument);
    EXPECT_NE(s.message().find("apply_bundle"), std::string::npos) << s.to_string();
    std::vector<Region> two = m.regions(dst);
    two.pop_back();
    s = decoder.apply_bundle(frame.data(), frame.size(), two, 1, &outcome);
    EXPECT_NE(s.message().find("holds 3 boxes, given 2"), std::string::npos) << s.to_string();
    std::vector<Region> swapped = m.regions(dst);
    std::swap(swapped[0], swapped[1]);
    EXPECT_EQ(decoder.apply_bundle(frame.data(), frame.size(), swapped, 1, &outcome).code(), Code::invalid_argument);
    EXPECT_EQ(dst, m.base);

    std::vector<Region> overlapping = m.regions(m.base);
    overlapping[1] = overlapping[0];
    std::vector<uint8_t> out;
    s = FrameEncoder().encode_bundle(overlapping, overlapping, {1, 2}, &out);
    EXPECT_EQ(s.code(), Code::invalid_argument);
    EXPECT_NE(s.message().find("overlap"), std::string::npos) << s.to_string();
  }
}

// Damage anywhere in the payload, with the checksums made to agree again, never changes a box
// unless the result is exactly the target.
TEST(Bundle, PayloadDamageBehindRecomputedChecksumsNeverCorruptsABox) {
  for (bool aligned : {false, true}) {
    for (bool contexts : {false, true}) {  // applied where the boxes lie, or to a gathered copy
      SCOPED_TRACE(std::string(aligned ? "aligned" : "ragged") + (contexts ? ", contexts" : ""));
      Model m(aligned);
      EncodeOptions options;
      set_dtype(DType::bf16, &options);
      if (contexts) options.value_packing = ValuePacking::contexts;
      const std::vector<uint8_t> frame = m.encode(options);
      FrameHeader header;
      ASSERT_TRUE(parse_frame_header(frame.data(), frame.size(), &header).is_ok());
      const std::vector<std::vector<uint8_t>> want = m.expected();
      FrameDecoder decoder;
      for (size_t bit = kFrameHeaderBytes * 8; bit < frame.size() * 8; bit += 3) {
        std::vector<uint8_t> bad = frame;
        bad[bit / 8] ^= uint8_t(1u << (bit % 8));
        header.payload_hash = hash64(bad.data() + kFrameHeaderBytes, bad.size() - kFrameHeaderBytes);
        write_frame_header(header, bad.data());
        std::vector<std::vector<uint8_t>> dst = m.base;
        ApplyOutcome outcome;
        const Status s = decoder.apply_bundle(bad.data(), bad.size(), m.regions(dst), 1, &outcome);
        EXPECT_EQ(dst, s.is_ok() ? want : m.base) << "bit " << bit << ": " << s.to_string();
      }
    }
  }
}

}  // namespace
}  // namespace dcr
