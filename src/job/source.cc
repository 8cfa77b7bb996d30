#include "src/job/source.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "dcr/core/log.h"
#include "dcr/layout/model_config.h"

namespace dcr {

namespace {

using Clock = std::chrono::steady_clock;

class ChangeModelSource : public VersionSource {
 public:
  ChangeModelSource(const RefitConfig& config, std::unique_ptr<ChangeModel> model)
      : config_(config), model_(std::move(model)) {}

  Status has_version(uint64_t v, Collective&, bool* exists) override {
    *exists = v <= static_cast<uint64_t>(config_.steps);
    return Status::ok();
  }
  Status seek(uint64_t v) override {
    DCR_REQUIRE(v >= version_, Code::internal, "the change model cannot step back to version " + std::to_string(v));
    for (; version_ < v; ++version_) {
      const double percent = config_.rates[version_ % config_.rates.size()];
      DCR_TRY(model_->step(model_->tune_lr(percent / 100)));
    }
    return Status::ok();
  }
  TensorBytes bytes() const override {
    const ChangeModel* m = model_.get();
    return [m](uint32_t tensor) { return m->stored(tensor); };
  }
  std::string describe(uint64_t v) const override { return "change model step " + std::to_string(v); }

 private:
  RefitConfig config_;
  std::unique_ptr<ChangeModel> model_;
  uint64_t version_ = 0;
};

// World rank 0's list (names joined by '\n'), or the error `listed` it got making it, sent to
// every rank: each returns that error.
Status share_list(const Status& listed, std::vector<std::string>* dirs, Collective& control) {
  std::string joined;
  for (const std::string& d : *dirs) joined += d + "\n";
  if (!listed.is_ok()) joined = listed.message();
  const uint64_t code = control.broadcast(static_cast<uint64_t>(listed.code()), 0);
  std::vector<uint8_t> bytes(joined.begin(), joined.end());
  control.broadcast(&bytes, 0);
  joined.assign(bytes.begin(), bytes.end());
  dirs->clear();
  DCR_REQUIRE(code == static_cast<uint64_t>(Code::ok), static_cast<Code>(code), joined);
  for (size_t at = 0; at < joined.size();) {
    const size_t end = joined.find('\n', at);
    dirs->push_back(joined.substr(at, end - at));
    at = end + 1;
  }
  return Status::ok();
}

// The complete checkpoints in a watched directory, in natural order. An empty directory holds
// none; a dangling symlink or a symlink loop there is an error (list_checkpoints).
Status complete_in(const std::string& dir, std::vector<std::string>* complete) {
  std::vector<std::string> all;
  complete->clear();
  const Status listed = list_checkpoints(dir + "/*", &all);
  if (listed.code() == Code::not_found) return Status::ok();
  DCR_TRY(listed);
  for (const std::string& d : all) {
    if (hf_checkpoint_complete(d)) complete->push_back(d);
  }
  return Status::ok();
}

// Whether checkpoint `dir` opens whole: a trainer may still be writing one whose index (or
// model.safetensors) is already there. *why says what is missing.
bool readable(const std::string& dir, std::string* why) {
  std::unique_ptr<HfCheckpoint> c;
  const Status st = HfCheckpoint::open(dir, &c);
  *why = st.message();
  return st.is_ok();
}

// Rank 0: the listed checkpoints, or with --watch those present once there are more than `need`
// and checkpoint `need` opens whole: the list ends before the first from `need` on that does not
// open yet (or, once the timeout passed or a file named STOP says no more will come, all of them,
// so that one which never opened is reported by its reader). No match at all is an empty list
// (the callers say what that means); a match that leads nowhere is an error.
Status rank0_list(const RefitConfig& config, size_t need, std::vector<std::string>* dirs) {
  dirs->clear();
  if (!config.checkpoints.empty()) {
    const Status listed = list_checkpoints(config.checkpoints, dirs);
    return listed.code() == Code::not_found ? Status::ok() : listed;
  }
  const auto start = Clock::now();
  std::string said, why;  // what the last line said it waits for (each is said once)
  while (std::filesystem::is_directory(config.watch)) {  // a missing directory is reported at once
    DCR_TRY(complete_in(config.watch, dirs));
    size_t ready = need;
    while (ready < dirs->size() && readable((*dirs)[ready], &why)) ++ready;
    if (ready > need) {
      dirs->resize(ready);
      return Status::ok();
    }
    if (std::filesystem::exists(config.watch + "/STOP")) return Status::ok();
    if (std::chrono::duration<double>(Clock::now() - start).count() > config.watch_timeout_s) return Status::ok();
    const std::string waiting = dirs->size() > need ? "waiting for '" + (*dirs)[need] + "' to be complete"
                                                    : "waiting for checkpoint " + std::to_string(need + 1) + " in '" +
                                                          config.watch + "'";
    if (waiting != said) DCR_LOG(info, "refit", "%s%s", waiting.c_str(), dirs->size() > need ? (" (" + why + ")").c_str() : "");
    said = waiting;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Status::ok();
}

class CheckpointSource : public VersionSource {
 public:
  CheckpointSource(const RefitConfig& config, const Manifest& manifest, const nlohmann::json& model_config)
      : config_(config), manifest_(manifest), model_config_(model_config) {}

  Status has_version(uint64_t v, Collective& control, bool* exists) override {
    if (v >= dirs_.size()) {
      const Status listed = control.rank() == 0 ? rank0_list(config_, v, &dirs_) : Status::ok();
      DCR_TRY(share_list(listed, &dirs_, control));
    }
    *exists = v < dirs_.size();
    return Status::ok();
  }
  Status seek(uint64_t v) override {
    DCR_REQUIRE(v < dirs_.size(), Code::not_found, "no checkpoint for version " + std::to_string(v));
    if (open_ && open_version_ == v && !stale_) return Status::ok();
    open_.reset();
    stale_ = false;
    DCR_TRY(HfCheckpoint::open(dirs_[v], &open_));
    const std::string difference = manifest_difference(manifest_, open_->manifest());
    DCR_REQUIRE(difference.empty(), Code::invalid_argument,
                "checkpoint '" + dirs_[v] + "' is not the model of '" + dirs_[0] + "': " + difference);
    const std::string changed = layout_difference(model_config_, open_->config());
    DCR_REQUIRE(changed.empty(), Code::invalid_argument,
                "checkpoint '" + dirs_[v] + "' changes config.json from '" + dirs_[0] + "': " + changed +
                    "; the job's layouts were made from the first checkpoint's, so a model of another geometry needs "
                    "a job of its own");
    std::map<std::string, uint32_t> by_name;
    for (uint32_t id = 0; id < open_->manifest().tensors.size(); ++id) by_name[open_->manifest().tensors[id].name] = id;
    order_.clear();
    for (const TensorDesc& t : manifest_.tensors) order_.push_back(by_name.at(t.name));
    open_version_ = v;
    return Status::ok();
  }
  TensorBytes bytes() const override {
    return [this](uint32_t tensor) { return open_->tensor(order_[tensor]); };
  }
  std::string describe(uint64_t v) const override { return v < dirs_.size() ? dirs_[v] : "?"; }
  uint64_t touched_bytes() const override { return open_ ? open_->resident_bytes() : 0; }
  // The open checkpoint stays mapped after a failure (bytes() may still be read: zeros where pages
  // vanished), but is stale: the next seek, to this version too, maps the files again.
  Status check_unchanged() override {
    const Status st = open_ ? open_->check_unchanged() : Status::ok();
    if (st.is_ok()) return st;
    stale_ = true;
    return Status(st.code(), st.message() + "; rerun the same command once the writer has finished");
  }

 private:
  RefitConfig config_;
  Manifest manifest_;
  nlohmann::json model_config_;  // the first checkpoint's config.json
  std::vector<std::string> dirs_;
  std::unique_ptr<HfCheckpoint> open_;
  uint64_t open_version_ = 0;
  bool stale_ = false;  // a file of open_ changed while it was read
  std::vector<uint32_t> order_;  // plan tensor id -> id in the open checkpoint
};

}  // namespace

std::unique_ptr<VersionSource> change_model_source(const RefitConfig& config, std::unique_ptr<ChangeModel> model) {
  return std::make_unique<ChangeModelSource>(config, std::move(model));
}

Status checkpoint_source(const RefitConfig& config, const Manifest& manifest, const nlohmann::json& model_config,
                         std::unique_ptr<VersionSource>* out) {
  *out = std::make_unique<CheckpointSource>(config, manifest, model_config);
  return Status::ok();
}

Status first_checkpoint(const RefitConfig& config, Collective& control, std::string* dir) {
  std::vector<std::string> dirs;
  const Status listed = control.rank() == 0 ? rank0_list(config, 0, &dirs) : Status::ok();
  DCR_TRY(share_list(listed, &dirs, control));
  DCR_REQUIRE(!dirs.empty(), Code::not_found,
              config.checkpoints.empty()
                  ? "no complete checkpoint appeared in '" + config.watch + "' within --watch-timeout (" +
                        (std::filesystem::is_directory(config.watch) ? "is the trainer writing there?" : "no such directory") + ")"
                  : "no checkpoint directory matches '" + config.checkpoints + "'");
  *dir = dirs[0];
  return Status::ok();
}

}  // namespace dcr
