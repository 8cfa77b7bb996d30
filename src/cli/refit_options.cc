// `dcr refit` options: the command line and an INI file (--config) into a RefitConfig, which the
// refit library checks (check_refit_config).
#include "src/cli/refit_options.h"

#include <boost/program_options.hpp>

#include <iostream>

#include "dcr/core/number_list.h"
#include "src/cli/program_options.h"

namespace po = boost::program_options;

namespace dcr {

Status parse_refit_config(int argc, char** argv, RefitConfig* c, bool* exit_now) {
  *exit_now = false;
  std::string config_file, rates = "1,3,5";
  po::options_description desc(
      "dcr refit: one SPMD job of trainer, relay and rollout ranks. Every step the trainers encode the\n"
      "change of their shards as frames and stream them through the relay tree; rollouts apply them in\n"
      "place in their serving layout; the root commits the version only when every rollout verified.\n"
      "Ranks: [0, trainers) train, the next `relays` relay, the rest roll out; with --relays -1 the\n"
      "lowest non-trainer rank of each node relays (one relay per rollout node, by host name).\n"
      "Example: mpirun -np 6 dcr refit --config configs/refit_local.ini\n\noptions");
  desc.add_options()
      ("help,h", "show this help")
      ("config", po::value(&config_file), "INI file with any of these options (command-line options win)")
      ("model", po::value(&c->model)->default_value(c->model), "model preset: tiny, small, medium, large")
      ("init-checkpoint", po::value(&c->init_checkpoint),
       "start from a real checkpoint (.safetensors, .h5 or an HF directory): version 0 is its bits exactly, later "
       "versions step it with the change model")
      ("checkpoints", po::value(&c->checkpoints),
       "refit real HF checkpoints: a glob of checkpoint directories (config.json + model.safetensors or its index), "
       "in natural order; the first is the full sync, each next one a delta (--steps is ignored)")
      ("watch", po::value(&c->watch),
       "refit each new complete HF checkpoint directory appearing in DIR (complete: its index or "
       "model.safetensors present), in natural order; a file DIR/STOP ends the job after the last one")
      ("watch-timeout", po::value(&c->watch_timeout_s)->default_value(c->watch_timeout_s),
       "--watch: end the job after this many seconds without a new checkpoint")
      ("model-family", po::value(&c->model_family),
       "tensor rules: a name in configs/models (llama, qwen2, qwen3, mixtral, qwen3_moe, dcr) or a JSON path; "
       "default: picked by config.json's model_type / architectures")
      ("serve-dir", po::value(&c->serve_dir),
       "rollouts publish their serving shard on every commit as vLLM sharded-state files "
       "(DIR/replica-<i>/model-rank-<r>-part-0.safetensors and a version file)")
      ("weights", po::value(&c->weights)->default_value(c->weights), "master weights: none, auto, esrgan-medium, faceres-deep")
      ("trainers", po::value(&c->trainers)->default_value(c->trainers), "trainer ranks")
      ("train-tp", po::value(&c->train_tp)->default_value(c->train_tp), "tensor-parallel degree of the training layout (divides trainers; the rest is FSDP)")
      ("relays", po::value(&c->relays)->default_value(c->relays), "relay ranks (-1: one per node)")
      ("fanout", po::value(&c->fanout)->default_value(c->fanout), "children per relay")
      ("rollout-tp", po::value(&c->rollout_tp)->default_value(c->rollout_tp), "tensor-parallel degree of the serving layout")
      ("rollout-ep", po::value(&c->rollout_ep)->default_value(c->rollout_ep),
       "expert-parallel degree of the serving layout (divides --rollout-tp; equal to it is vLLM's expert parallelism)")
      ("train-ep", po::value(&c->train_ep)->default_value(c->train_ep),
       "expert-parallel degree of the training layout (divides --trainers)")
      ("fuse", switch_value(&c->fuse), "fused qkv and gate_up serving buffers")
      ("serve-quant", po::value(&c->serve_quant)->default_value(c->serve_quant),
       "what rollouts serve: none (the checkpoint's dtypes) or fp8-block (linear weights as float8 e4m3 with one "
       "fp32 weight_scale_inv per 128 x 128 block, as vLLM loads block-FP8 checkpoints; trainers quantize the "
       "blocks they hold and send deltas of the bytes and scales)")
      ("transport", po::value(&c->transport)->default_value(c->transport), "data plane: ucx or mpi")
      ("steps", po::value(&c->steps)->default_value(c->steps), "delta refits after the first full sync")
      ("rates", po::value(&rates)->default_value(rates), "changed percent per step, comma separated, cycled")
      ("frame-elements", po::value(&c->frame_elements)->default_value(c->frame_elements), "largest frame in elements")
      ("bundle-below", po::value(&c->bundle_below)->default_value(c->bundle_below),
       "boxes under this many elements with the same receivers and dtype share bundle frames of up to "
       "--frame-elements (one header and one set of tables for many small tensors; 0: none)")
      ("window", po::value(&c->window)->default_value(c->window), "frames each sender keeps in flight")
      ("encode-threads", po::value(&c->encode_threads)->default_value(c->encode_threads),
       "threads each trainer encodes frames with, ahead of the frame it sends (cores per trainer rank)")
      ("contexts", po::value(&c->contexts)->default_value(c->contexts),
       "value packing contexts (fewer bytes, slower encode and apply): auto (where the link is the bottleneck), "
       "true, false")
      ("link-gbps", po::value(&c->link_gbps)->default_value(c->link_gbps), "emulated trainer -> first relay link in Gbit/s, also the rate --contexts auto "
       "weighs bytes at (0: none; auto then measures the rate of each trainer's sends)")
      ("compare-full", switch_value(&c->compare_full), "also time a full refit of each version")
      ("compare-bcast", switch_value(&c->compare_bcast), "also time MPI_Bcast of the full model")
      ("verify", switch_value(&c->verify), "rollouts compare every byte with the expected model")
      ("timeout", po::value(&c->timeout_s)->default_value(c->timeout_s), "seconds before a silent peer is reported dead")
      ("seed", po::value(&c->seed)->default_value(c->seed), "seed of the change model")
      ("json", po::value(&c->json), "write per-step records as JSON to this file")
      ("csv", po::value(&c->csv), "write per-step records as CSV to this file")
      ("state-dir", po::value(&c->state_dir),
       "directory for durable progress (per-rank journals, rollout snapshots); running the same command again "
       "resumes from it")
      ("snapshot-every", po::value(&c->snapshot_every)->default_value(c->snapshot_every),
       "rollouts write an HDF5 snapshot every N committed versions (0: never)")
      ("spool-dir", po::value(&c->spool_dir),
       "shared directory where trainers publish every committed delta; a restarted rollout whose snapshot is "
       "older catches up from it instead of taking a full sync")
      ("catchup-max", po::value(&c->catchup_max)->default_value(c->catchup_max),
       "longest chain of deltas a rollout replays from the spool; longer or missing chains take a full sync")
      ("spool-keep", po::value(&c->spool_keep)->default_value(c->spool_keep),
       "versions the spool keeps, newest first (trainer 0 prunes the rest after each commit); 0: --catchup-max")
      ("role", po::value(&c->role)->default_value(c->role),
       "all: one job of trainers, relays and rollouts; publish: a job of --trainers ranks putting every version "
       "into --store; follow: a job of relays and rollouts applying every version it finds in --store "
       "(the two jobs share only the store URL and these layout options)")
      ("store", po::value(&c->store),
       "object store joining a publish job and its follow jobs: file:///shared/dir or s3://bucket/prefix "
       "(credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or ~/.aws/credentials, endpoint from "
       "AWS_ENDPOINT_URL, region from AWS_REGION; never on the command line)")
      ("rollouts", po::value(&c->rollouts)->default_value(c->rollouts),
       "--role publish: the rollout ranks of the follow jobs (frames are cut for their layout)")
      ("full-every", po::value(&c->full_every)->default_value(c->full_every),
       "--role publish: a full snapshot every N versions (and of the first); a follower further behind than the "
       "deltas kept starts from the newest one")
      ("follow-timeout", po::value(&c->follow_timeout_s)->default_value(c->follow_timeout_s),
       "--role follow: give up after this long without a new version in the store")
      ("poll", po::value(&c->poll_s)->default_value(c->poll_s),
       "--role follow: seconds between listings of the store while waiting for a version")
      ("key-file", po::value(&c->key_file),
       "job key file (dcr keygen; owner-only permissions): frames are sealed with HMAC-SHA-256 under its last key "
       "and verified by relays and rollouts before use; it is read again before every version (key rotation). "
       "Without it frames are unauthenticated")
      ("encrypt", switch_value(&c->encrypt),
       "with --key-file: seal frames with AES-256-GCM instead (payload encrypted on the wire and in the spool)")
      ("fault", po::value(&c->fault), "test only: wrong-base@V, corrupt@V, forge@V or unsealed@V")
      ("fail-at", po::value(&c->fail_at),
       "test only: ROLE:INDEX:PHASE:VERSION[:stop][,...] kills that rank (kill -9; :stop, SIGSTOP) in phase "
       "encode|stream|apply|commit|resume");
  po::variables_map vm;
  DCR_TRY(parse_program_options(argc, argv, desc, &vm));
  if (vm.count("help")) {
    std::cout << desc << "\n";
    *exit_now = true;
    return Status::ok();
  }
  DCR_TRY(parse_number_list(rates, "--rates", 100, &c->rates));
  return check_refit_config(*c);
}

}  // namespace dcr
