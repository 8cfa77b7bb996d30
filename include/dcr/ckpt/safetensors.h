// safetensors files (the Hugging Face format): an 8-byte little-endian header length N, N bytes of
// UTF-8 JSON mapping each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
// into the byte buffer that follows the header) plus an optional "__metadata__" string map, then the
// byte buffer, which the tensors must tile exactly (no gaps, no overlaps, nothing after the last).
// dtypes read and written: BF16, F16, F32, F64, I64, I32, U8, F8_E4M3, F8_E5M2.
#pragma once

#include <map>
#include <vector>
#include <string>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/shard.h"

namespace dcr {

using SafetensorsMetadata = std::map<std::string, std::string>;

// Reads every tensor bit for bit, in the order of their data offsets (the file's natural order).
// Any violation of the format is Code::corrupt naming the file and the tensor; tensors with a zero
// dimension (allowed by the format) are refused because a dcr manifest has none. `metadata` may be
// null.
Status read_safetensors(const std::string& path, Manifest* manifest, CanonicalBits* bits,
                        SafetensorsMetadata* metadata = nullptr);

// A tensor of a safetensors file and where its bytes lie in the file (absolute offsets).
struct SafetensorsEntry {
  TensorDesc desc;
  uint64_t begin = 0, end = 0;
};

// Reads and checks only the header (the same checks as read_safetensors, tiling included, against
// the file's size): the tensors in the order of their data offsets. Nothing of the data is read.
Status read_safetensors_header(const std::string& path, std::vector<SafetensorsEntry>* entries);

// Writes the tensors in manifest order, the header padded with spaces to a multiple of 8 bytes, via
// "<path>.tmp" renamed over `path` once synced.
Status write_safetensors(const std::string& path, const Manifest& manifest, const CanonicalBits& bits,
                         const SafetensorsMetadata& metadata = {});

// The one rule for safetensors files, which do not say which tensors are buffers: a name that
// contains "inv_freq" (rotary frequencies) or ends with "step_counter".
bool is_buffer_name(const std::string& name);

}  // namespace dcr
