#include "dcr/refit/roles.h"

#include <chrono>
#include <algorithm>
#include <memory>

#include "dcr/auth/seal.h"
#include "dcr/core/hash.h"
#include "dcr/core/ordered_pool.h"
#include "src/core/clock.h"
#include "src/refit/context_rule.h"
#include "src/refit/frame_stage.h"

namespace dcr {

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::encode: return "encode";
    case Phase::stream: return "stream";
    case Phase::stage: return "stage";
    case Phase::apply: return "apply";
    case Phase::commit: return "commit";
  }
  return "?";
}

const char* step_stage_name(StepStage stage) {
  switch (stage) {
    case StepStage::idle: return "idle";
    case StepStage::sending: return "sending";
    case StepStage::staging: return "staging";
    case StepStage::applying: return "applying";
    case StepStage::committing: return "committing";
  }
  return "?";
}

namespace {

// A sealed frame from a rank without a key file is refused with the reason.
Status check_unsealed(const FrameHeader& h) {
  DCR_REQUIRE(h.seal == Seal::none, Code::corrupt,
              "frame " + h.describe() + " is sealed (" + seal_name(h.seal) + ", key " + std::to_string(h.key_id) +
                  ") but this rank has no --key-file");
  return Status::ok();
}

// The caller's hook at a phase point of this step (nothing without one).
Status reach(const Link& link, Phase phase, uint64_t target) {
  return link.hooks && link.hooks->at ? link.hooks->at(*link.topology, phase, target) : Status::ok();
}

void start_counting(const Link& link, uint64_t expected) {
  if (link.progress) link.progress->enter(link.progress->stage, expected);
}

void count(const Link& link, uint64_t bytes) {
  if (link.progress) link.progress->moved(bytes);
}

Status wait_for_window(Transport* transport, size_t window, double timeout_s) {
  const auto start = Clock::now();
  while (transport->sends_in_flight() >= window) {
    DCR_TRY(transport->progress());
    DCR_REQUIRE(seconds_since(start) < timeout_s, Code::unavailable,
                "sends to the relay made no progress for " + std::to_string(timeout_s) + " s");
  }
  return Status::ok();
}

}  // namespace

namespace {

// Encodes one planned frame of this trainer, sealed when the job has a key.
Status encode_frame(const RefitPlan& plan, const Link& link, const PlannedFrame& f, FrameKind kind, Versions versions,
                    Shard* baseline, Shard* current, FrameEncoder* encoder, std::vector<uint8_t>* frame,
                    EncodeStats* stats) {
  std::vector<Region> bases(f.parts.size()), targets(f.parts.size());
  for (size_t i = 0; i < f.parts.size(); ++i) {
    DCR_TRY(baseline->region(f.parts[i], &bases[i]));
    DCR_TRY(current->region(f.parts[i], &targets[i]));
  }
  EncodeOptions options = encoder->options();
  set_dtype(plan.manifest.tensors[f.parts[0].tensor].dtype, &options);
  if (link.contexts) link.contexts->prepare(&options);
  encoder->set_options(options);
  const bool full = kind == FrameKind::full;
  if (f.bundle()) {
    DCR_TRY(full ? encoder->encode_full_bundle(targets, versions.target, frame, stats, f.box.row0)
                 : encoder->encode_bundle(bases, targets, versions, frame, stats, f.box.row0));
  } else {
    DCR_TRY(full ? encoder->encode_full(targets[0], versions.target, frame, stats)
                 : encoder->encode_delta(bases[0], targets[0], versions, frame, stats));
  }
  return link.keys ? seal_frame(*link.keys, link.encrypt, frame) : Status::ok();
}

}  // namespace

Status encode_frames(const RefitPlan& plan, const Link& link, int trainer, FrameKind kind, Versions versions,
                     Shard* baseline, Shard* current, const std::vector<FrameEncoder*>& encoders, StepStats* stats,
                     const FrameSink& deliver) {
  const std::vector<PlannedFrame>& planned = plan.frames[trainer];
  DCR_TRY(reach(link, Phase::encode, versions.target));
  start_counting(link, planned.size());
  // Encoders work ahead on the frames after the one being delivered (run_ordered); a frame is
  // delivered the moment it and those before it are encoded. encode_s is the time spent waiting
  // for encoders, send_s the time spent delivering.
  std::vector<std::vector<uint8_t>> frames(planned.size());
  std::vector<EncodeStats> encode_stats(planned.size());
  auto encode = [&](size_t i, int worker) {
    return encode_frame(plan, link, planned[i], kind, versions, baseline, current, encoders[worker], &frames[i],
                        &encode_stats[i]);
  };
  auto ready = Clock::now();
  auto send = [&](size_t i) -> Status {
    auto start = Clock::now();
    stats->encode_s += std::chrono::duration<double>(start - ready).count();
    if (stats->frames == planned.size() / 2) DCR_TRY(reach(link, Phase::stream, versions.target));
    stats->frames += 1;
    stats->wire_bytes += frames[i].size();
    count(link, frames[i].size());
    stats->changed += encode_stats[i].changed;
    stats->context_frames += encode_stats[i].value_packing == ValuePacking::contexts;
    stats->declined_frames += encode_stats[i].contexts_declined;
    stats->elements += planned[i].box.elements();
    stats->scanned_bytes += planned[i].box.elements() * plan.manifest.tensors[planned[i].parts[0].tensor].width();
    DCR_TRY(deliver(std::make_shared<const std::vector<uint8_t>>(std::move(frames[i]))));
    ready = Clock::now();
    stats->send_s += std::chrono::duration<double>(ready - start).count();
    return Status::ok();
  };
  return run_ordered(planned.size(), static_cast<int>(encoders.size()), 2 * encoders.size(), encode, send);
}

Status trainer_step(const RefitPlan& plan, const Link& link, int trainer, FrameKind kind, Versions versions,
                    Shard* baseline, Shard* current, const std::vector<FrameEncoder*>& encoders, StepStats* stats,
                    std::vector<SharedBytes>* sent, const FrameSink& sink) {
  if (sink) return encode_frames(plan, link, trainer, kind, versions, baseline, current, encoders, stats, sink);
  const int root = link.topology->relay_rank(0);
  const std::string to_root = link.topology->describe() + " sending to " + link.topology->describe_rank(root);
  auto deliver = [&](SharedBytes frame) -> Status {
    DCR_TRY(wait_for_window(link.transport, link.window, link.timeout_s).with_context(to_root));
    if (sent != nullptr) sent->push_back(frame);
    return link.transport->send(root, link.channel, std::move(frame)).with_context(to_root);
  };
  DCR_TRY(encode_frames(plan, link, trainer, kind, versions, baseline, current, encoders, stats, deliver));
  const auto start = Clock::now();
  DCR_TRY(link.transport->wait_sends(link.timeout_s).with_context(to_root));
  stats->send_s += seconds_since(start);
  return Status::ok();
}

namespace {

// An empty message on the pass's channel ends the pass below a relay that refused a frame, so its
// subtree learns it at once rather than after --timeout; the relay then takes the rest of the
// frames it expected (dropped), so the senders' posted sends complete.
void abort_pass(const Link& link, int relay, int parent, uint64_t left) {
  const Topology& t = *link.topology;
  auto empty = std::make_shared<const std::vector<uint8_t>>();
  for (int child : t.relay_children[relay]) (void)link.transport->send(child, link.channel, empty);
  for (uint64_t n = 0; n < left; ++n) {
    Message dropped;
    if (!link.transport->receive(parent, link.channel, &dropped, link.timeout_s).is_ok() || dropped.bytes.empty()) break;
  }
  (void)link.transport->wait_sends(link.timeout_s);
}

// The context of a receive that failed: "rank 9 (relay 1 on n03) waiting for frame 3 of 19 from
// rank 6 (relay 0 on n02)". Built only on failure, not for every frame.
std::string waiting_for(const Topology& t, uint64_t n, uint64_t expected, const std::string& sender) {
  return t.describe() + " waiting for frame " + std::to_string(n + 1) + " of " + std::to_string(expected) + " from " +
         sender;
}

Status upstream_aborted(const Topology& t, const Message& m) {
  return Status(Code::aborted, t.describe() + ": " + t.describe_rank(m.peer) +
                                   " ended this version's frames (it refused one; see its message)");
}

// A follower's root relay reads every frame the publisher's trainers encoded: it counts them as
// they would have (changes, elements, frames and contexts), so the follower's records say so too.
void count_published(const FrameHeader& h, StepStats* stats) {
  stats->sent += 1;
  stats->changed += h.changed;
  stats->elements += h.count();
  stats->context_frames += h.value_packing == ValuePacking::contexts;
}

}  // namespace

Status relay_step(const RefitPlan& plan, const Link& link, int relay, uint64_t target, StepStats* stats,
                  const FrameFeed& feed) {
  const Topology& t = *link.topology;
  const uint64_t expected = plan.frames_for_relay(t, relay);
  const int parent = t.relay_parent[relay] < 0 ? kAnyPeer : t.relay_rank(t.relay_parent[relay]);
  const std::string sender = feed ? "the store" : parent == kAnyPeer ? t.describe_trainers() : t.describe_rank(parent);
  start_counting(link, expected);
  for (uint64_t n = 0; n < expected; ++n) {
    if (n == expected / 2) DCR_TRY(reach(link, Phase::stream, target));
    auto start = Clock::now();
    Message message;
    const Status got = feed ? feed(n, &message) : link.transport->receive(parent, link.channel, &message, link.timeout_s);
    if (!got.is_ok() && feed) {
      abort_pass(link, relay, parent, 0);  // its subtree learns at once
      return got.with_context(t.describe() + " reading frame " + std::to_string(n + 1) + " of " +
                              std::to_string(expected) + " from the store");
    }
    if (!got.is_ok()) return got.with_context(waiting_for(t, n, expected, sender));
    stats->wait_s += seconds_since(start);
    start = Clock::now();
    if (message.bytes.empty()) {
      abort_pass(link, relay, parent, 0);
      return upstream_aborted(t, message);
    }
    const std::string from = t.describe() + ": frame " + std::to_string(n + 1) + " from " + (feed ? sender : t.describe_rank(message.peer));
    FrameView view;  // the header read once: checked, then routed by its box
    Status checked = view_frame(message.bytes.data(), message.bytes.size(), &view);
    if (checked.is_ok()) checked = link.keys ? verify_frame(*link.keys, view) : check_unsealed(view.header);
    const FrameHeader& header = view.header;
    const std::vector<int>* receivers = checked.is_ok() ? plan.receivers_of(header.box) : nullptr;
    if (checked.is_ok() && receivers == nullptr) {
      checked = Status(Code::corrupt, "frame for " + header.box.describe() + " matches no planned frame");
    }
    if (!checked.is_ok()) {
      abort_pass(link, relay, parent, feed ? 0 : expected - n - 1);  // a feed has no sender to drain
      return checked.with_context(from);
    }
    if (feed) count_published(header, stats);
    count(link, message.bytes.size());
    auto shared = std::make_shared<const std::vector<uint8_t>>(std::move(message.bytes));
    for (int child : t.relay_children[relay]) {
      if (!RefitPlan::child_needs(t, child, *receivers)) continue;
      DCR_TRY(wait_for_window(link.transport, link.window, link.timeout_s));
      DCR_TRY(link.transport->send(child, link.channel, shared));
    }
    stats->frames += 1;
    stats->forward_s += seconds_since(start);
  }
  const auto start = Clock::now();
  DCR_TRY(link.transport->wait_sends(link.timeout_s));
  stats->forward_s += seconds_since(start);
  return Status::ok();
}

Status apply_frame(FrameView* frame, uint64_t committed, Shard* shard, FrameDecoder* decoder, ApplyOutcome* outcome) {
  DCR_TRY(check_payload(frame));  // once (a seal's tag already covered it)
  if (!frame->header.is_bundle()) {
    Region dst;
    DCR_TRY(shard->region(frame->header.box, &dst));
    return decoder->apply(*frame, dst, committed, outcome);
  }
  std::vector<Box> boxes;
  DCR_TRY(decoder->bundle_boxes(*frame, &boxes));
  std::vector<Region> dsts(boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i) DCR_TRY(shard->region(boxes[i], &dsts[i]));
  return decoder->apply_bundle(*frame, dsts, committed, outcome);
}

Status check_staged(FrameView* frame, Versions versions, bool full, Shard* shard, FrameDecoder* decoder) {
  DCR_TRY(check_payload(frame));
  const FrameHeader& h = frame->header;
  DCR_REQUIRE(h.target_version == versions.target && (full || h.is_full() || h.base_version == versions.base),
              Code::base_mismatch,
              "frame " + h.describe() + " does not belong to this step (version " + std::to_string(versions.base) +
                  " -> " + std::to_string(versions.target) + ")");
  std::vector<Box> boxes = {h.box};
  if (h.is_bundle()) DCR_TRY(decoder->bundle_boxes(*frame, &boxes));
  Region region;
  for (const Box& box : boxes) {
    DCR_TRY(shard->region(box, &region).with_context("frame " + h.describe()));
    DCR_REQUIRE(region.width == h.elem_width, Code::invalid_argument,
                "frame " + h.describe() + " has " + std::to_string(h.elem_width) + "-byte elements, its destination " +
                    std::to_string(region.width));
  }
  return Status::ok();
}

Status rollout_step(const RefitPlan& plan, const Link& link, int rollout, Versions versions, bool full, Shard* shard,
                    FrameDecoder* decoder, StepStats* stats, FrameStage* stage) {
  const Topology& t = *link.topology;
  const uint64_t expected = plan.frames_for_rollout(rollout);
  const int parent = t.relay_rank(t.rollout_relay[rollout]);
  const uint64_t committed = full ? kAnyVersion : versions.base;
  Status first_error;
  start_counting(link, expected);
  for (uint64_t n = 0; n < expected; ++n) {
    if (n == expected / 2) DCR_TRY(reach(link, stage ? Phase::stage : Phase::apply, versions.target));
    auto start = Clock::now();
    Message message;
    Status got = link.transport->receive(parent, link.channel, &message, link.timeout_s);
    if (!got.is_ok()) return got.with_context(waiting_for(t, n, expected, t.describe_rank(parent)));
    if (message.bytes.empty()) return upstream_aborted(t, message);
    stats->wait_s += seconds_since(start);
    stats->received_bytes += message.bytes.size();
    count(link, message.bytes.size());
    start = Clock::now();
    // A sealed frame that will be spilled is kept sealed (frame_stage.h): opened here to check it, and
    // again when the pause reads it back.
    std::vector<uint8_t> sealed;
    if (stage && link.keys && stage->spills(message.bytes.capacity())) sealed = message.bytes;
    FrameView view;  // read once: opened (a sealed frame) or viewed, then applied or staged
    Status s = link.keys ? open_frame(*link.keys, &message.bytes, &view)
                         : view_frame(message.bytes.data(), message.bytes.size(), &view);
    if (!s.is_ok()) s = s.with_context("frame " + std::to_string(n + 1) + " from " + t.describe_rank(message.peer));
    ApplyOutcome outcome;
    if (s.is_ok() && stage) s = check_staged(&view, versions, full, shard, decoder);
    if (s.is_ok() && stage && first_error.is_ok()) s = stage->add(sealed.empty() ? std::move(message.bytes) : std::move(sealed));
    if (s.is_ok() && !stage) s = apply_frame(&view, committed, shard, decoder, &outcome);
    if (!s.is_ok() && first_error.is_ok()) first_error = s;
    stats->frames += 1;
    if (!stage) stats->apply_s += seconds_since(start);
  }
  if (stage) stats->staged_memory = stage->memory_bytes(), stats->staged_spilled = stage->spilled_bytes();
  return first_error;
}

Status apply_staged(FrameStage* stage, const Link& link, Versions versions, bool full, Shard* shard,
                    const std::vector<FrameDecoder*>& decoders, StepStats* stats) {
  const auto start = Clock::now();
  const uint64_t committed = full ? kAnyVersion : versions.base;
  const size_t frames = stage->frames();
  start_counting(link, frames);
  std::atomic<size_t> started{0};
  std::vector<std::vector<uint8_t>> scratch(decoders.size());  // one per worker: a spilled frame read back
  // Each worker applies whole frames; a rollout's frames are disjoint boxes of its buffers.
  auto apply_one = [&](size_t i, int worker) -> Status {
    if (started++ == frames / 2) DCR_TRY(reach(link, Phase::apply, versions.target));
    std::vector<uint8_t>* frame = nullptr;
    DCR_TRY(stage->get(i, &scratch[worker], &frame));
    count(link, frame->size());
    FrameView view;  // spilled frames of a sealed job come back sealed: authenticated again here
    Status read = view_frame(frame->data(), frame->size(), &view);
    view.payload_checked = !stage->spilled(i);  // check_staged hashed these very bytes on arrival
    if (read.is_ok() && view.header.seal != Seal::none) {
      read = link.keys ? open_frame(*link.keys, frame, &view) : check_unsealed(view.header);
    }
    DCR_TRY(read.with_context("staged frame " + std::to_string(i + 1) +
                              (stage->spilled(i) ? " (read back from the spill file)" : "")));
    ApplyOutcome outcome;
    return apply_frame(&view, committed, shard, decoders[worker], &outcome);
  };
  const int threads = static_cast<int>(decoders.size());
  const Status applied = run_ordered(frames, threads, 4 * decoders.size(), apply_one, [](size_t) { return Status::ok(); });
  stats->apply_s += seconds_since(start);
  return applied;
}

}  // namespace dcr
