// The names of a frame's codings, modes, packings and seals, as messages and statistics print them.
#include "dcr/codec/frame.h"

namespace dcr {

const char* pos_coding_name(PosCoding coding) {
  switch (coding) {
    case PosCoding::all: return "all";
    case PosCoding::bitmap: return "bitmap";
    case PosCoding::gaps_varint: return "gaps-varint";
    case PosCoding::gaps_token: return "gaps-token";
    case PosCoding::gaps_joint: return "gaps-joint";
  }
  return "?";
}

const char* value_mode_name(ValueMode mode) {
  switch (mode) {
    case ValueMode::xor_mask: return "xor";
    case ValueMode::overwrite: return "overwrite";
    case ValueMode::delta_sm: return "delta-sm";
    case ValueMode::delta_tc: return "delta-tc";
  }
  return "?";
}

const char* value_packing_name(ValuePacking packing) {
  switch (packing) {
    case ValuePacking::planes: return "planes";
    case ValuePacking::tokens: return "tokens";
    case ValuePacking::words: return "words";
    case ValuePacking::joint: return "joint";
    case ValuePacking::contexts: return "contexts";
  }
  return "?";
}

const char* seal_name(Seal seal) {
  switch (seal) {
    case Seal::none: return "none";
    case Seal::hmac_sha256: return "hmac-sha256";
    case Seal::aes256_gcm: return "aes-256-gcm";
  }
  return "?";
}

}  // namespace dcr
