#include "dcr/refit/options.h"

#include <algorithm>
#include <limits>

namespace dcr {
namespace {

using O = RefitOptions;
constexpr long long kInt = std::numeric_limits<int>::max();
constexpr long long kFrames = 0xffffffffll;  // positions are 32-bit offsets in a frame's box

// The trainer -> relay rate: 0 (measured) or a rate, never NaN or so slow that a frame outlasts
// --timeout and the job would blame its peers.
Option<O> link_option() {
  Option<O> o = options::number<O>("link-gbps", &O::link_gbps, 0, 1e6, false, "Gbit/s",
                                   "emulated trainer -> first relay link in Gbit/s, also the rate --contexts auto "
                                   "weighs bytes at (0: none; auto then measures the rate of each trainer's sends)");
  o.set = [](const std::string& text, O* c) {
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    DCR_REQUIRE(!text.empty() && *end == '\0' && (v == 0 || (v >= 1e-3 && v <= 1e6)), Code::invalid_argument,
                "--link-gbps " + text + " is not a rate: give 0 (no emulated link) or a number of Gbit/s in [0.001, "
                "1e6] (below 1 Mbit/s a frame outlasts --timeout and the job would blame its peers)");
    c->link_gbps = v;
    return Status::ok();
  };
  return o;
}

std::vector<Option<O>> make_table() {
  using namespace options;
  return {
      integer<O>("trainers", &O::trainers, 1, kInt, "trainer ranks"),
      integer<O>("train-tp", &O::train_tp, 1, kInt,
                 "tensor-parallel degree of the training layout (trainers / (train-tp x train-pp x train-dp) is the "
                 "FSDP degree)"),
      integer<O>("train-ep", &O::train_ep, 1, kInt,
                 "expert-parallel degree of the training layout (divides the trainers of one stage of one replica)"),
      integer<O>("train-pp", &O::train_pp, 1, kInt,
                 "pipeline stages of the training layout: each holds a range of layers (the first also the "
                 "embeddings, the last the final norm and the output layer)"),
      integers<O>("train-pp-layers", &O::train_pp_layers, 1, kInt,
                  "layers of each pipeline stage, comma separated (default: an even split)"),
      integer<O>("train-dp", &O::train_dp, 1, kInt,
                 "data-parallel replicas of the training layout: each holds the same bits; every part is sent by "
                 "one of them, spread so each sends about the same bytes"),
      flag<O>("check-replicas", &O::check_replicas,
              "trainers compare a hash of every tensor part with their data-parallel replicas before each version, "
              "and refuse it naming the tensor and the ranks where they differ (each replica reads its whole shard)"),
      integer<O>("relays", &O::relays, -1, kInt, "relay ranks (-1: one per node)"),
      integer<O>("fanout", &O::fanout, 1, kInt, "children per relay"),
      integer<O>("rollout-tp", &O::rollout_tp, 1, kInt, "tensor-parallel degree of the serving layout"),
      integer<O>("rollout-ep", &O::rollout_ep, 1, kInt,
                 "expert-parallel degree of the serving layout (divides --rollout-tp; equal to it is vLLM's expert "
                 "parallelism)"),
      flag<O>("fuse", &O::fuse, "fused qkv and gate_up serving buffers"),
      integers<O>("serve-tp", &O::serve_tp, 1, 4096,
                  "serving TP degrees frames are cut for, comma separated (1,2,4,8): a --role publish job promises "
                  "them to its followers (default: --rollout-tp), so followers of any of them share one publication"),
      integers<O>("serve-ep", &O::serve_ep, 1, 4096,
                  "serving EP degrees promised with each --serve-tp they divide (default: --rollout-ep)"),
      choice<O, ServeQuant>("serve-quant", &O::serve_quant, {{"none", ServeQuant::none}, {"fp8-block", ServeQuant::fp8_block}},
                            "what rollouts serve: none (the checkpoint's dtypes) or fp8-block (linear weights as float8 "
                            "e4m3 with one fp32 weight_scale_inv per 128 x 128 block, as vLLM loads block-FP8 "
                            "checkpoints; trainers quantize the blocks they hold and send deltas of the bytes and scales)"),
      text<O>("model-family", &O::model_family,
              "tensor rules: a name in configs/models (llama, qwen2, qwen3, mixtral, qwen3_moe, dcr) or a JSON path; "
              "default: picked by config.json's model_type / architectures"),
      integer<O>("frame-elements", &O::frame_elements, 1, kFrames, "largest frame in elements"),
      integer<O>("bundle-below", &O::bundle_below, 0, kFrames,
                 "boxes under this many elements with the same receivers and dtype share bundle frames of up to "
                 "--frame-elements (one header and one set of tables for many small tensors; 0: none)"),
      integer<O>("window", &O::window, 1, kInt, "frames each sender keeps in flight"),
      text<O>("baseline-dir", &O::baseline_dir,
              "trainers keep their committed baseline in a file-backed mapping in this directory (a scratch file each, "
              "unlinked at once) instead of memory: for hosts short of RAM; the page cache holds it (README: memory)"),
      integer<O>("encode-threads", &O::encode_threads, 1, 256,
                 "threads each trainer encodes frames with, ahead of the frame it sends (cores per trainer rank)"),
      choice<O, ContextMode>("contexts", &O::contexts,
                             {{"auto", ContextMode::automatic}, {"true", ContextMode::on}, {"false", ContextMode::off}},
                             "value packing contexts (fewer bytes, slower encode and apply): auto (where the link is "
                             "the bottleneck), true, false"),
      link_option(),
      number<O>("timeout", &O::timeout_s, 0, 1e6, true, "seconds (a deadline past that overflows the clock)",
                "seconds before a silent peer is reported dead"),
      text<O>("state-dir", &O::state_dir,
              "directory for durable progress (per-rank journals, rollout snapshots); running the same command again "
              "resumes from it"),
      text<O>("key-file", &O::key_file,
              "job key file (dcr keygen; owner-only permissions): frames are sealed with HMAC-SHA-256 under its last "
              "key and verified by relays and rollouts before use; it is read again before every version (key "
              "rotation). Without it frames are unauthenticated"),
      flag<O>("encrypt", &O::encrypt,
              "with --key-file: seal frames with AES-256-GCM instead (payload encrypted on the wire and in the spool)"),
      choice<O, ApplyMode>("apply", &O::apply, {{"stream", ApplyMode::stream}, {"staged", ApplyMode::staged}},
                           "how rollouts take a version: stream (each frame applied as it arrives: the shortest "
                           "refit, serving stopped for all of it) or staged (every frame received and checked "
                           "without touching the serving buffers, then applied by every rollout in one short pause "
                           "and committed; the buffers never hold a mix of two versions)"),
      integer<O>("stage-mb", &O::stage_mb, 0, 1ll << 40,
                 "--apply staged: MB of a version's frames each rollout holds in memory; beyond it they are "
                 "spilled to --state-dir (without one the version is refused; 0: every frame spilled)"),
      integer<O>("apply-threads", &O::apply_threads, 1, 256,
                 "--apply staged: threads each rollout applies its staged frames with in the pause (the frames "
                 "are disjoint boxes of its buffers; cores a rollout may use while serving is paused)"),
  };
}

}  // namespace

const char* job_role_name(JobRole role) {
  return role == JobRole::publish ? "publish" : role == JobRole::follow ? "follow" : "all";
}

const char* context_mode_name(ContextMode mode) {
  return mode == ContextMode::on ? "true" : mode == ContextMode::off ? "false" : "auto";
}

const char* apply_mode_name(ApplyMode mode) { return mode == ApplyMode::staged ? "staged" : "stream"; }

const std::vector<Option<RefitOptions>>& refit_option_table() {
  static const std::vector<Option<RefitOptions>> table = make_table();
  return table;
}

std::vector<ServeShape> promised_layouts(const RefitOptions& c) {
  if (c.role != JobRole::publish && c.serve_tp.empty() && c.serve_ep.empty()) return {};
  const std::vector<int> tps = c.serve_tp.empty() ? std::vector<int>{c.rollout_tp} : c.serve_tp;
  const std::vector<int> eps = c.serve_ep.empty() ? std::vector<int>{c.rollout_ep} : c.serve_ep;
  std::vector<ServeShape> out;
  for (int tp : tps) {
    for (int ep : eps) {
      if (tp % ep == 0) out.push_back({tp, ep});
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string describe_layouts(const std::vector<ServeShape>& layouts) {
  std::string text;
  for (const ServeShape& l : layouts) {
    text += (text.empty() ? "TP " : ", TP ") + std::to_string(l.tp) + (l.ep > 1 ? " EP " + std::to_string(l.ep) : "");
  }
  return text.empty() ? "none" : text;
}

Status check_refit_options(const RefitOptions& c) {
  DCR_TRY(options::check_ranges(refit_option_table(), c));
  const long long model_ranks = 1ll * c.train_tp * c.train_pp * c.train_dp;  // a replica's stage groups, all replicas
  DCR_REQUIRE(c.trainers % model_ranks == 0, Code::invalid_argument,
              "--train-tp " + std::to_string(c.train_tp) + " x --train-pp " + std::to_string(c.train_pp) +
                  " x --train-dp " + std::to_string(c.train_dp) + " must divide --trainers " +
                  std::to_string(c.trainers) + " (the rest is FSDP)");
  DCR_REQUIRE(c.relays == -1 || c.relays >= 1, Code::invalid_argument, "--relays must be at least 1 (or -1 for auto)");
  DCR_REQUIRE(c.rollout_tp % c.rollout_ep == 0, Code::invalid_argument,
              "--rollout-ep " + std::to_string(c.rollout_ep) + " must divide --rollout-tp " + std::to_string(c.rollout_tp));
  const int stage_group = c.trainers / c.train_pp / c.train_dp;  // tp * fsdp
  DCR_REQUIRE(c.trainers % model_ranks != 0 || stage_group % c.train_ep == 0, Code::invalid_argument,
              "--train-ep " + std::to_string(c.train_ep) + " must divide the " + std::to_string(stage_group) +
                  " trainers of one pipeline stage of one replica (--trainers / --train-pp / --train-dp)");
  DCR_REQUIRE(c.train_pp_layers.empty() || static_cast<int>(c.train_pp_layers.size()) == c.train_pp,
              Code::invalid_argument,
              "--train-pp-layers lists " + std::to_string(c.train_pp_layers.size()) + " stages; --train-pp is " +
                  std::to_string(c.train_pp));
  DCR_REQUIRE((c.serve_tp.empty() && c.serve_ep.empty()) || !promised_layouts(c).empty(), Code::invalid_argument,
              "no --serve-ep degree divides a --serve-tp degree: no serving layout is promised");
  DCR_REQUIRE(!c.encrypt || !c.key_file.empty(), Code::invalid_argument,
              "--encrypt needs --key-file (make one with: dcr keygen FILE)");
  return Status::ok();
}

}  // namespace dcr
