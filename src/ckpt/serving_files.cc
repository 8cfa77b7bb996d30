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

Status write_serving_version(const std::string& dir, uint64_t version, const ServingDirLayout& layout) {
  char text[128];
  const int n = std::snprintf(text, sizeof text, "version %llu\nmanifest %016llx\nlayout tp %d ep %d\n",
                              static_cast<unsigned long long>(version),
                              static_cast<unsigned long long>(layout.manifest_hash), layout.tp, layout.ep);
  return files::write_atomic(dir + "/version", {{text, static_cast<size_t>(n)}}, true);
}

namespace {

// What an earlier job wrote into DIR/version: its version, manifest and layout (0 where absent).
struct PublishedVersion {
  unsigned long long version = 0, manifest = 0;
  int tp = 0, ep = 0;
};

Status read_published(const std::string& path, bool* found, PublishedVersion* out) {
  std::vector<uint8_t> bytes;
  DCR_TRY(files::read_whole(path, &bytes, found).with_context("--serve-dir"));
  const std::string text(bytes.begin(), bytes.end());
  const int fields = std::sscanf(text.c_str(), "version %llu\nmanifest %llx\nlayout tp %d ep %d", &out->version,
                                 &out->manifest, &out->tp, &out->ep);
  DCR_REQUIRE(!*found || fields >= 2, Code::invalid_argument,
              "'" + path + "' is not a dcr version file; remove it, or publish into another directory");
  return Status::ok();
}

}  // namespace

Status read_serving_version(const std::string& dir, bool* found, uint64_t* version) {
  PublishedVersion was;
  DCR_TRY(read_published(dir + "/version", found, &was));
  *version = was.version;
  return Status::ok();
}

Status check_serving_dir(const std::string& dir, const ServingDirLayout& layout) {
  DCR_TRY(files::make_dirs(dir).with_context("--serve-dir"));
  const std::string probe = dir + "/.dcr-write-check";
  DCR_TRY(files::write_atomic(probe, {{"x", 1}}, false).with_context("--serve-dir: '" + dir + "' cannot be written"));
  std::remove(probe.c_str());
  std::vector<std::string> names;
  DCR_TRY(files::list_dir(dir, &names));
  const std::string remedy = ": it was published by a job of another layout; remove the directory's files, or publish "
                             "into an empty one";
  for (const std::string& name : names) {
    int rank = 0, part = 0, end = 0;
    if (std::sscanf(name.c_str(), "model-rank-%d-part-%d.safetensors%n", &rank, &part, &end) != 2 ||
        end != static_cast<int>(name.size())) {
      continue;
    }
    DCR_REQUIRE(rank < layout.tp, Code::invalid_argument,
                "--serve-dir: '" + dir + "/" + name + "' is the shard of tp rank " + std::to_string(rank) +
                    ", but this job's replicas have tp " + std::to_string(layout.tp) + remedy);
  }
  bool found = false;
  PublishedVersion was;
  DCR_TRY(read_published(dir + "/version", &found, &was));
  if (!found) return Status::ok();
  char hashes[64];
  std::snprintf(hashes, sizeof hashes, "manifest %016llx there, %016llx for this job", was.manifest,
                static_cast<unsigned long long>(layout.manifest_hash));
  DCR_REQUIRE(was.manifest == layout.manifest_hash, Code::invalid_argument,
              "--serve-dir: '" + dir + "/version' holds version " + std::to_string(was.version) +
                  " of another model or serving form (" + hashes + ")" + remedy);
  DCR_REQUIRE(was.tp == 0 || (was.tp == layout.tp && was.ep == layout.ep), Code::invalid_argument,
              "--serve-dir: '" + dir + "/version' was published with tp " + std::to_string(was.tp) + " ep " +
                  std::to_string(was.ep) + ", this job serves tp " + std::to_string(layout.tp) + " ep " +
                  std::to_string(layout.ep) + remedy);
  return Status::ok();
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
