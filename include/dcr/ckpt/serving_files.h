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

// Writes DIR/version: "version <v>\nmanifest <hash as 16 hex digits>\n" (after every rank's shard).
Status write_serving_version(const std::string& dir, uint64_t version, uint64_t manifest_hash);

// `dcr export`: the serving shards of every rank of one TP group, straight from a full HF
// checkpoint directory, as a rollout would publish them (family: see rules_for_model; quant: the
// served form, serve_quant.h).
Status export_serving_shards(const std::string& checkpoint, const std::string& dir, int tp, int ep,
                             const std::string& family, ServeQuant quant);

}  // namespace dcr
