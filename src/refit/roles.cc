#include "dcr/refit/roles.h"

#include <chrono>
#include <algorithm>
#include <memory>
#include <thread>

#include "dcr/core/hash.h"

namespace dcr {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Flips one payload bit of a frame (a wire corruption the receiver must catch).
void corrupt(std::vector<uint8_t>* frame) {
  if (frame->size() > kFrameHeaderBytes) (*frame)[kFrameHeaderBytes] ^= 0x10;
}

Status wait_for_window(Transport* transport, size_t window, double timeout_s) {
  const auto start = Clock::now();
  while (transport->sends_in_flight() >= window) {
    DCR_TRY(transport->progress());
    DCR_REQUIRE(since(start) < timeout_s, Code::unavailable,
                "sends to the relay made no progress for " + std::to_string(timeout_s) + " s");
  }
  return Status::ok();
}

}  // namespace

namespace {

// Encodes one planned frame of this trainer (with a test fault applied to its versions).
Status encode_frame(const RefitPlan& plan, const PlannedFrame& f, FrameKind kind, Versions versions, Shard* baseline,
                    Shard* current, FrameEncoder* encoder, std::vector<uint8_t>* frame, EncodeStats* stats) {
  Region base, target;
  DCR_TRY(baseline->region(f.box, &base));
  DCR_TRY(current->region(f.box, &target));
  EncodeOptions options = encoder->options();
  options.sign_magnitude = dtype_is_float(plan.manifest.tensors[f.box.tensor].dtype);
  encoder->set_options(options);
  if (kind == FrameKind::full) return encoder->encode_full(target, versions.target, frame, stats);
  return encoder->encode_delta(base, target, versions, frame, stats);
}

// Encodes frames [first, first + frames->size()) of the plan, one per encoder, in parallel.
Status encode_wave(const RefitPlan& plan, const std::vector<PlannedFrame>& planned, size_t first, FrameKind kind,
                   Versions versions, Shard* baseline, Shard* current, const std::vector<FrameEncoder*>& encoders,
                   std::vector<std::vector<uint8_t>>* frames, std::vector<EncodeStats>* stats) {
  std::vector<Status> results(frames->size());
  auto work = [&](size_t w) {
    results[w] = encode_frame(plan, planned[first + w], kind, versions, baseline, current, encoders[w], &(*frames)[w],
                              &(*stats)[w]);
  };
  std::vector<std::thread> helpers;
  for (size_t w = 1; w < frames->size(); ++w) helpers.emplace_back(work, w);
  work(0);
  for (std::thread& t : helpers) t.join();
  for (const Status& r : results) DCR_TRY(r);
  return Status::ok();
}

}  // namespace

Status trainer_step(const RefitPlan& plan, const Link& link, int trainer, FrameKind kind, Versions versions,
                    Shard* baseline, Shard* current, const FrameFault& fault,
                    const std::vector<FrameEncoder*>& encoders, StepStats* stats, std::vector<SharedBytes>* sent) {
  const int root = link.topology->relay_rank(0);
  const bool hit = fault.kind != FrameFault::none && fault.version == versions.target && trainer == 0;
  Versions encoded = versions;
  if (hit && fault.kind == FrameFault::wrong_base) encoded.base = versions.base + 1000;
  const std::vector<PlannedFrame>& planned = plan.frames[trainer];
  DCR_TRY(fault_point(*link.kill, *link.topology, Phase::encode, versions.target));
  std::vector<std::vector<uint8_t>> frames;
  std::vector<EncodeStats> encode_stats;
  for (size_t first = 0; first < planned.size(); first += encoders.size()) {
    auto start = Clock::now();
    const size_t wave = std::min(encoders.size(), planned.size() - first);
    frames.assign(wave, {});
    encode_stats.assign(wave, {});
    DCR_TRY(encode_wave(plan, planned, first, kind, encoded, baseline, current, encoders, &frames, &encode_stats));
    stats->encode_s += since(start);
    start = Clock::now();
    for (size_t w = 0; w < wave; ++w) {
      if (stats->frames == planned.size() / 2) DCR_TRY(fault_point(*link.kill, *link.topology, Phase::stream, versions.target));
      if (hit && fault.kind == FrameFault::corrupt && stats->frames == 0) corrupt(&frames[w]);
      stats->frames += 1;
      stats->wire_bytes += frames[w].size();
      stats->changed += encode_stats[w].changed;
      stats->elements += planned[first + w].box.elements();
      auto frame = std::make_shared<const std::vector<uint8_t>>(std::move(frames[w]));
      DCR_TRY(wait_for_window(link.transport, link.window, link.timeout_s));
      if (sent != nullptr) sent->push_back(frame);
      DCR_TRY(link.transport->send(root, link.channel, std::move(frame)));
    }
    stats->send_s += since(start);
  }
  const auto start = Clock::now();
  DCR_TRY(link.transport->wait_sends(link.timeout_s));
  stats->send_s += since(start);
  return Status::ok();
}

Status relay_step(const RefitPlan& plan, const Link& link, int relay, uint64_t target, StepStats* stats) {
  const Topology& t = *link.topology;
  const uint64_t expected = plan.frames_for_relay(t, relay);
  const int parent = t.relay_parent[relay] < 0 ? kAnyPeer : t.relay_rank(t.relay_parent[relay]);
  for (uint64_t n = 0; n < expected; ++n) {
    if (n == expected / 2) DCR_TRY(fault_point(*link.kill, t, Phase::stream, target));
    auto start = Clock::now();
    Message message;
    Status got = link.transport->receive(parent, link.channel, &message, link.timeout_s);
    DCR_TRY(got.with_context(t.describe() + " waiting for frame " + std::to_string(n + 1) + " of " +
                             std::to_string(expected)));
    stats->wait_s += since(start);
    start = Clock::now();
    FrameHeader header;
    DCR_TRY(peek_frame_header(message.bytes.data(), message.bytes.size(), &header)
                .with_context(t.describe() + ": frame from " + t.describe_rank(message.peer)));
    const std::vector<int>* receivers = plan.receivers_of(header.box);
    DCR_REQUIRE(receivers != nullptr, Code::corrupt,
                t.describe() + ": frame for " + header.box.describe() + " matches no planned frame");
    auto shared = std::make_shared<const std::vector<uint8_t>>(std::move(message.bytes));
    for (int child : t.relay_children[relay]) {
      if (!RefitPlan::child_needs(t, child, *receivers)) continue;
      DCR_TRY(wait_for_window(link.transport, link.window, link.timeout_s));
      DCR_TRY(link.transport->send(child, link.channel, shared));
    }
    stats->frames += 1;
    stats->forward_s += since(start);
  }
  const auto start = Clock::now();
  DCR_TRY(link.transport->wait_sends(link.timeout_s));
  stats->forward_s += since(start);
  return Status::ok();
}

Status rollout_step(const RefitPlan& plan, const Link& link, int rollout, Versions versions, bool full, Shard* shard,
                    FrameDecoder* decoder, StepStats* stats) {
  const Topology& t = *link.topology;
  const uint64_t expected = plan.frames_for_rollout(rollout);
  const int parent = t.relay_rank(t.rollout_relay[rollout]);
  const uint64_t committed = full ? kAnyVersion : versions.base;
  Status first_error;
  for (uint64_t n = 0; n < expected; ++n) {
    if (n == expected / 2) DCR_TRY(fault_point(*link.kill, t, Phase::apply, versions.target));
    auto start = Clock::now();
    Message message;
    DCR_TRY(link.transport->receive(parent, link.channel, &message, link.timeout_s)
                .with_context(t.describe() + " waiting for frame " + std::to_string(n + 1) + " of " +
                              std::to_string(expected)));
    stats->wait_s += since(start);
    start = Clock::now();
    FrameHeader header;
    Status s = peek_frame_header(message.bytes.data(), message.bytes.size(), &header);
    Region dst;
    if (s.is_ok()) s = shard->region(header.box, &dst);
    ApplyOutcome outcome;
    if (s.is_ok()) s = decoder->apply(message.bytes.data(), message.bytes.size(), dst, committed, &outcome);
    if (!s.is_ok() && first_error.is_ok()) first_error = s;
    stats->frames += 1;
    stats->apply_s += since(start);
  }
  return first_error;
}

}  // namespace dcr
