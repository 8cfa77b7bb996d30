#include "dcr/auth/seal.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <climits>
#include <cstring>
#include <memory>

namespace dcr {

namespace {

constexpr size_t kTagBytes = 32, kNonceBytes = 12, kGcmTagBytes = 16;
using Digest = std::array<uint8_t, 32>;

Digest hmac(const uint8_t* key, size_t key_bytes, const uint8_t* data, size_t bytes) {
  Digest out{};
  unsigned len = 0;
  HMAC(EVP_sha256(), key, static_cast<int>(key_bytes), data, bytes, out.data(), &len);
  return out;
}

// One key per use, derived from the job key, so one key never serves two algorithms; within a
// publication, one key per use and publication, so a seal never opens in another publication.
Digest derived(const Keyring& keys, const Key& key, const char* use) {
  std::string label = use;
  if (!keys.publication().empty()) label += " publication " + keys.publication();
  return hmac(key.bytes.data(), key.bytes.size(), reinterpret_cast<const uint8_t*>(label.data()), label.size());
}

struct CipherCtx {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  ~CipherCtx() { EVP_CIPHER_CTX_free(ctx); }
};

// AES-256-GCM over `payload` in place (or into `out`), the header as associated data.
bool gcm(bool encrypt, const Keyring& keys, const Key& key, const uint8_t* nonce, const uint8_t* header,
         const uint8_t* in, uint8_t* out, uint64_t bytes, uint8_t* tag) {
  const Digest k = derived(keys, key, "dcr frame aes-256-gcm");
  CipherCtx c;
  int len = 0;
  bool ok = c.ctx != nullptr &&
            EVP_CipherInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, k.data(), nonce, encrypt ? 1 : 0) == 1 &&
            EVP_CipherUpdate(c.ctx, nullptr, &len, header, static_cast<int>(kFrameHeaderBytes)) == 1;
  for (uint64_t done = 0; ok && done < bytes;) {
    const int chunk = static_cast<int>(std::min<uint64_t>(bytes - done, INT_MAX / 2));
    ok = EVP_CipherUpdate(c.ctx, out + done, &len, in + done, chunk) == 1;
    done += static_cast<uint64_t>(chunk);
  }
  if (ok && !encrypt) ok = EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, kGcmTagBytes, tag) == 1;
  ok = ok && EVP_CipherFinal_ex(c.ctx, out + bytes, &len) == 1;
  if (ok && encrypt) ok = EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, kGcmTagBytes, tag) == 1;
  return ok;
}

// The key that sealed the frame a view reads.
Status sealing_key(const Keyring& keys, const FrameHeader& h, const Key** key) {
  DCR_REQUIRE(h.seal != Seal::none, Code::corrupt,
              "frame " + h.describe() + " is not authenticated (no MAC) but this job has a key file: refused");
  *key = keys.find(h.key_id);
  DCR_REQUIRE(*key != nullptr, Code::corrupt,
              "frame " + h.describe() + " is sealed with key id " + std::to_string(h.key_id) +
                  ", which the key file does not hold: refused");
  return Status::ok();
}

Status forged(const FrameHeader& h) {
  return Status(Code::corrupt, "frame " + h.describe() + ": its " + seal_name(h.seal) + " tag does not match (key id " +
                                   std::to_string(h.key_id) + "): forged, damaged or sealed under another key; refused");
}

}  // namespace

Status seal_frame(const Keyring& keys, bool encrypt, std::vector<uint8_t>* frame) {
  FrameHeader h;
  DCR_TRY(peek_frame_header(frame->data(), frame->size(), &h));
  DCR_REQUIRE(h.seal == Seal::none, Code::invalid_argument, "frame " + h.describe() + " is already sealed");
  DCR_REQUIRE(!keys.keys().empty(), Code::invalid_argument, "no key to seal frames with");
  const Key& key = keys.sealing();
  h.seal = encrypt ? Seal::aes256_gcm : Seal::hmac_sha256;
  h.key_id = key.id;
  write_frame_header(h, frame->data());
  const size_t body = kFrameHeaderBytes + h.payload_bytes;
  frame->resize(body + seal_trailer_bytes(h.seal));
  uint8_t* trailer = frame->data() + body;
  if (!encrypt) {
    const Digest k = derived(keys, key, "dcr frame hmac-sha256");
    const Digest tag = hmac(k.data(), k.size(), frame->data(), body);
    std::memcpy(trailer, tag.data(), kTagBytes);
    return Status::ok();
  }
  // Random 96-bit nonces: a repeat among 2^32 frames under one key has probability below 2^-32.
  DCR_REQUIRE(RAND_bytes(trailer, kNonceBytes) == 1, Code::internal, "OpenSSL could not draw a nonce");
  uint8_t* payload = frame->data() + kFrameHeaderBytes;
  DCR_REQUIRE(gcm(true, keys, key, trailer, frame->data(), payload, payload, h.payload_bytes, trailer + kNonceBytes),
              Code::internal, "AES-256-GCM failed sealing frame " + h.describe());
  return Status::ok();
}

Status verify_frame(const Keyring& keys, const FrameView& view) {
  const FrameHeader& h = view.header;
  const Key* key = nullptr;
  DCR_TRY(sealing_key(keys, h, &key));
  const size_t body = kFrameHeaderBytes + h.payload_bytes;
  const uint8_t* trailer = view.data + body;
  if (h.seal == Seal::hmac_sha256) {
    const Digest k = derived(keys, *key, "dcr frame hmac-sha256");
    const Digest tag = hmac(k.data(), k.size(), view.data, body);
    return CRYPTO_memcmp(tag.data(), trailer, kTagBytes) == 0 ? Status::ok() : forged(h);
  }
  // GCM checks its tag only while decrypting: into scratch memory, which is dropped.
  std::unique_ptr<uint8_t[]> scratch(new uint8_t[h.payload_bytes + 16]);
  uint8_t tag[kGcmTagBytes];
  std::memcpy(tag, trailer + kNonceBytes, kGcmTagBytes);
  const bool ok = gcm(false, keys, *key, trailer, view.data, view.payload(), scratch.get(), h.payload_bytes, tag);
  return ok ? Status::ok() : forged(h);
}

Status verify_frame(const Keyring& keys, const uint8_t* frame, size_t size) {
  FrameView view;
  DCR_TRY(view_frame(frame, size, &view));
  return verify_frame(keys, view);
}

Status open_frame(const Keyring& keys, std::vector<uint8_t>* frame, FrameView* view) {
  DCR_TRY(view_frame(frame->data(), frame->size(), view));
  FrameHeader h = view->header;
  const Key* key = nullptr;
  DCR_TRY(sealing_key(keys, h, &key));
  if (h.seal == Seal::hmac_sha256) {
    DCR_TRY(verify_frame(keys, *view));
  } else {
    uint8_t* trailer = frame->data() + kFrameHeaderBytes + h.payload_bytes;
    uint8_t* payload = frame->data() + kFrameHeaderBytes;
    uint8_t tag[kGcmTagBytes];
    std::memcpy(tag, trailer + kNonceBytes, kGcmTagBytes);
    if (!gcm(false, keys, *key, trailer, frame->data(), payload, payload, h.payload_bytes, tag)) return forged(h);
  }
  h.seal = Seal::none;
  h.key_id = 0;
  write_frame_header(h, frame->data());
  frame->resize(kFrameHeaderBytes + h.payload_bytes);
  *view = FrameView{frame->data(), frame->size(), h, true};  // the tag covered the payload
  return Status::ok();
}

Status open_frame(const Keyring& keys, std::vector<uint8_t>* frame) {
  FrameView view;
  return open_frame(keys, frame, &view);
}

namespace {
std::string to_hex(const Digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : d) out += {digits[b >> 4], digits[b & 15]};
  return out;
}

Digest text_digest(const Keyring& keys, const Key& key, const std::string& text) {
  const Digest k = derived(keys, key, "dcr spool manifest hmac-sha256");
  return hmac(k.data(), k.size(), reinterpret_cast<const uint8_t*>(text.data()), text.size());
}
}  // namespace

std::string text_tag(const Keyring& keys, const std::string& text, uint32_t* key_id) {
  *key_id = keys.sealing().id;
  return to_hex(text_digest(keys, keys.sealing(), text));
}

Status check_text_tag(const Keyring& keys, const std::string& text, uint32_t key_id, const std::string& hex,
                      const std::string& what) {
  const Key* key = keys.find(key_id);
  DCR_REQUIRE(key != nullptr, Code::corrupt,
              what + " is authenticated with key id " + std::to_string(key_id) + ", which the key file does not hold");
  const std::string expected = to_hex(text_digest(keys, *key, text));
  DCR_REQUIRE(hex.size() == expected.size() && CRYPTO_memcmp(hex.data(), expected.data(), hex.size()) == 0,
              Code::corrupt, what + ": its HMAC-SHA-256 tag does not match (forged or altered); refused");
  return Status::ok();
}

}  // namespace dcr
