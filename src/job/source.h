// Where each version's canonical bits come from. The change model steps a preset or a starting
// checkpoint (the embedded demo and the benchmarks); a checkpoint series reads real HF checkpoints,
// one per version, each memory-mapped so a rank touches only the bytes of its own pieces.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dcr/ckpt/hf_checkpoint.h"
#include "dcr/model/change_model.h"
#include "dcr/refit/collective.h"
#include "src/job/config.h"
#include "dcr/layout/shard.h"

namespace dcr {

class VersionSource {
 public:
  virtual ~VersionSource() = default;
  // Collective over `control`: whether version v exists (the change model: v <= --steps; checkpoints:
  // listed, or with --watch appearing before the timeout). Every rank gets the same answer.
  virtual Status has_version(uint64_t v, Collective& control, bool* exists) = 0;
  // Makes version v's bits readable through bytes().
  virtual Status seek(uint64_t v) = 0;
  virtual TensorBytes bytes() const = 0;
  // What version v is, for the job's output ("step-0003" or "change model step 3").
  virtual std::string describe(uint64_t v) const = 0;
  // Bytes of the current version's files this process has touched (0 for the change model).
  virtual uint64_t touched_bytes() const { return 0; }
  // After reading bytes(): whether they are the version seek() opened. Checkpoints: io_error naming
  // the file a trainer saved again (truncated, rewritten, replaced) while it was read; the next
  // seek opens the version again. The change model's bits cannot change underneath: ok.
  virtual Status check_unchanged() { return Status::ok(); }
};

// Steps `model` to each version at the configured rates (version v+1 at rates[v % n]).
std::unique_ptr<VersionSource> change_model_source(const RefitConfig& config, std::unique_ptr<ChangeModel> model);

// Versions from HF checkpoint directories: --checkpoints (a glob, listed once by world rank 0) or
// --watch (rank 0 waits for the next complete one). A dangling symlink or a symlink loop among
// the matches (or in the watched directory) stops the job naming it (list_checkpoints); other
// files are skipped. Every checkpoint must have the manifest of
// the first (tensor set, shapes, dtypes; the order may differ; tensors are found by name) and its
// config.json's layout fields (`model_config`; model_config.h's layout_difference).
Status checkpoint_source(const RefitConfig& config, const Manifest& manifest, const nlohmann::json& model_config,
                         std::unique_ptr<VersionSource>* out);

// The first checkpoint of --checkpoints / --watch (rank 0 decides, every rank learns): its
// directory, for the plan's manifest and config.json.
Status first_checkpoint(const RefitConfig& config, Collective& control, std::string* dir);

}  // namespace dcr
