// Checkpoint files of either format, chosen by extension: ".safetensors", or ".h5"/".hdf5" for the
// canonical HDF5 checkpoint (dcr/ckpt/hdf5_checkpoint.h).
#pragma once

#include <cstdint>
#include <string>

#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/layout/shard.h"

namespace dcr {

// Whether `bits` fits `manifest`: a valid manifest and one array of exactly nbytes() per tensor.
Status check_checkpoint(const Manifest& manifest, const CanonicalBits& bits);

// Code::invalid_argument for another extension; the reader's Status otherwise (Code::not_found
// naming the file when it does not exist).
Status load_checkpoint(const std::string& path, Manifest* manifest, CanonicalBits* bits);

// `version` is recorded by HDF5 checkpoints (with base 0: not reached by a delta); safetensors files
// have no place for it.
Status save_checkpoint(const std::string& path, const Manifest& manifest, const CanonicalBits& bits,
                       uint64_t version);

// Loads `in` and saves it as `out`, bit for bit.
Status convert_checkpoint(const std::string& in, const std::string& out, uint64_t version);

}  // namespace dcr
