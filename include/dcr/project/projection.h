// A projection of refit time for large models on a training cluster -> rollout cluster setup, from
// stage rates measured on this machine (rates.h reads them from the benchmark JSON files).
// Everything here is a pure function of its arguments. Units: bytes, seconds; link rates in Gbit/s,
// codec rates in GB/s (1e9 bytes of model per second), as the benchmarks print them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

// What the codec did at one change rate (one record of `dcr bench codec --json`).
struct CodecPoint {
  std::string name;             // the record's case, e.g. "adam 3.00%"
  double change_rate = 0;       // changed fraction of elements
  double bytes_per_change = 0;  // wire bytes per changed element, frame headers included
  double encode_gb_s = 0;       // model GB encoded per second by one core
  double apply_gb_s = 0;        // model GB applied per second by one core
  double memcpy_gb_s = 0;       // memcpy of the model in the same run
};

struct MachineRates {
  std::string codec_source;       // the codec JSON file
  std::string codec_model;        // the preset it measured
  std::vector<CodecPoint> codec;  // ascending change rate
  uint64_t frame_elements = 0;    // elements per frame (one chunk)
  std::string refit_source;       // the refit JSON file; empty: no refit job measured
  double relay_gb_s = 0;          // wire GB one relay received and forwarded per second
  double commit_s = 0;            // median joint commit of a delta step
};

struct Cluster {
  double bytes_per_param = 2;
  int train_nodes = 4;
  int gpus_per_node = 8;
  int rollout_nodes = 8;
  int replica_gpus = 8;            // rollout GPUs that share one copy of the model
  int fanout = 2;                  // children per relay
  double node_gbit_s = 5;          // inter-cluster limit per node
  double aggregate_gbit_s = 0;     // effective inter-cluster bandwidth; 0: the nominal one
  double full_overhead_s = 0;      // fixed cost of a full refit (fitted by calibrate)
  double encode_gb_s_per_gpu = 0;  // 0: the codec's one-core rate
  double apply_gb_s_per_gpu = 0;   // 0: the codec's one-core rate
};

// Seconds per stage of a delta refit. encode, wire, relay and apply stream concurrently, so the
// slowest bounds the refit; chunks (one per tree level to fill the pipeline) and commit add to it.
struct Stages {
  double encode = 0, wire = 0, relay = 0, apply = 0, chunks = 0, commit = 0;
};

struct Projection {
  double params = 0;
  double change_rate = 0;
  double model_bytes = 0;
  double wire_bytes = 0;
  double full_s = 0;
  double delta_s = 0;
  Stages stages;
  CodecPoint codec;          // the codec rates used (interpolated between records)
  double encode_gb_s = 0;    // per training GPU
  double apply_gb_s = 0;     // per rollout GPU
  double relay_gb_s = 0;     // per relay node
};

// A published full-refit time, and a published delta-refit range.
struct FullFigure {
  std::string label;
  double model_bytes = 0;
  double seconds = 0;
};
struct DeltaFigure {
  std::string label;
  double params = 0;
  double change_rate = 0;
  double low_s = 0, high_s = 0;
};
const std::vector<FullFigure>& paper_full_figures();
const std::vector<DeltaFigure>& paper_delta_figures();
// The paper's delta figure for this case, or nullptr.
const DeltaFigure* paper_delta_for(double params, double change_rate);

Status check_cluster(const Cluster& cluster);
double nominal_aggregate_gbit_s(const Cluster& cluster);
double aggregate_bytes_per_s(const Cluster& cluster);
// Levels of a relay tree with `fanout` children per node that holds `nodes` nodes.
int tree_levels(int nodes, int fanout);

// Codec rates at `change_rate`: a record's own when its measured rate is within 2% of it, else
// interpolated linearly between the records around it; an error names the measured range when the
// rate lies outside it.
Status codec_at(const MachineRates& rates, double change_rate, CodecPoint* out);

double full_refit_seconds(const Cluster& cluster, double model_bytes, uint64_t frame_elements);
Status project_refit(const Cluster& cluster, const MachineRates& rates, double params, double change_rate,
                     Projection* out);
const char* bound_stage(const Stages& stages);

// Fits cluster->aggregate_gbit_s (and, with fit_overhead, cluster->full_overhead_s) so that
// full_refit_seconds matches the figures: least squares, exact for two figures with the overhead.
Status calibrate(const std::vector<FullFigure>& figures, bool fit_overhead, uint64_t frame_elements,
                 Cluster* cluster);

// One line per assumption the projection makes.
std::vector<std::string> assumptions(const Cluster& cluster, const MachineRates& rates, bool calibrated);

}  // namespace dcr
