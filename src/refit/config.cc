#include "dcr/refit/config.h"

#include <cmath>

#include "src/refit/context_rule.h"

namespace dcr {

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
  DCR_REQUIRE(c.link_gbps >= 0, Code::invalid_argument, "--link-gbps must not be negative");
  DCR_REQUIRE(c.timeout_s > 0 && c.timeout_s <= 1e6, Code::invalid_argument,
              "--timeout must be in (0, 1e6] seconds (a deadline past that overflows the clock)");
  DCR_REQUIRE(std::isfinite(c.link_gbps) && c.link_gbps <= 1e6, Code::invalid_argument,
              "--link-gbps must be a finite rate of at most 1e6 Gbit/s");
  DCR_REQUIRE(c.snapshot_every >= 0, Code::invalid_argument, "--snapshot-every must not be negative");
  DCR_REQUIRE(c.catchup_max >= 0, Code::invalid_argument, "--catchup-max must not be negative");
  DCR_REQUIRE(c.spool_keep >= 0, Code::invalid_argument, "--spool-keep must not be negative");
  return Status::ok();
}

}  // namespace dcr
