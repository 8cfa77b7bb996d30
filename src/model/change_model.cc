#include "dcr/model/change_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "dcr/core/dtype.h"
#include "dcr/model/half.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "stored bits are kept little-endian");

namespace dcr {

namespace {

// ---- Random draws ----
// Counter-based: draw i of a stream is a hash of (stream key, i), so each element's noise can be
// computed on its own; tune_lr replays the next step's noise on a sample this way.
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

uint64_t mix64(uint64_t x) {  // the splitmix64 finaliser
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

enum class Purpose : uint64_t { init = 1, row_scale = 2, step = 3, inject = 4 };

uint64_t stream_key(uint64_t seed, Purpose purpose, uint64_t step, uint64_t tensor) {
  const uint64_t base = mix64(seed + kGolden * static_cast<uint64_t>(purpose));
  return mix64(mix64(base + step) + tensor);
}

uint64_t draw(uint64_t key, uint64_t index) { return mix64(key + (index + 1) * kGolden); }

// The step noise: an Irwin-Hall sum of three 21-bit uniforms scaled to unit variance, a bell curve
// on [-3, 3] (a normal clipped at +-3 in effect; kurtosis 2.6 against 3), never exactly 0, one hash
// per element. It stands for Adam's m/sqrt(v), which is bounded and roughly bell-shaped.
float bell(uint64_t bits) {
  const int64_t sum = static_cast<int64_t>((bits & 0x1fffff) + ((bits >> 21) & 0x1fffff) +
                                           ((bits >> 42) & 0x1fffff));
  return static_cast<float>(2 * sum - int64_t{3 * 0x1fffff}) * (1.0f / 2097152.0f);
}

constexpr float kRowScaleSigma = 0.35f;  // 95% of rows within 0.5x..2x of the median

float advance(float master, float scaled_lr, float unit) { return master + scaled_lr * unit; }

// ---- Stored formats of parameters ----
struct Bf16Format {
  using Word = uint16_t;
  static constexpr Word kSign = 0x8000, kExponent = 0x7f80;
  static Word cast(float value) { return f32_to_bf16_rne(value); }
  static float value(Word word) { return bf16_to_f32(word); }
};

struct F16Format {
  using Word = uint16_t;
  static constexpr Word kSign = 0x8000, kExponent = 0x7c00;
  static Word cast(float value) { return f32_to_f16_rne(value); }
  static float value(Word word) { return f16_to_f32(word); }
};

struct F32Format {
  using Word = uint32_t;
  static constexpr Word kSign = 0x80000000u, kExponent = 0x7f800000u;
  static Word cast(float value) {
    Word word;
    std::memcpy(&word, &value, 4);
    return word;
  }
  static float value(Word word) {
    float v;
    std::memcpy(&v, &word, 4);
    return v;
  }
};

// Calls fn(Format{}) for a parameter dtype; create admits only these three.
template <typename Fn>
void with_format(DType dtype, Fn&& fn) {
  if (dtype == DType::f16) {
    fn(F16Format{});
  } else if (dtype == DType::f32) {
    fn(F32Format{});
  } else {
    fn(Bf16Format{});
  }
}

template <typename F>
typename F::Word load(const uint8_t* bytes, uint64_t index) {
  typename F::Word word;
  std::memcpy(&word, bytes + index * sizeof(word), sizeof(word));
  return word;
}

template <typename F>
void put(uint8_t* bytes, uint64_t index, typename F::Word word) {
  std::memcpy(bytes + index * sizeof(word), &word, sizeof(word));
}

// ---- Ulp moves in sign-magnitude order (-max < ... < -0 < +0 < ... < +max) ----
template <typename F>
bool is_finite(typename F::Word word) {
  return (word & F::kExponent) != F::kExponent;
}

template <typename F>
typename F::Word sm_key(typename F::Word word) {
  using Word = typename F::Word;
  return (word & F::kSign) ? static_cast<Word>(~word) : static_cast<Word>(word | F::kSign);
}

template <typename F>
typename F::Word sm_unkey(typename F::Word key) {
  using Word = typename F::Word;
  return (key & F::kSign) ? static_cast<Word>(key & ~F::kSign) : static_cast<Word>(~key);
}

template <typename F>
typename F::Word move_ulps(typename F::Word word, int ulps) {
  using Word = typename F::Word;
  if (!is_finite<F>(word)) return word;
  const Word key = sm_key<F>(word);
  const Word forward = sm_unkey<F>(static_cast<Word>(key + ulps));
  return is_finite<F>(forward) ? forward : sm_unkey<F>(static_cast<Word>(key - ulps));
}

// Signed ulp count of an injected change from bits 0..36 of a draw: +-1 (89%), +-2 (5%),
// +-3..+-8 uniform (6%). Bits 40..63 decide whether the element changes at all.
int draw_ulps(uint64_t bits) {
  const uint64_t kind = bits & 0xffffff;
  const int magnitude = kind < 14931149 ? 1                        // 0.89 * 2^24
                        : kind < 15770010 ? 2                      // 0.94 * 2^24
                                          : 3 + static_cast<int>(((bits >> 24) & 0xfff) % 6);
  return ((bits >> 36) & 1) ? -magnitude : magnitude;
}

// ---- Per-tensor loops ----
template <typename F>
void step_tensor(uint64_t key, float lr, const std::vector<float>& row_scale, uint64_t cols,
                 std::vector<float>* master, uint8_t* stored) {
  float* m = master->data();
  const uint64_t rows = master->size() / cols;
  for (uint64_t r = 0; r < rows; ++r) {
    const float scaled_lr = row_scale.empty() ? lr : lr * row_scale[r];
    for (uint64_t i = r * cols; i < (r + 1) * cols; ++i) {
      m[i] = advance(m[i], scaled_lr, bell(draw(key, i)));
      put<F>(stored, i, F::cast(m[i]));
    }
  }
}

template <typename F>
void inject_tensor(uint64_t key, uint64_t threshold, std::vector<float>* master, uint8_t* stored) {
  for (uint64_t i = 0; i < master->size(); ++i) {
    const uint64_t bits = draw(key, i);
    if ((bits >> 40) >= threshold) continue;
    const typename F::Word word = move_ulps<F>(load<F>(stored, i), draw_ulps(bits));
    put<F>(stored, i, word);
    (*master)[i] = F::value(word);
  }
}

template <typename F>
uint64_t count_differences(const uint8_t* a, const uint8_t* b, uint64_t count) {
  uint64_t differ = 0;
  for (uint64_t i = 0; i < count; ++i) differ += load<F>(a, i) != load<F>(b, i);
  return differ;
}

double share(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

// ---- Initial values ----
bool has(const std::string& name, const char* part) { return name.find(part) != std::string::npos; }

bool ends_with(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

uint64_t row_length(const TensorDesc& t) {
  return t.shape.empty() ? 1 : static_cast<uint64_t>(t.shape.back());
}

// Norms 1 + N(0, 0.02), embeddings and lm_head N(0, 0.02), other weights N(0, 1/sqrt(fan_in))
// with fan_in the last dimension (bell-shaped draws as for the steps).
void seeded_masters(const TensorDesc& t, uint64_t key, std::vector<float>* master) {
  const bool norm = has(t.name, "norm");
  const bool embedding = has(t.name, "embed") || has(t.name, "lm_head");
  const float scale = (norm || embedding) ? 0.02f : 1.0f / std::sqrt(static_cast<float>(row_length(t)));
  const float mean = norm ? 1.0f : 0.0f;
  for (uint64_t i = 0; i < master->size(); ++i) (*master)[i] = mean + scale * bell(draw(key, i));
}

// Real weights: each tensor takes the next master->size() values of the pool, wrapping around to
// the pool's start as often as needed, so tensors of any shape get realistic values.
void pooled_masters(const std::vector<float>& pool, uint64_t* cursor, std::vector<float>* master) {
  uint64_t done = 0;
  while (done < master->size()) {
    const uint64_t take = std::min<uint64_t>(master->size() - done, pool.size() - *cursor);
    std::copy_n(pool.data() + *cursor, take, master->data() + done);
    done += take;
    *cursor = (*cursor + take) % pool.size();
  }
}

Status check_tensor(const TensorDesc& t) {
  if (!t.is_buffer) {
    DCR_REQUIRE(t.dtype == DType::bf16 || t.dtype == DType::f16 || t.dtype == DType::f32,
                Code::invalid_argument,
                "parameter '" + t.name + "' has dtype " + dtype_name(t.dtype) +
                    "; the change model steps bf16, f16 and f32 parameters only");
  }
  DCR_REQUIRE(!ends_with(t.name, "inv_freq") || t.dtype == DType::f32, Code::invalid_argument,
              "buffer '" + t.name + "' must be f32");
  DCR_REQUIRE(!ends_with(t.name, "step_counter") || t.dtype == DType::i64, Code::invalid_argument,
              "buffer '" + t.name + "' must be i64");
  return Status::ok();
}

// A master for stored word `word`: its value moved by a random fraction (within +-0.45) of the gap to
// its next magnitude, as long as it still casts to `word` exactly. A trainer's fp32 master sits
// anywhere inside its bf16 word's rounding interval, so steps far below an ulp already flip some
// words; masters equal to the stored values would need a step of half an ulp to flip any.
template <typename F>
float dithered_master(typename F::Word word, float fraction) {
  const float value = F::value(word);
  if constexpr (sizeof(typename F::Word) >= sizeof(float)) {
    return value;  // an fp32 master is its stored value
  } else {
    const typename F::Word magnitude = word & static_cast<typename F::Word>(~F::kSign);
    if ((magnitude & F::kExponent) == F::kExponent) return value;  // Inf and NaN stay as they are
    const float next = F::value(static_cast<typename F::Word>(word + 1));
    const float moved = value + 0.9f * (fraction - 0.5f) * (next - value);
    return F::cast(moved) == word && std::isfinite(moved) ? moved : value;
  }
}

// tune_lr's sample: at a 0.5% change rate, 4M elements hold ~20k changes (binomial error ~0.7%).
constexpr uint64_t kSampleElements = uint64_t{1} << 22;

}  // namespace

struct ChangeModel::Sample {
  struct Segment {
    DType dtype;
    size_t begin, end;
  };
  std::vector<Segment> segments;
  std::vector<float> master, scale, unit;  // unit: the next step's noise for the element
  std::vector<uint32_t> word;              // its stored bits
};

Status ChangeModel::create(const Manifest& manifest, const ChangeModelOptions& options,
                           std::unique_ptr<ChangeModel>* out) {
  DCR_TRY(manifest.validate());
  for (const TensorDesc& t : manifest.tensors) DCR_TRY(check_tensor(t));
  if (options.initial != nullptr) {
    DCR_REQUIRE(options.initial->size() == manifest.tensors.size(), Code::invalid_argument,
                "initial bits hold " + std::to_string(options.initial->size()) + " tensors, the manifest " +
                    std::to_string(manifest.tensors.size()));
    for (size_t t = 0; t < manifest.tensors.size(); ++t) {
      DCR_REQUIRE((*options.initial)[t].size() == manifest.tensors[t].nbytes(), Code::invalid_argument,
                  "initial bits of '" + manifest.tensors[t].name + "' have the wrong size");
    }
  }
  DCR_REQUIRE(options.pool == nullptr || !options.pool->values.empty(), Code::invalid_argument,
              "the real-weight pool holds no values");
  std::unique_ptr<ChangeModel> model(new ChangeModel(manifest, options.seed));
  model->tensors_.resize(manifest.tensors.size());
  uint64_t pool_cursor = 0;
  for (size_t t = 0; t < manifest.tensors.size(); ++t) {
    if (manifest.tensors[t].is_buffer && options.initial != nullptr) {
      model->tensors_[t].stored = (*options.initial)[t];
    } else if (manifest.tensors[t].is_buffer) {
      model->init_buffer(t);
    } else {
      model->init_parameter(t, options, &pool_cursor);
    }
  }
  *out = std::move(model);
  return Status::ok();
}

void ChangeModel::init_parameter(size_t tensor, const ChangeModelOptions& options,
                                 uint64_t* pool_cursor) {
  const TensorDesc& t = manifest_.tensors[tensor];
  TensorState& state = tensors_[tensor];
  state.master.resize(t.numel());
  if (options.initial != nullptr) {
    state.stored = (*options.initial)[tensor];
    const uint64_t key = stream_key(seed_, Purpose::init, 0, tensor);
    with_format(t.dtype, [&](auto format) {
      using F = decltype(format);
      for (uint64_t i = 0; i < state.master.size(); ++i) {
        const float fraction = static_cast<float>(draw(key, i) >> 40) * (1.0f / 16777216.0f);
        state.master[i] = dithered_master<F>(load<F>(state.stored.data(), i), fraction);
      }
    });
  } else if (options.pool != nullptr) {
    pooled_masters(options.pool->values, pool_cursor, &state.master);
  } else {
    seeded_masters(t, stream_key(seed_, Purpose::init, 0, tensor), &state.master);
  }
  if (options.row_scaled) {
    const uint64_t key = stream_key(seed_, Purpose::row_scale, 0, tensor);
    state.row_scale.resize(t.numel() / row_length(t));
    for (uint64_t r = 0; r < state.row_scale.size(); ++r) {
      state.row_scale[r] = std::exp(kRowScaleSigma * bell(draw(key, r)));
    }
  }
  if (options.initial == nullptr) {  // a checkpoint's bits stand as they are (NaN payloads too)
    state.stored.resize(t.nbytes());
    with_format(t.dtype, [&](auto format) {
      using F = decltype(format);
      for (uint64_t i = 0; i < state.master.size(); ++i) {
        put<F>(state.stored.data(), i, F::cast(state.master[i]));
      }
    });
  }
  parameter_elements_ += t.numel();
}

// inv_freq[i] = 1 / 10000^(2i / head_dim), evaluated in fp32 (powf) as training code does.
void ChangeModel::init_buffer(size_t tensor) {
  const TensorDesc& t = manifest_.tensors[tensor];
  std::vector<uint8_t>& stored = tensors_[tensor].stored;
  stored.assign(t.nbytes(), 0);
  if (!ends_with(t.name, "inv_freq")) return;
  const float head_dim = 2.0f * static_cast<float>(t.numel());
  for (uint64_t i = 0; i < t.numel(); ++i) {
    const float value = 1.0f / powf(10000.0f, static_cast<float>(2 * i) / head_dim);
    std::memcpy(stored.data() + 4 * i, &value, 4);
  }
}

void ChangeModel::advance_buffers() {
  ++steps_;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    if (ends_with(manifest_.tensors[t].name, "step_counter")) {
      for (uint64_t i = 0; i < manifest_.tensors[t].numel(); ++i) {
        int64_t counter;
        std::memcpy(&counter, tensors_[t].stored.data() + 8 * i, 8);
        ++counter;
        std::memcpy(tensors_[t].stored.data() + 8 * i, &counter, 8);
      }
    }
  }
}

std::vector<std::vector<uint8_t>> ChangeModel::snapshot() const {
  std::vector<std::vector<uint8_t>> copy;
  copy.reserve(tensors_.size());
  for (const TensorState& state : tensors_) copy.push_back(state.stored);
  return copy;
}

Status ChangeModel::step(double lr) {
  DCR_REQUIRE(std::isfinite(lr) && lr >= 0, Code::invalid_argument,
              "step: learning rate " + std::to_string(lr) + " must be finite and >= 0");
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const TensorDesc& desc = manifest_.tensors[t];
    if (desc.is_buffer) continue;
    TensorState& state = tensors_[t];
    const uint64_t key = stream_key(seed_, Purpose::step, steps_, t);
    with_format(desc.dtype, [&](auto format) {
      step_tensor<decltype(format)>(key, static_cast<float>(lr), state.row_scale, row_length(desc),
                                    &state.master, state.stored.data());
    });
  }
  advance_buffers();
  return Status::ok();
}

Status ChangeModel::inject_uniform(double fraction) {
  DCR_REQUIRE(fraction >= 0 && fraction <= 1, Code::invalid_argument,
              "inject_uniform: fraction " + std::to_string(fraction) + " must lie in [0, 1]");
  const uint64_t threshold = static_cast<uint64_t>(std::llround(fraction * 16777216.0));  // of 2^24
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const TensorDesc& desc = manifest_.tensors[t];
    if (desc.is_buffer) continue;
    TensorState& state = tensors_[t];
    const uint64_t key = stream_key(seed_, Purpose::inject, steps_, t);
    with_format(desc.dtype, [&](auto format) {
      inject_tensor<decltype(format)>(key, threshold, &state.master, state.stored.data());
    });
  }
  advance_buffers();
  return Status::ok();
}

double ChangeModel::changed_fraction(const std::vector<std::vector<uint8_t>>& before) const {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (before.size() != tensors_.size()) return nan;
  uint64_t changed = 0;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const TensorDesc& desc = manifest_.tensors[t];
    if (before[t].size() != tensors_[t].stored.size()) return nan;
    if (desc.is_buffer) continue;
    with_format(desc.dtype, [&](auto format) {
      changed += count_differences<decltype(format)>(before[t].data(), tensors_[t].stored.data(),
                                                     desc.numel());
    });
  }
  return share(changed, parameter_elements_);
}

// Every stride-th parameter element in manifest order, with the noise the next step() will draw.
void ChangeModel::build_sample(Sample* sample) const {
  const uint64_t stride = std::max<uint64_t>(1, parameter_elements_ / kSampleElements);
  const uint64_t size = parameter_elements_ / stride + tensors_.size();
  sample->master.reserve(size);
  sample->scale.reserve(size);
  sample->unit.reserve(size);
  sample->word.reserve(size);
  uint64_t base = 0;  // index of the tensor's first element among all parameter elements
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const TensorDesc& desc = manifest_.tensors[t];
    if (desc.is_buffer) continue;
    const TensorState& state = tensors_[t];
    const uint64_t key = stream_key(seed_, Purpose::step, steps_, t);
    const uint64_t cols = row_length(desc);
    const size_t begin = sample->master.size();
    with_format(desc.dtype, [&](auto format) {
      for (uint64_t i = (stride - base % stride) % stride; i < desc.numel(); i += stride) {
        sample->master.push_back(state.master[i]);
        sample->scale.push_back(state.row_scale.empty() ? 1.0f : state.row_scale[i / cols]);
        sample->unit.push_back(bell(draw(key, i)));
        sample->word.push_back(load<decltype(format)>(state.stored.data(), i));
      }
    });
    sample->segments.push_back({desc.dtype, begin, sample->master.size()});
    base += desc.numel();
  }
}

double ChangeModel::sample_fraction(const Sample& sample, double lr) {
  const float lr_f = static_cast<float>(lr);
  uint64_t changed = 0;
  for (const Sample::Segment& segment : sample.segments) {
    with_format(segment.dtype, [&](auto format) {
      using F = decltype(format);
      for (size_t j = segment.begin; j < segment.end; ++j) {
        const float next = advance(sample.master[j], lr_f * sample.scale[j], sample.unit[j]);
        changed += F::cast(next) != sample.word[j];
      }
    });
  }
  return share(changed, sample.master.size());
}

double ChangeModel::tune_lr(double fraction) const {
  Sample sample;
  build_sample(&sample);
  double lo = 1e-12, hi = 10.0;
  if (sample_fraction(sample, lo) >= fraction) return lo;
  if (sample_fraction(sample, hi) <= fraction) return hi;
  double mid = std::sqrt(lo * hi);
  for (int i = 0; i < 64; ++i) {
    const double got = sample_fraction(sample, mid);
    if (std::fabs(got - fraction) <= 0.002 * fraction) break;
    (got < fraction ? lo : hi) = mid;
    mid = std::sqrt(lo * hi);
  }
  return mid;
}

}  // namespace dcr
