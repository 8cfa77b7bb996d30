// The honest BF16 training change model: fp32 master weights take Adam-like steps and the stored
// copy is their round-to-nearest-even cast, so a stored element changes exactly when its master
// crosses a rounding boundary of the stored format (about 1% of bf16 elements per step at realistic
// learning rates). Benchmarks and tests use it to produce realistic version-to-version bit changes.
//
// Values are never special-cased; they follow the arithmetic:
// - A value tiny compared with the step (e.g. |w| ~ 1e-30, as in some shipped f32 weights) moves by
//   many of its own ulps, so it changes at every step whatever the learning rate; a model seeded
//   from such weights has a change-rate floor that tune_lr cannot go below.
// - A master sitting exactly on a rounding tie (f16-derived values seen as bf16) is stored rounded
//   to even; any step that moves the fp32 master at all moves it off the tie, so it changes
//   whenever the step points towards the odd neighbour (about half the time), however small.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dcr/core/box.h"
#include "dcr/core/status.h"
#include "dcr/core/tensor.h"
#include "dcr/model/real_weights.h"

namespace dcr {

struct ChangeModelOptions {
  uint64_t seed = 0;
  // Scale each row's steps by a factor drawn once per row (log-normal around 1, rows differ ~2-4x),
  // as Adam's per-parameter normalisation and uneven gradients do in practice.
  bool row_scaled = true;
  // Real weights to take the initial masters from (read during create only), else seeded draws.
  const RealWeights* pool = nullptr;
  // The exact stored bits to start from (a real checkpoint, one byte array per tensor; read during
  // create only): parameters' masters start at their values, buffers at their bits. Wins over pool.
  const std::vector<std::vector<uint8_t>>* initial = nullptr;
  // The parameter boxes this model keeps (a rank's own rows; they may overlap), else every element.
  // The others read as zero and cost no memory; buffers are kept whole. Steps, injections and
  // tune_lr give every kept element the bits a whole model gives it (tune_lr's sample is its own).
  const std::vector<Box>* held = nullptr;
};

class ChangeModel {
 public:
  // Parameters must be bf16, f16 or f32; buffers may have any dtype. A buffer named "*inv_freq"
  // must be f32 and holds rotary frequencies 1/10000^(2i/head_dim), head_dim = 2 * its length; one
  // named "*step_counter" must be i64 and counts steps from 0; other buffers hold zeros for good.
  static Status create(const Manifest& manifest, const ChangeModelOptions& options,
                       std::unique_ptr<ChangeModel>* out);

  ~ChangeModel();

  const Manifest& manifest() const { return manifest_; }
  // Stored bits of a tensor: canonical flat row-major layout, little-endian elements (zero outside
  // the held boxes).
  const uint8_t* stored(size_t tensor) const;
  // fp32 masters of a parameter, numel() of them (null for buffers; zero outside the held boxes).
  const float* master(size_t tensor) const;
  std::vector<std::vector<uint8_t>> snapshot() const;  // a copy of every tensor's stored bits
  uint64_t steps() const { return steps_; }             // step() and inject_uniform() calls so far
  uint64_t parameter_elements() const { return parameter_elements_; }
  uint64_t held_parameter_elements() const { return held_elements_; }

  // One optimizer step: every parameter element's master += lr * scale(row) * u, with u a fresh
  // bell-shaped unit draw on [-3, 3] (see change_model.cc), then the stored copy is recast; buffers
  // advance (step_counter += 1). Deterministic in (seed, step number). lr must be finite and >= 0.
  Status step(double lr);

  // The learning rate at which about `fraction` (in (0, 1)) of the parameter elements change their
  // stored bits in the next step(), found by bisection in log space on the exact noise of the next
  // step over a strided sample of >= 4M elements (all when fewer than 8M). Returns 1e-12 or 10, the
  // ends of the search, when the fraction lies outside what those rates give. Changes nothing.
  double tune_lr(double fraction) const;

  // Synthetic mode: each parameter element, independently with probability `fraction` in [0, 1]
  // (resolved to 2^-24), moves its stored bits by a signed number of ulps in sign-magnitude order
  // (+0 and -0 are one apart): +-1 with p 0.89, +-2 with 0.05, +-3..+-8 uniform with 0.06; a move
  // that would reach Inf/NaN goes the other way; non-finite values stay. Masters take the new
  // stored values. Buffers advance as in step().
  Status inject_uniform(double fraction);

  // Share of the held parameter elements whose stored bits differ from `before` (a snapshot() of
  // this model); NaN when `before` does not have this model's tensor sizes.
  double changed_fraction(const std::vector<std::vector<uint8_t>>& before) const;

 private:
  struct TensorState;  // change_model.cc
  struct Sample;       // tune_lr's strided sample of all parameter elements, stepped with the model

  ChangeModel(const Manifest& manifest, uint64_t seed);
  Status init_tensors(const ChangeModelOptions& options);
  void init_row_scale(uint32_t tensor, const ChangeModelOptions& options);
  void init_buffer(uint32_t tensor, const ChangeModelOptions& options);
  void advance_buffers();
  double sample_fraction(double lr, const std::vector<float>& scale, const std::vector<float>& unit) const;

  Manifest manifest_;
  uint64_t seed_;
  std::vector<TensorState> tensors_;
  std::unique_ptr<Sample> sample_;
  uint64_t steps_ = 0;
  uint64_t parameter_elements_ = 0;
  uint64_t held_elements_ = 0;
};

}  // namespace dcr
