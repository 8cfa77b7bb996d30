// Sealed frames and the key file: HMAC-SHA-256 and AES-256-GCM seals open to the exact plain frame;
// a forged frame (every XXH3 hash consistent, wrong tag), an unsealed one, a tampered byte anywhere
// or an unknown key id is refused; rotation (a ring of two keys) opens frames under either; the key
// file is refused when others may read it.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "dcr/auth/seal.h"
#include "dcr/codec/decoder.h"
#include "dcr/codec/encoder.h"
#include "dcr/core/hash.h"
#include "support/random_data.h"

namespace dcr {
namespace {

namespace fs = std::filesystem;

Key key(uint32_t id, uint8_t fill) {
  Key k;
  k.id = id;
  k.bytes.fill(fill);
  return k;
}

std::vector<uint8_t> plain_frame() {
  const std::vector<uint8_t> base = test::random_bytes(4096 * 2, 3);
  const std::vector<uint8_t> target = test::perturb(base, 2, 0.05, 4);
  FrameEncoder encoder;
  std::vector<uint8_t> frame;
  const Box box{0, 0, 64, 0, 64};
  EXPECT_TRUE(encoder.encode_delta(dense_region(box, 2, base.data()), dense_region(box, 2, target.data()), {1, 2}, &frame)
                  .is_ok());
  return frame;
}

class SealTest : public ::testing::TestWithParam<bool> {};  // false: HMAC-SHA-256, true: AES-256-GCM

TEST_P(SealTest, OpensToTheExactPlainFrame) {
  const Keyring ring = Keyring::of({key(7, 0x11)});
  const std::vector<uint8_t> plain = plain_frame();
  std::vector<uint8_t> frame = plain;
  ASSERT_TRUE(seal_frame(ring, GetParam(), &frame).is_ok());
  FrameHeader h;
  ASSERT_TRUE(peek_frame_header(frame.data(), frame.size(), &h).is_ok());
  EXPECT_EQ(h.seal, GetParam() ? Seal::aes256_gcm : Seal::hmac_sha256);
  EXPECT_EQ(h.key_id, 7u);
  EXPECT_EQ(frame.size(), plain.size() + seal_trailer_bytes(h.seal));
  const bool payload_hidden = !std::equal(plain.begin() + kFrameHeaderBytes, plain.end(), frame.begin() + kFrameHeaderBytes);
  EXPECT_EQ(payload_hidden, GetParam());  // encrypted only with GCM
  EXPECT_EQ(parse_frame_header(frame.data(), frame.size(), &h).code(), Code::corrupt);  // the decoder wants it opened
  EXPECT_TRUE(verify_frame(ring, frame.data(), frame.size()).is_ok());
  ASSERT_TRUE(open_frame(ring, &frame).is_ok());
  EXPECT_EQ(frame, plain);
}

TEST_P(SealTest, AnyTamperedByteIsRefused) {
  const Keyring ring = Keyring::of({key(1, 0x22)});
  std::vector<uint8_t> sealed = plain_frame();
  ASSERT_TRUE(seal_frame(ring, GetParam(), &sealed).is_ok());
  for (size_t at : {size_t{30}, kFrameHeaderBytes + 5, sealed.size() - 3}) {
    std::vector<uint8_t> frame = sealed;
    frame[at] ^= 0x01;
    if (at < kFrameHeaderBytes) {  // an adversary fixes the header checksum too
      FrameHeader h;
      ASSERT_TRUE(peek_frame_header(sealed.data(), sealed.size(), &h).is_ok());
      h.box.row0 += 1;
      write_frame_header(h, frame.data());
    }
    EXPECT_EQ(verify_frame(ring, frame.data(), frame.size()).code(), Code::corrupt) << "byte " << at;
    EXPECT_EQ(open_frame(ring, &frame).code(), Code::corrupt) << "byte " << at;
  }
}

TEST_P(SealTest, AForgedFrameWithConsistentHashesIsRefused) {
  const Keyring ring = Keyring::of({key(3, 0x33)});
  std::vector<uint8_t> forged = plain_frame();
  ASSERT_TRUE(seal_frame(Keyring::of({key(3, 0x99)}), GetParam(), &forged).is_ok());  // same id, another key
  const Status st = verify_frame(ring, forged.data(), forged.size());
  EXPECT_EQ(st.code(), Code::corrupt);
  EXPECT_NE(st.message().find("tag does not match (key id 3)"), std::string::npos) << st.message();
  std::vector<uint8_t> plain = plain_frame();
  const Status unsealed = verify_frame(ring, plain.data(), plain.size());
  EXPECT_NE(unsealed.message().find("not authenticated (no MAC)"), std::string::npos) << unsealed.message();
}

TEST_P(SealTest, AFrameSealedForOnePublicationOpensInNoOther) {
  const Keyring job = Keyring::of({key(7, 0x11)});
  const Keyring mine = job.for_publication(std::string(32, 'a')), other = job.for_publication(std::string(32, 'b'));
  std::vector<uint8_t> frame = plain_frame();
  ASSERT_TRUE(seal_frame(mine, GetParam(), &frame).is_ok());
  EXPECT_TRUE(verify_frame(mine, frame.data(), frame.size()).is_ok());
  for (const Keyring* wrong : {&other, &job}) {  // another publication, or a one-job refit, under the same key
    const Status st = verify_frame(*wrong, frame.data(), frame.size());
    EXPECT_EQ(st.code(), Code::corrupt);
    EXPECT_NE(st.message().find("tag does not match"), std::string::npos) << st.message();
  }
  uint32_t id = 0;
  const std::string tag = text_tag(mine, "manifest text", &id);
  EXPECT_TRUE(check_text_tag(mine, "manifest text", id, tag, "m").is_ok());
  EXPECT_EQ(check_text_tag(other, "manifest text", id, tag, "m").code(), Code::corrupt);
}

TEST_P(SealTest, RotationOpensFramesUnderEitherKey) {
  const Keyring old_ring = Keyring::of({key(1, 0x44)});
  const Keyring both = Keyring::of({key(1, 0x44), key(2, 0x55)});
  const Keyring new_ring = Keyring::of({key(2, 0x55)});
  std::vector<uint8_t> under_old = plain_frame(), under_new = plain_frame();
  ASSERT_TRUE(seal_frame(old_ring, GetParam(), &under_old).is_ok());
  ASSERT_TRUE(seal_frame(both, GetParam(), &under_new).is_ok());  // the newest key seals
  FrameHeader h;
  ASSERT_TRUE(peek_frame_header(under_new.data(), under_new.size(), &h).is_ok());
  EXPECT_EQ(h.key_id, 2u);
  EXPECT_TRUE(verify_frame(both, under_old.data(), under_old.size()).is_ok());
  EXPECT_TRUE(verify_frame(both, under_new.data(), under_new.size()).is_ok());
  const Status dropped = verify_frame(new_ring, under_old.data(), under_old.size());
  EXPECT_NE(dropped.message().find("key id 1, which the key file does not hold"), std::string::npos) << dropped.message();
}

INSTANTIATE_TEST_SUITE_P(HmacAndGcm, SealTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "aes256gcm" : "hmac"; });

class KeyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::path(::testing::TempDir()) / ("dcr_key_" + std::to_string(::getpid()))).string();
    fs::remove(path_);
  }
  void TearDown() override { fs::remove(path_); }
  std::string path_;
};

TEST_F(KeyFileTest, GenerateWritesAnOwnerOnlyFileAndAppendsTheNextKey) {
  uint32_t id = 0;
  ASSERT_TRUE(Keyring::generate(path_, &id).is_ok());
  EXPECT_EQ(id, 1u);
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_TRUE(Keyring::generate(path_, &id).is_ok());
  EXPECT_EQ(id, 2u);
  Keyring ring;
  ASSERT_TRUE(Keyring::load(path_, &ring).is_ok());
  ASSERT_EQ(ring.keys().size(), 2u);
  EXPECT_EQ(ring.sealing().id, 2u);
  EXPECT_NE(ring.keys()[0].bytes, ring.keys()[1].bytes);
}

TEST_F(KeyFileTest, LoosePermissionsAndBadLinesAreRefused) {
  uint32_t id = 0;
  ASSERT_TRUE(Keyring::generate(path_, &id).is_ok());
  Keyring ring;
  for (mode_t mode : {0644, 0640, 0602}) {
    ::chmod(path_.c_str(), mode);
    const Status st = Keyring::load(path_, &ring);
    EXPECT_EQ(st.code(), Code::invalid_argument) << std::oct << mode;
    EXPECT_NE(st.message().find("chmod 600"), std::string::npos) << st.message();
  }
  ::chmod(path_.c_str(), 0600);
  std::ofstream(path_, std::ios::app) << "dcr-key 3 not-hex\n";
  const Status bad = Keyring::load(path_, &ring);
  EXPECT_NE(bad.message().find("line 3 is not 'dcr-key ID HEX'"), std::string::npos) << bad.message();
  EXPECT_EQ(Keyring::load(path_ + ".missing", &ring).code(), Code::not_found);
}

}  // namespace
}  // namespace dcr
