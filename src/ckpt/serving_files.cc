#include "dcr/ckpt/serving_files.h"

#include <cstdio>

#include "dcr/ckpt/hf_checkpoint.h"
#include "dcr/ckpt/safetensors.h"
#include "dcr/layout/serving_layout.h"
#include "src/core/files.h"

namespace dcr {

std::string serving_file_name(int tp_rank) { return "model-rank-" + std::to_string(tp_rank) + "-part-0.safetensors"; }

Status write_serving_shard(const std::string& dir, int tp_rank, const Shard& shard) {
  DCR_TRY(files::make_dirs(dir));
  return shard.with_buffers([&](const CanonicalBits& buffers) {
    return write_safetensors(dir + "/" + serving_file_name(tp_rank), shard.shaped_manifest(), buffers);
  });
}

Status write_serving_version(const std::string& dir, uint64_t version, uint64_t manifest_hash) {
  char text[96];
  const int n = std::snprintf(text, sizeof text, "version %llu\nmanifest %016llx\n", static_cast<unsigned long long>(version),
                              static_cast<unsigned long long>(manifest_hash));
  return files::write_atomic(dir + "/version", {{text, static_cast<size_t>(n)}}, true);
}

Status export_serving_shards(const std::string& checkpoint, const std::string& dir, int tp, int ep,
                             const std::string& family, ServeQuant quant) {
  std::unique_ptr<HfCheckpoint> c;
  DCR_TRY(HfCheckpoint::open(checkpoint, &c));
  ModelRules rules;
  DCR_TRY(rules_for_model(family, c->config(), c->manifest(), &rules));
  ServedModel served;
  DCR_TRY(serve_model(c->manifest(), rules, quant, &served));
  const ServingLayout layout{tp, true, ep, &served.rules};
  const BoxBytes bits = served_bytes(c->manifest(), served.manifest, served.tensors,
                                     [&c](uint32_t id) { return c->tensor(id); });
  for (int r = 0; r < tp; ++r) {
    Holdings h;
    DCR_TRY(serving_holdings(served.manifest, layout, r, &h).with_context("serving rank " + std::to_string(r)));
    Shard shard(served.manifest, std::move(h));
    DCR_TRY(shard.load(bits).with_context("checkpoint '" + checkpoint + "'"));
    DCR_TRY(write_serving_shard(dir, r, shard));
  }
  return Status::ok();
}

}  // namespace dcr
