// Sealed frames (docs/frame-format.md, "Seal"): a frame is authenticated with HMAC-SHA-256 under the
// job key, or encrypted and authenticated with AES-256-GCM (the header stays readable and is
// authenticated as associated data, so relays route by box without the payload). OpenSSL does the
// cryptography; this file only lays out the fields. Keys for each use are derived from the job key
// (HMAC-SHA-256 of the key over a label), so one key never serves two algorithms.
#pragma once

#include <cstdint>
#include <vector>

#include "dcr/auth/keyring.h"
#include "dcr/codec/frame.h"
#include "dcr/core/status.h"

namespace dcr {

// Seals a plain frame in place under the ring's newest key: HMAC-SHA-256, or with `encrypt`
// AES-256-GCM with a random 96-bit nonce. invalid_argument for a frame already sealed or malformed.
Status seal_frame(const Keyring& keys, bool encrypt, std::vector<uint8_t>* frame);
// Checks a sealed frame's tag without changing it (relays): corrupt naming the frame for a missing
// seal, an unknown key id, or a wrong tag. The view (frame.h) is the hop's one reading of it.
Status verify_frame(const Keyring& keys, const FrameView& frame);
Status verify_frame(const Keyring& keys, const uint8_t* frame, size_t size);
// Checks a sealed frame and turns it into the plain frame it sealed (decrypted), in place; *view
// becomes its view, the payload marked checked (the tag covered it: no checksum after).
Status open_frame(const Keyring& keys, std::vector<uint8_t>* frame, FrameView* view);
Status open_frame(const Keyring& keys, std::vector<uint8_t>* frame);

// A tag over text (spool manifests): HMAC-SHA-256 under the ring's newest key (derived for text),
// as 64 hex digits, with the key id that made it.
std::string text_tag(const Keyring& keys, const std::string& text, uint32_t* key_id);
// Whether `hex` is the tag of `text` under key `key_id` of the ring; corrupt naming `what` if not.
Status check_text_tag(const Keyring& keys, const std::string& text, uint32_t key_id, const std::string& hex,
                      const std::string& what);

}  // namespace dcr
