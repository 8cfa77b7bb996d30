#include "src/job/config.h"

#include <limits>

#include "dcr/core/number_list.h"

namespace dcr {

namespace {

using C = RefitConfig;
constexpr long long kInt = std::numeric_limits<int>::max();

Option<C> rates_option() {
  Option<C> o{"rates", "changed percent per step, comma separated, cycled", false, nullptr, nullptr};
  o.get = [](const C& c) {
    std::string text;
    for (double r : c.rates) text += (text.empty() ? "" : ",") + options::number_text(r);
    return text;
  };
  o.set = [](const std::string& text, C* c) { return parse_number_list(text, "--rates", 100, &c->rates); };
  return o;
}

Option<C> fault_option() {
  Option<C> o{"fault", "test only: wrong-base@V, corrupt@V, forge@V or unsealed@V", false, nullptr, nullptr};
  o.get = [](const C& c) { return frame_fault_text(c.fault); };
  o.set = [](const std::string& text, C* c) { return parse_frame_fault(text, &c->fault); };
  return o;
}

Option<C> fail_at_option() {
  Option<C> o{"fail-at",
              "test only: ROLE:INDEX:PHASE:VERSION[:stop][,...] kills that rank (kill -9; :stop, SIGSTOP) in phase "
              "encode|stream|stage|apply|commit|resume (stage: a rollout staged half its frames under --apply staged)",
              false, nullptr, nullptr};
  o.get = [](const C& c) { return c.fail_at.text; };
  o.set = [](const std::string& text, C* c) { return parse_kill_point(text, &c->fail_at); };
  return o;
}

std::vector<Option<C>> application_options() {
  using namespace options;
  return {
      text<C>("model", &C::model, "model preset: tiny, small, medium, large"),
      text<C>("init-checkpoint", &C::init_checkpoint,
              "start from a real checkpoint (.safetensors, .h5 or an HF directory): version 0 is its bits exactly, "
              "later versions step it with the change model"),
      text<C>("checkpoints", &C::checkpoints,
              "refit real HF checkpoints: a glob of checkpoint directories (config.json + model.safetensors or its "
              "index), in natural order; the first is the full sync, each next one a delta (--steps is ignored)"),
      text<C>("watch", &C::watch,
              "refit each new complete HF checkpoint directory appearing in DIR (complete: its index or "
              "model.safetensors present), in natural order; a file DIR/STOP ends the job after the last one"),
      number<C>("watch-timeout", &C::watch_timeout_s, 0, 1e6, true, "seconds",
                "--watch: end the job after this many seconds without a new checkpoint"),
      text<C>("serve-dir", &C::serve_dir,
              "rollouts publish their serving shard on every commit as vLLM sharded-state files "
              "(DIR/replica-<i>/model-rank-<r>-part-0.safetensors and a version file)"),
      text<C>("weights", &C::weights, "master weights: none, auto, esrgan-medium, faceres-deep"),
      choice<C, DataPlane>("transport", &C::transport, {{"ucx", DataPlane::ucx}, {"mpi", DataPlane::mpi}},
                           "data plane: ucx or mpi"),
      integer<C>("steps", &C::steps, 0, kInt, "delta refits after the first full sync"),
      rates_option(),
      flag<C>("compare-full", &C::compare_full, "also time a full refit of each version"),
      flag<C>("compare-bcast", &C::compare_bcast, "also time MPI_Bcast of the full model"),
      flag<C>("verify", &C::verify, "rollouts compare every byte with the expected model"),
      integer<C>("seed", &C::seed, 0, std::numeric_limits<long long>::max(), "seed of the change model"),
      text<C>("json", &C::json, "write per-step records as JSON to this file"),
      text<C>("csv", &C::csv, "write per-step records as CSV to this file"),
      number<C>("progress", &C::progress_s, 0, 1e6, false, "seconds",
                "while a version runs longer than this, rank 0 prints a progress line every this many seconds "
                "(phase, frames and bytes done of the total, rate, time left; 0: none)"),
      flag<C>("progress-inline", &C::progress_inline,
              "rewrite the progress line in place (for a terminal) rather than print one line each time (for a log)"),
      text<C>("progress-json", &C::progress_json,
              "also write each progress line to this file as a JSON object per line (for dashboards)"),
      integer<C>("snapshot-every", &C::snapshot_every, 0, kInt,
                 "rollouts write an HDF5 snapshot every N committed versions (0: never)"),
      text<C>("spool-dir", &C::spool_dir,
              "shared directory where trainers publish every committed delta; a restarted rollout whose snapshot is "
              "older catches up from it instead of taking a full sync"),
      integer<C>("catchup-max", &C::catchup_max, 0, kInt,
                 "longest chain of deltas a rollout replays from the spool; longer or missing chains take a full sync"),
      integer<C>("spool-keep", &C::spool_keep, 0, kInt,
                 "versions the spool keeps, newest first (trainer 0 prunes the rest after each commit); 0: --catchup-max"),
      choice<C, JobRole>("role", &C::role, {{"all", JobRole::all}, {"publish", JobRole::publish}, {"follow", JobRole::follow}},
                         "all: one job of trainers, relays and rollouts; publish: a job of --trainers ranks putting every "
                         "version into --store; follow: a job of relays and rollouts applying every version it finds in "
                         "--store, with a serving layout the publisher promises (--serve-tp, --serve-ep); it takes the model and "
                         "every publisher option from the store"),
      text<C>("store", &C::store,
              "object store joining a publish job and its follow jobs: file:///shared/dir or s3://bucket/prefix "
              "(credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials, endpoint from "
              "AWS_ENDPOINT_URL, region from AWS_REGION; never on the command line)"),
      integer<C>("full-every", &C::full_every, 1, kInt,
                 "--role publish: a full snapshot every N versions (and of the first); a follower further behind than "
                 "the deltas kept starts from the newest one"),
      number<C>("follow-timeout", &C::follow_timeout_s, 0, 1e6, true, "seconds",
                "--role follow: give up after this long without a new version in the store"),
      number<C>("poll", &C::poll_s, 0, 3600, true, "seconds",
                "--role follow: seconds between listings of the store while waiting for a version"),
      fault_option(),
      fail_at_option(),
  };
}

std::vector<Option<C>> make_table() {
  std::vector<Option<C>> table;
  for (const Option<RefitOptions>& o : refit_option_table()) table.push_back(options::lifted<C>(o));
  for (Option<C>& o : application_options()) table.push_back(std::move(o));
  return table;
}

Status check_store_roles(const RefitConfig& c) {
  if (c.role == JobRole::all) return Status::ok();
  const std::string role = job_role_name(c.role);
  DCR_REQUIRE(!c.store.empty(), Code::invalid_argument,
              "--role " + role + " needs --store URL (file:///shared/dir or s3://bucket/prefix), the same in both jobs");
  DCR_REQUIRE(c.spool_dir.empty(), Code::invalid_argument,
              "--spool-dir is the one-job spool; with --role " + role + " the store (--store) takes its place");
  DCR_REQUIRE(c.role != JobRole::publish || c.state_dir.empty(), Code::invalid_argument,
              "--role publish keeps its progress in the store (a restarted publisher resumes at the newest complete "
              "version there); --state-dir belongs to the follow job");
  return Status::ok();
}

}  // namespace

const char* data_plane_name(DataPlane plane) { return plane == DataPlane::mpi ? "mpi" : "ucx"; }

const std::vector<Option<RefitConfig>>& refit_config_table() {
  static const std::vector<Option<RefitConfig>> table = make_table();
  return table;
}

Status check_refit_config(const RefitConfig& c) {
  DCR_TRY(options::check_ranges(refit_config_table(), c));
  DCR_TRY(check_refit_options(c));  // and what must fit together
  DCR_REQUIRE(c.checkpoints.empty() || c.watch.empty(), Code::invalid_argument,
              "--checkpoints and --watch are two sources of versions; give one");
  DCR_REQUIRE(!c.from_checkpoints() || c.init_checkpoint.empty(), Code::invalid_argument,
              "--init-checkpoint starts the change model; with --checkpoints or --watch every version is a checkpoint");
  return check_store_roles(c);
}

}  // namespace dcr
