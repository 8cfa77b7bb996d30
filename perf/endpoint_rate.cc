// The relay's forwarding rate and the rollouts' apply rate through the library endpoints, on
// loopback threads in one process: 1 trainer, 1 relay and R rollouts (each its own TP-1 replica,
// so the relay sends every frame R times) over the `tiny` preset cut into small frames (the
// per-frame costs: header reads, routing, seals, sends, applies). Each version changes a fraction
// of the trainer's bf16 values by one ulp; the first version is a full sync and is not counted.
// Per delta version it reads the relay's and every rollout's step statistics and prints medians:
//   relay frames/s  = frames the relay forwarded / its forward seconds (receive to the last send)
//   apply frames/s  = frames a rollout applied / its apply seconds (receive excluded)
// and the same per second of each thread's own CPU time over its whole step (receives sleep on the
// loopback queue, so this is the work alone): 4 threads share 2 cores here, and a thread's wall
// time also counts the moments another held its core.
// Run two builds of it side by side (farm-bench, or one after the other in one sitting) to compare.
// Usage: build/dcr_endpoint_rate [--versions 30] [--rollouts 2] [--frame-elements 1024]
//                                [--changed 0.03] [--key] [--json FILE]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dcr/model/presets.h"
#include "dcr/refit/endpoint.h"

namespace dcr {
namespace {

struct Options {
  int versions = 30, rollouts = 2;
  uint64_t frame_elements = 1024;
  double changed = 0.03;
  bool key = false;
  std::string json;
};

struct Rates {
  std::vector<double> relay_fps, apply_fps, relay_cpu_fps, rollout_cpu_fps;
  uint64_t frames = 0;  // frames the relay forwarded per version
};

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + t.tv_nsec / 1e9;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One ulp up or down on `fraction` of the bf16 values of `bytes`, at random.
void step_bf16(std::vector<uint8_t>* bytes, double fraction, std::mt19937_64* rng) {
  std::bernoulli_distribution pick(fraction);
  uint16_t* v = reinterpret_cast<uint16_t*>(bytes->data());
  for (size_t i = 0; i < bytes->size() / 2; ++i) {
    if (pick(*rng)) v[i] = static_cast<uint16_t>(v[i] + ((*rng)() & 1 ? 1 : -1));
  }
}

std::vector<BufferMemory> memory_of(const Holdings& h, std::vector<std::vector<uint8_t>>* buffers) {
  std::vector<BufferMemory> memory;
  for (size_t b = 0; b < h.buffer_names.size(); ++b) {
    buffers->emplace_back(h.buffer_elements[b] * dtype_width(h.buffer_dtypes[b]), 0);
    memory.push_back({buffers->back().data(), buffers->back().size(), h.buffer_dtypes[b], MemorySpace::host});
  }
  return memory;
}

void run_trainer(const EndpointSpec& spec, const Options& o, Transport* t, Collective* c) {
  std::unique_ptr<Trainer> trainer;
  Status st = Trainer::create(spec, t, c, &trainer);
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<BufferMemory> memory;
  if (st.is_ok()) memory = memory_of(trainer->holdings(), &buffers);
  std::mt19937_64 rng(7);
  for (auto& b : buffers) {
    uint16_t* v = reinterpret_cast<uint16_t*>(b.data());
    for (size_t i = 0; i < b.size() / 2; ++i) v[i] = static_cast<uint16_t>(0x3c00 + (rng() & 0x3ff));
  }
  for (int v = 1; st.is_ok() && v <= o.versions; ++v) {
    if (v > 1) for (auto& b : buffers) step_bf16(&b, o.changed, &rng);
    st = trainer->publish(static_cast<uint64_t>(v), memory);
  }
  if (st.is_ok()) st = trainer->close();
  if (!st.is_ok()) std::fprintf(stderr, "trainer: %s\n", st.to_string().c_str());
}

void run_relay(const EndpointSpec& spec, Transport* t, Collective* c, Rates* rates) {
  std::unique_ptr<Relay> relay;
  Status st = Relay::create(spec, t, c, &relay);
  for (bool closed = false; st.is_ok() && !closed;) {
    const double cpu = thread_cpu_s();
    st = relay->step(&closed);
    const double used = thread_cpu_s() - cpu;
    const StepStats& s = relay->last_step();
    if (st.is_ok() && !closed && relay->committed() > 1 && s.forward_s > 0) {
      rates->relay_fps.push_back(s.frames / s.forward_s);
      rates->relay_cpu_fps.push_back(s.frames / used);
      rates->frames = s.frames;
    }
  }
  if (!st.is_ok()) std::fprintf(stderr, "relay: %s\n", st.to_string().c_str());
}

void run_rollout(const EndpointSpec& spec, Transport* t, Collective* c, Rates* rates) {
  std::unique_ptr<Rollout> rollout;
  Status st = Rollout::create(spec, t, c, &rollout);
  std::vector<std::vector<uint8_t>> buffers;
  if (st.is_ok()) st = rollout->attach(memory_of(rollout->holdings(), &buffers));
  for (bool closed = false; st.is_ok() && !closed;) {
    uint64_t version = 0;
    const double cpu = thread_cpu_s();
    st = rollout->receive(&version, &closed);
    const double used = thread_cpu_s() - cpu;
    const StepStats& s = rollout->last_step();
    if (st.is_ok() && !closed && version > 1 && s.apply_s > 0) {
      rates->apply_fps.push_back(s.frames / s.apply_s);
      rates->rollout_cpu_fps.push_back(s.frames / used);
    }
  }
  if (!st.is_ok()) std::fprintf(stderr, "rollout: %s\n", st.to_string().c_str());
}

int run(const Options& o) {
  EndpointSpec spec;
  Status st = make_preset("tiny", &spec.manifest);
  spec.options.trainers = 1;
  spec.options.relays = 1;
  spec.options.rollout_tp = 1;
  spec.options.frame_elements = o.frame_elements;
  spec.options.bundle_below = 0;  // every box its own frame: the per-frame costs are what is measured
  spec.options.timeout_s = 60;
  if (o.key) {
    Key k;
    k.id = 1;
    k.bytes.fill(0x42);
    spec.keys = Keyring::of({k});
  }
  if (!st.is_ok()) return std::fprintf(stderr, "%s\n", st.to_string().c_str()), 1;
  const int ranks = 2 + o.rollouts;
  auto transports = make_loopback_group(ranks);
  auto collectives = thread_collective_group(ranks);
  Rates relay_rates;
  std::vector<Rates> rollout_rates(static_cast<size_t>(o.rollouts));
  std::vector<std::thread> threads;
  threads.emplace_back([&] { run_trainer(spec, o, transports[0].get(), collectives[0].get()); });
  threads.emplace_back([&] { run_relay(spec, transports[1].get(), collectives[1].get(), &relay_rates); });
  for (int r = 0; r < o.rollouts; ++r) {
    threads.emplace_back([&, r] {
      run_rollout(spec, transports[2 + r].get(), collectives[2 + r].get(), &rollout_rates[static_cast<size_t>(r)]);
    });
  }
  for (std::thread& t : threads) t.join();
  Rates applied;
  for (const Rates& r : rollout_rates) {
    applied.apply_fps.insert(applied.apply_fps.end(), r.apply_fps.begin(), r.apply_fps.end());
    applied.rollout_cpu_fps.insert(applied.rollout_cpu_fps.end(), r.rollout_cpu_fps.begin(), r.rollout_cpu_fps.end());
  }
  if (relay_rates.relay_fps.empty() || applied.apply_fps.empty()) return std::fprintf(stderr, "no delta measured\n"), 1;
  std::printf("frames per version %llu (frame-elements %llu, %d rollouts, %s), %zu delta versions\n",
              static_cast<unsigned long long>(relay_rates.frames), static_cast<unsigned long long>(o.frame_elements),
              o.rollouts, o.key ? "sealed HMAC-SHA-256" : "unsealed", relay_rates.relay_fps.size());
  std::printf("relay forward: %.0f frames/s, %.0f frames per CPU second (medians)\n", median(relay_rates.relay_fps),
              median(relay_rates.relay_cpu_fps));
  std::printf("rollout apply: %.0f frames/s, %.0f frames per CPU second (medians over versions and rollouts)\n",
              median(applied.apply_fps), median(applied.rollout_cpu_fps));
  if (!o.json.empty()) {
    std::ofstream(o.json) << "{\"frames\": " << relay_rates.frames << ", \"relay_frames_per_s\": "
                          << median(relay_rates.relay_fps) << ", \"apply_frames_per_s\": " << median(applied.apply_fps)
                          << ", \"relay_frames_per_cpu_s\": " << median(relay_rates.relay_cpu_fps)
                          << ", \"rollout_frames_per_cpu_s\": " << median(applied.rollout_cpu_fps) << "}\n";
  }
  return 0;
}

}  // namespace
}  // namespace dcr

int main(int argc, char** argv) {
  dcr::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--versions") o.versions = std::atoi(next), ++i;
    else if (a == "--rollouts") o.rollouts = std::atoi(next), ++i;
    else if (a == "--frame-elements") o.frame_elements = std::strtoull(next, nullptr, 10), ++i;
    else if (a == "--changed") o.changed = std::atof(next), ++i;
    else if (a == "--json") o.json = next, ++i;
    else if (a == "--key") o.key = true;
    else return std::fprintf(stderr, "unknown argument '%s' (see the usage in perf/endpoint_rate.cc)\n", argv[i]), 2;
  }
  if (o.versions < 2 || o.rollouts < 1 || o.frame_elements < 1) return std::fprintf(stderr, "bad arguments\n"), 2;
  return dcr::run(o);
}
