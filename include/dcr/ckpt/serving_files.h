// A serving rank's buffers as vLLM sharded-state files (ShardedStateLoader, --load-format
// sharded_state): DIR/model-rank-<tp rank>-part-0.safetensors holding each buffer under its vLLM
// parameter name and shape, and a `version` file naming the committed version and manifest hash.
// Every file is written to a temporary name, fsync'ed and renamed, so a reader sees whole files.
#pragma once

#include <cstdint>
#include <string>

#include "dcr/core/status.h"
#include "dcr/layout/serve_quant.h"
#include "dcr/layout/shard.h"

namespace dcr {

std::string serving_file_name(int tp_rank);  // "model-rank-<r>-part-0.safetensors"

// Writes `shard` (a serving rank's holdings, with buffer shapes) into `dir`, creating it.
Status write_serving_shard(const std::string& dir, int tp_rank, const Shard& shard);

// The layout a serving directory is published in: the replica's TP and EP degrees and the served
// manifest's hash (which covers the model and its serving form, --serve-quant).
struct ServingDirLayout {
  int tp = 1, ep = 1;
  uint64_t manifest_hash = 0;
};

// Writes DIR/version: "version <v>\nmanifest <hash as 16 hex digits>\nlayout tp <t> ep <e>\n"
// (after every rank's shard).
Status write_serving_version(const std::string& dir, uint64_t version, const ServingDirLayout& layout);

// The version DIR/version names; *found false when there is no such file. invalid_argument for a
// file that is not a dcr version file.
Status read_serving_version(const std::string& dir, bool* found, uint64_t* version);

// Before a job publishes into replica directory `dir`: creates it and checks a file can be written
// there, and refuses (invalid_argument naming the file and the remedy) one that holds another
// layout's publication: a rank file beyond `layout.tp`, or a version file of another model, serving
// form, TP or EP. Files of this layout (a job resumed) are fine.
Status check_serving_dir(const std::string& dir, const ServingDirLayout& layout);

// `dcr export`: the serving shards of every rank of one TP group, straight from a full HF
// checkpoint directory, as a rollout would publish them (family: see rules_for_model; quant: the
// served form, serve_quant.h).
Status export_serving_shards(const std::string& checkpoint, const std::string& dir, int tp, int ep,
                             const std::string& family, ServeQuant quant);

}  // namespace dcr
