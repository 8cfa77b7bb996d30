#include "dcr/refit/config.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "dcr/layout/serve_quant.h"
#include "src/refit/context_rule.h"

namespace dcr {

namespace {

constexpr double kMinLinkGbps = 1e-3, kMaxLinkGbps = 1e6;

std::string number_text(double value) {  // as given: "nan", "1e-300" (std::to_string prints 0.000000)
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

Status check_store_roles(const RefitConfig& c) {
  DCR_REQUIRE(c.role == "all" || c.role == "publish" || c.role == "follow", Code::invalid_argument,
              "--role '" + c.role + "' is not all, publish or follow");
  if (c.role == "all") return Status::ok();
  DCR_REQUIRE(!c.store.empty(), Code::invalid_argument,
              "--role " + c.role + " needs --store URL (file:///shared/dir or s3://bucket/prefix), the same in both jobs");
  DCR_REQUIRE(c.spool_dir.empty(), Code::invalid_argument,
              "--spool-dir is the one-job spool; with --role " + c.role + " the store (--store) takes its place");
  DCR_REQUIRE(c.role != "publish" || c.rollouts >= 1, Code::invalid_argument,
              "--role publish needs --rollouts N: the rollout ranks of the follower job (frames are cut for its layout)");
  DCR_REQUIRE(c.role != "publish" || c.rollouts % c.rollout_tp == 0, Code::invalid_argument,
              "--rollouts " + std::to_string(c.rollouts) + " cannot form replicas of --rollout-tp " +
                  std::to_string(c.rollout_tp));
  DCR_REQUIRE(c.role != "publish" || c.state_dir.empty(), Code::invalid_argument,
              "--role publish keeps its progress in the store (a restarted publisher resumes at the newest complete "
              "version there); --state-dir belongs to the follow job");
  DCR_REQUIRE(c.full_every >= 1, Code::invalid_argument, "--full-every must be at least 1");
  DCR_REQUIRE(c.follow_timeout_s > 0 && c.follow_timeout_s <= 1e6, Code::invalid_argument,
              "--follow-timeout must be in (0, 1e6] seconds");
  DCR_REQUIRE(c.poll_s > 0 && c.poll_s <= 3600, Code::invalid_argument, "--poll must be in (0, 3600] seconds");
  return Status::ok();
}

}  // namespace

Status check_refit_config(const RefitConfig& c) {
  DCR_REQUIRE(c.trainers >= 1, Code::invalid_argument, "--trainers must be at least 1");
  DCR_REQUIRE(c.train_tp >= 1 && c.trainers % c.train_tp == 0, Code::invalid_argument,
              "--train-tp " + std::to_string(c.train_tp) + " must divide --trainers " + std::to_string(c.trainers));
  DCR_REQUIRE(c.relays == -1 || c.relays >= 1, Code::invalid_argument, "--relays must be at least 1 (or -1 for auto)");
  DCR_REQUIRE(c.fanout >= 1, Code::invalid_argument, "--fanout must be at least 1");
  DCR_REQUIRE(c.rollout_tp >= 1, Code::invalid_argument, "--rollout-tp must be at least 1");
  DCR_REQUIRE(c.rollout_ep >= 1 && c.rollout_tp % c.rollout_ep == 0, Code::invalid_argument,
              "--rollout-ep " + std::to_string(c.rollout_ep) + " must divide --rollout-tp " + std::to_string(c.rollout_tp));
  DCR_REQUIRE(c.train_ep >= 1 && c.trainers % c.train_ep == 0, Code::invalid_argument,
              "--train-ep " + std::to_string(c.train_ep) + " must divide --trainers " + std::to_string(c.trainers));
  DCR_REQUIRE(c.checkpoints.empty() || c.watch.empty(), Code::invalid_argument,
              "--checkpoints and --watch are two sources of versions; give one");
  DCR_REQUIRE(!c.from_checkpoints() || c.init_checkpoint.empty(), Code::invalid_argument,
              "--init-checkpoint starts the change model; with --checkpoints or --watch every version is a checkpoint");
  DCR_REQUIRE(c.watch_timeout_s > 0 && c.watch_timeout_s <= 1e6, Code::invalid_argument, "--watch-timeout must be in (0, 1e6] seconds");
  DCR_REQUIRE(!c.encrypt || !c.key_file.empty(), Code::invalid_argument,
              "--encrypt needs --key-file (make one with: dcr keygen FILE)");
  DCR_REQUIRE(c.transport == "ucx" || c.transport == "mpi", Code::invalid_argument,
              "--transport '" + c.transport + "' is not ucx or mpi");
  DCR_REQUIRE(c.steps >= 0, Code::invalid_argument, "--steps must not be negative");
  DCR_REQUIRE(c.frame_elements >= 1 && c.frame_elements <= 0xffffffffull, Code::invalid_argument,
              "--frame-elements must be in [1, 2^32-1]");
  DCR_REQUIRE(c.window >= 1, Code::invalid_argument, "--window must be at least 1");
  DCR_REQUIRE(c.encode_threads >= 1 && c.encode_threads <= 256, Code::invalid_argument,
              "--encode-threads must be in [1, 256]");
  ContextMode contexts;
  DCR_TRY(parse_context_mode(c.contexts, &contexts));
  ServeQuant quant;
  DCR_TRY(parse_serve_quant(c.serve_quant, &quant).with_context("--serve-quant"));
  DCR_REQUIRE(c.timeout_s > 0 && c.timeout_s <= 1e6, Code::invalid_argument,
              "--timeout must be in (0, 1e6] seconds (a deadline past that overflows the clock)");
  // NaN fails every comparison, so the range is checked as "inside", never as "not outside".
  const bool link_ok = c.link_gbps == 0 || (c.link_gbps >= kMinLinkGbps && c.link_gbps <= kMaxLinkGbps);
  DCR_REQUIRE(link_ok, Code::invalid_argument,
              "--link-gbps " + number_text(c.link_gbps) + " is not a rate: give 0 (no emulated link) or a number of "
              "Gbit/s in [0.001, 1e6] (below 1 Mbit/s a frame outlasts --timeout and the job would blame its peers)");
  DCR_REQUIRE(c.snapshot_every >= 0, Code::invalid_argument, "--snapshot-every must not be negative");
  DCR_REQUIRE(c.catchup_max >= 0, Code::invalid_argument, "--catchup-max must not be negative");
  DCR_REQUIRE(c.spool_keep >= 0, Code::invalid_argument, "--spool-keep must not be negative");
  DCR_TRY(check_store_roles(c));
  return Status::ok();
}

}  // namespace dcr
