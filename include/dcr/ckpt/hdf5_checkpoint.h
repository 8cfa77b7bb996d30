// The canonical HDF5 checkpoint ("dcr-checkpoint-1"):
//   /tensors/<name>  one dataset per tensor, in manifest order (link creation order is tracked),
//                    with the tensor's shape (a scalar dataspace for shape []) and an HDF5 type for
//                    its dtype: f32/f64/i32/i64/u8 as the little-endian IEEE float or integer type,
//                    f16 as a 2-byte little-endian IEEE half (the type h5py writes for float16), bf16
//                    and f8_e4m3/f8_e5m2 as unsigned integers of their width. A '/' in a tensor name
//                    is stored as '|' (HDF5 paths split at '/'), so names containing '|' are refused.
//                    Attributes: "dtype" (string, dcr's dtype name), "hash" (uint64, dcr::hash64 of
//                    the tensor's bytes), "is_buffer" (uint8).
//   file attributes  "format" = "dcr-checkpoint-1", "version", "base" and "manifest_hash" (uint64,
//                    Manifest::hash()).
//   seal             a 512-byte HDF5 user block (skipped by HDF5 tools): "DCRSEAL1", the file's
//                    length (u64 LE) and hash64 of every byte after the block (u64 LE), written
//                    last. A file without a seal, or that does not match it, is refused before
//                    libhdf5 reads any of it.
#pragma once

#include <cstdint>
#include <string>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/shard.h"

namespace dcr {

// Writes "<path>.tmp", flushes and closes it, fsyncs it and renames it over `path` (then fsyncs the
// directory), so `path` holds either the old file or the whole new one, with permissions `mode`.
Status write_hdf5_checkpoint(const std::string& path, const Manifest& manifest, const CanonicalBits& bits,
                             uint64_t version, uint64_t base, unsigned mode = 0644);

// Reads every tensor and verifies each against its "hash" attribute (Code::corrupt naming the tensor
// on a mismatch) and the manifest against "manifest_hash". `version` may be null.
Status read_hdf5_checkpoint(const std::string& path, Manifest* manifest, CanonicalBits* bits, uint64_t* version);

}  // namespace dcr
