// The refit-time model: full refit = model bytes / aggregate inter-cluster bandwidth (+ one chunk per
// tree level, + a fitted fixed overhead); delta refit = max(encode, wire, relay, apply) + one chunk
// per tree level + commit.
#include "dcr/project/projection.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dcr {

namespace {

double bytes_per_s(double gbit_s) { return gbit_s * 1e9 / 8; }

std::string format(const char* fmt, double a, double b = 0, double c = 0) {
  char text[256];
  std::snprintf(text, sizeof(text), fmt, a, b, c);
  return text;
}

double lerp(double a, double b, double t) { return a + (b - a) * t; }

CodecPoint interpolate(const CodecPoint& a, const CodecPoint& b, double change_rate) {
  const double t = (change_rate - a.change_rate) / (b.change_rate - a.change_rate);
  CodecPoint p;
  p.name = a.name + " .. " + b.name;
  p.change_rate = change_rate;
  p.bytes_per_change = lerp(a.bytes_per_change, b.bytes_per_change, t);
  p.encode_gb_s = lerp(a.encode_gb_s, b.encode_gb_s, t);
  p.apply_gb_s = lerp(a.apply_gb_s, b.apply_gb_s, t);
  p.memcpy_gb_s = lerp(a.memcpy_gb_s, b.memcpy_gb_s, t);
  return p;
}

// The record measured nearest to `change_rate`, if within 2% of it (measured rates jitter around
// the requested ones).
const CodecPoint* nearest_record(const std::vector<CodecPoint>& points, double change_rate) {
  const CodecPoint* best = nullptr;
  for (const CodecPoint& p : points) {
    if (!best || std::fabs(p.change_rate - change_rate) < std::fabs(best->change_rate - change_rate)) best = &p;
  }
  return best && std::fabs(best->change_rate - change_rate) <= 0.02 * change_rate ? best : nullptr;
}

double relay_rate(const Cluster& cluster, const MachineRates& rates, const CodecPoint& codec) {
  return rates.refit_source.empty() ? codec.memcpy_gb_s / cluster.fanout : rates.relay_gb_s;
}

// Seconds to move one frame of `bytes_per_element`-byte words through every tree level.
double chunk_seconds(const Cluster& cluster, uint64_t frame_elements, double bytes_per_element) {
  return tree_levels(cluster.rollout_nodes, cluster.fanout) * frame_elements * bytes_per_element /
         bytes_per_s(cluster.node_gbit_s);
}

std::vector<std::string> link_lines(const Cluster& c, bool calibrated) {
  std::vector<std::string> lines = {
      format("inter-cluster: %g training nodes -> %g rollout nodes, at most %g Gbit/s per node", c.train_nodes,
             c.rollout_nodes, c.node_gbit_s) +
      format("; nominal aggregate = the smaller side x that = %g Gbit/s (dcr's tree has one root relay today, "
             "which caps it at one node's link)", nominal_aggregate_gbit_s(c))};
  if (!calibrated) {
    lines.push_back(format("aggregate inter-cluster bandwidth %.3f Gbit/s", aggregate_bytes_per_s(c) * 8 / 1e9) +
                    (c.aggregate_gbit_s > 0 ? " (given)" : " (nominal; --calibrate fits it to the paper)") +
                    format("; full-refit overhead %.1f s", c.full_overhead_s));
    return lines;
  }
  lines.push_back(format("effective aggregate %.3f Gbit/s and full-refit overhead %.1f s fitted to the paper's full "
                         "refits (120B bf16, 240 GB: 750 s; 1T bf16, 2 TB: 87.5 min)", c.aggregate_gbit_s,
                         c.full_overhead_s));
  lines.push_back("the fitted overhead is charged to full refits only (the paper's 120B delta refit, 22.6 s, is far "
                  "below it, so it is no per-refit cost)");
  return lines;
}

std::vector<std::string> stage_lines(const Cluster& c, const MachineRates& rates) {
  const double train_gpus = c.train_nodes * c.gpus_per_node;
  const std::string cpu = " at the rate of ONE CPU core of this machine (codec JSON ";
  return {
      c.encode_gb_s_per_gpu > 0
          ? format("encode: %g training GPUs each encode an equal shard at %g GB/s (given)", train_gpus,
                   c.encode_gb_s_per_gpu)
          : format("encode: %g training GPUs each encode an equal shard", train_gpus) + cpu + "encode_gbps)",
      c.apply_gb_s_per_gpu > 0
          ? format("apply: each rollout GPU applies 1/%g of the model at %g GB/s (given); replicas apply in parallel",
                   c.replica_gpus, c.apply_gb_s_per_gpu)
          : format("apply: each rollout GPU applies 1/%g of the model", c.replica_gpus) + cpu +
                "apply_gbps); replicas apply in parallel",
      rates.refit_source.empty()
          ? format("relay: each relay copies every wire byte to each of its %g children at memcpy speed (codec JSON "
                   "memcpy_gbps / %g); relay hops stay inside the rollout cluster", c.fanout, c.fanout)
          : format("relay: each relay forwards %.3f GB/s of wire bytes, as measured in ", rates.relay_gb_s) +
                rates.refit_source + " (its fanout included); relay hops stay inside the rollout cluster",
      "encode, wire, relay and apply stream concurrently: the slowest bounds the delta refit",
      format("pipeline fill: one frame (%.0f elements) per tree level, %g levels", double(rates.frame_elements),
             tree_levels(c.rollout_nodes, c.fanout)) +
          format(" (%g rollout nodes, fanout %g), at the per-node link rate; full refits too", c.rollout_nodes,
                 c.fanout),
      rates.refit_source.empty()
          ? std::string("commit: not measured (no --refit-json), counted as 0 s")
          : format("commit: %.4f s, the median joint commit of the delta steps in ", rates.commit_s) +
                rates.refit_source};
}

}  // namespace

const std::vector<FullFigure>& paper_full_figures() {
  static const std::vector<FullFigure> figures = {{"120B bf16", 240e9, 750}, {"1T bf16", 2e12, 87.5 * 60}};
  return figures;
}

const std::vector<DeltaFigure>& paper_delta_figures() {
  static const std::vector<DeltaFigure> figures = {
      {"120B at 3%", 120e9, 0.03, 22.6, 24.5}, {"120B at 5%", 120e9, 0.05, 41.6, 49.7}, {"1T at 3%", 1e12, 0.03, 150, 150}};
  return figures;
}

const DeltaFigure* paper_delta_for(double params, double change_rate) {
  for (const DeltaFigure& f : paper_delta_figures()) {
    if (std::fabs(f.params - params) < 1e-6 * f.params && std::fabs(f.change_rate - change_rate) < 1e-9) return &f;
  }
  return nullptr;
}

Status check_cluster(const Cluster& c) {
  DCR_REQUIRE(c.bytes_per_param > 0, Code::invalid_argument, "--bytes-per-param must be positive");
  DCR_REQUIRE(c.train_nodes > 0 && c.rollout_nodes > 0 && c.gpus_per_node > 0, Code::invalid_argument,
              "--train-nodes, --rollout-nodes and --gpus-per-node must be positive");
  DCR_REQUIRE(c.replica_gpus > 0, Code::invalid_argument, "--replica-gpus must be positive");
  DCR_REQUIRE(c.fanout > 0, Code::invalid_argument, "--fanout must be positive");
  DCR_REQUIRE(c.node_gbit_s > 0, Code::invalid_argument, "--node-gbps must be positive");
  DCR_REQUIRE(c.aggregate_gbit_s >= 0 && c.full_overhead_s >= 0, Code::invalid_argument,
              "--aggregate-gbps and the full-refit overhead must not be negative");
  DCR_REQUIRE(c.encode_gb_s_per_gpu >= 0 && c.apply_gb_s_per_gpu >= 0, Code::invalid_argument,
              "--encode-gbps-per-gpu and --apply-gbps-per-gpu must not be negative");
  return Status::ok();
}

double nominal_aggregate_gbit_s(const Cluster& c) { return std::min(c.train_nodes, c.rollout_nodes) * c.node_gbit_s; }

double aggregate_bytes_per_s(const Cluster& c) {
  return bytes_per_s(c.aggregate_gbit_s > 0 ? c.aggregate_gbit_s : nominal_aggregate_gbit_s(c));
}

int tree_levels(int nodes, int fanout) {
  int levels = 0;
  for (long long held = 0, width = 1; held < nodes; width *= fanout) {
    held += width;
    ++levels;
  }
  return levels;
}

Status codec_at(const MachineRates& rates, double change_rate, CodecPoint* out) {
  const std::vector<CodecPoint>& p = rates.codec;
  DCR_REQUIRE(!p.empty(), Code::invalid_argument, "no codec records in '" + rates.codec_source + "'");
  if (const CodecPoint* near = nearest_record(p, change_rate)) {
    *out = *near;
    return Status::ok();
  }
  DCR_REQUIRE(change_rate > p.front().change_rate && change_rate < p.back().change_rate, Code::invalid_argument,
              format("change rate %.2f%% is outside the measured %.2f%% .. %.2f%%", 100 * change_rate,
                     100 * p.front().change_rate, 100 * p.back().change_rate) +
                  " in '" + rates.codec_source + "' (run dcr bench codec --rates with it)");
  size_t i = 1;
  while (p[i].change_rate < change_rate) ++i;
  *out = interpolate(p[i - 1], p[i], change_rate);
  return Status::ok();
}

double full_refit_seconds(const Cluster& cluster, double model_bytes, uint64_t frame_elements) {
  return cluster.full_overhead_s + model_bytes / aggregate_bytes_per_s(cluster) +
         chunk_seconds(cluster, frame_elements, cluster.bytes_per_param);
}

Status project_refit(const Cluster& cluster, const MachineRates& rates, double params, double change_rate,
                     Projection* out) {
  DCR_TRY(check_cluster(cluster));
  DCR_REQUIRE(params > 0, Code::invalid_argument, "model size must be positive");
  Projection p;
  DCR_TRY(codec_at(rates, change_rate, &p.codec));
  p.params = params;
  p.change_rate = change_rate;
  p.model_bytes = params * cluster.bytes_per_param;
  p.wire_bytes = params * change_rate * p.codec.bytes_per_change;
  p.full_s = full_refit_seconds(cluster, p.model_bytes, rates.frame_elements);
  p.encode_gb_s = cluster.encode_gb_s_per_gpu > 0 ? cluster.encode_gb_s_per_gpu : p.codec.encode_gb_s;
  p.apply_gb_s = cluster.apply_gb_s_per_gpu > 0 ? cluster.apply_gb_s_per_gpu : p.codec.apply_gb_s;
  p.relay_gb_s = relay_rate(cluster, rates, p.codec);
  DCR_REQUIRE(p.encode_gb_s > 0 && p.apply_gb_s > 0 && p.relay_gb_s > 0, Code::invalid_argument,
              "encode, apply and relay rates must be positive (check the benchmark JSON)");
  const int train_gpus = cluster.train_nodes * cluster.gpus_per_node;
  Stages& s = p.stages;
  s.encode = p.model_bytes / train_gpus / (p.encode_gb_s * 1e9);
  s.wire = p.wire_bytes / aggregate_bytes_per_s(cluster);
  s.relay = p.wire_bytes / (p.relay_gb_s * 1e9);
  s.apply = p.model_bytes / cluster.replica_gpus / (p.apply_gb_s * 1e9);
  s.chunks = chunk_seconds(cluster, rates.frame_elements, p.wire_bytes / params);
  s.commit = rates.commit_s;
  p.delta_s = std::max({s.encode, s.wire, s.relay, s.apply}) + s.chunks + s.commit;
  *out = p;
  return Status::ok();
}

const char* bound_stage(const Stages& s) {
  const double top = std::max({s.encode, s.wire, s.relay, s.apply});
  if (top == s.encode) return "encode";
  if (top == s.wire) return "wire";
  return top == s.relay ? "relay" : "apply";
}

Status calibrate(const std::vector<FullFigure>& figures, bool fit_overhead, uint64_t frame_elements,
                 Cluster* cluster) {
  DCR_TRY(check_cluster(*cluster));
  const size_t n = figures.size();
  DCR_REQUIRE(n >= (fit_overhead ? 2u : 1u), Code::invalid_argument,
              fit_overhead ? "fitting bandwidth and overhead needs two full-refit figures"
                           : "fitting the bandwidth needs a full-refit figure");
  const double chunks = chunk_seconds(*cluster, frame_elements, cluster->bytes_per_param);
  // seconds - chunks = overhead + bytes * slope, slope = 1 / aggregate bytes per second.
  double sx = 0, sy = 0, sxx = 0, sxy = 0, rx = 0, rxx = 0;
  for (const FullFigure& f : figures) {
    const double x = f.model_bytes, y = f.seconds - chunks;
    DCR_REQUIRE(x > 0 && y > 0, Code::invalid_argument, "full-refit figure '" + f.label + "' is not positive");
    sx += x, sy += y, sxx += x * x, sxy += x * y;
    rx += x / y, rxx += x * x / (y * y);  // least relative error without an overhead
  }
  double slope = rx / rxx, overhead = 0;
  if (fit_overhead) {
    DCR_REQUIRE(n * sxx - sx * sx > 0, Code::invalid_argument, "full-refit figures need two different model sizes");
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    overhead = (sy - slope * sx) / n;
  }
  DCR_REQUIRE(slope > 0, Code::invalid_argument, "full-refit figures do not grow with model size");
  DCR_REQUIRE(overhead >= 0, Code::invalid_argument,
              format("fitted full-refit overhead is negative (%.1f s); fit the bandwidth alone", overhead));
  cluster->aggregate_gbit_s = 8 / slope / 1e9;
  cluster->full_overhead_s = overhead;
  return Status::ok();
}

std::vector<std::string> assumptions(const Cluster& c, const MachineRates& rates, bool calibrated) {
  std::vector<std::string> lines = {
      format("model bytes = parameters x %g B; every parameter is one element of that width", c.bytes_per_param),
      "wire bytes = parameters x change rate x wire bytes per changed element that the codec measured at that "
      "rate (model " + rates.codec_model + ", bf16, frame headers included), interpolated between its records"};
  for (const std::string& line : link_lines(c, calibrated)) lines.push_back(line);
  for (const std::string& line : stage_lines(c, rates)) lines.push_back(line);
  lines.push_back("no failures or retries; links and cores carry nothing else");
  return lines;
}

}  // namespace dcr
