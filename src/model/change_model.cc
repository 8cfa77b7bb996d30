#include "dcr/model/change_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "dcr/core/dtype.h"
#include "dcr/model/half.h"
#include "src/core/zero_pages.h"

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

// ---- Loops over a range [begin, end) of a tensor's elements ----
using Range = std::pair<uint64_t, uint64_t>;

// lr scaled for row `row` (lr itself without row scales).
float row_lr(const std::vector<float>& row_scale, float lr, uint64_t row) {
  return row_scale.empty() ? lr : lr * row_scale[row];
}

// ---- One element i of a tensor: the same for the held elements and for tune_lr's sample ----
// A step: the master moves by its scaled lr times the step's noise; the new stored word.
template <typename F>
typename F::Word stepped(uint64_t key, uint64_t i, float scaled_lr, float* master) {
  *master = advance(*master, scaled_lr, bell(draw(key, i)));
  return F::cast(*master);
}

// An injection: whether element i changes (with its new word and master).
template <typename F>
bool injected(uint64_t key, uint64_t i, uint64_t threshold, typename F::Word* word, float* master) {
  const uint64_t bits = draw(key, i);
  if ((bits >> 40) >= threshold) return false;
  *word = move_ulps<F>(*word, draw_ulps(bits));
  *master = F::value(*word);
  return true;
}

template <typename F>
void step_range(uint64_t key, float lr, const std::vector<float>& row_scale, uint64_t cols, const Range& range,
                float* master, uint8_t* stored) {
  for (uint64_t i = range.first; i < range.second;) {
    const uint64_t row = i / cols, row_end = std::min(range.second, (row + 1) * cols);
    const float scaled_lr = row_lr(row_scale, lr, row);
    for (; i < row_end; ++i) put<F>(stored, i, stepped<F>(key, i, scaled_lr, &master[i]));
  }
}

template <typename F>
void inject_range(uint64_t key, uint64_t threshold, const Range& range, float* master, uint8_t* stored) {
  for (uint64_t i = range.first; i < range.second; ++i) {
    typename F::Word word = load<F>(stored, i);
    if (injected<F>(key, i, threshold, &word, &master[i])) put<F>(stored, i, word);
  }
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

// Where element i of a parameter starts, computed for that element alone (so a rank can start
// just its own rows and tune_lr's sample the elements it samples):
// - a checkpoint's bits (ChangeModelOptions::initial) with a dithered master;
// - real weights: the tensors take the pool's values in manifest order, element `base + i` of all
//   parameters taking value (base + i) mod the pool's size, so tensors of any shape get them;
// - else seeded draws: norms 1 + N(0, 0.02), embeddings and lm_head N(0, 0.02), other weights
//   N(0, 1/sqrt(fan_in)) with fan_in the last dimension (bell-shaped draws as for the steps).
struct Start {
  uint64_t key = 0;                 // the tensor's init stream
  uint64_t base = 0;                // the tensor's first element among all parameters
  const uint8_t* initial = nullptr;
  const std::vector<float>* pool = nullptr;
  float mean = 0, scale = 0;

  Start(const TensorDesc& t, uint64_t key, uint64_t base, const ChangeModelOptions& options, size_t tensor)
      : key(key), base(base) {
    if (options.initial != nullptr) {
      initial = (*options.initial)[tensor].data();
    } else if (options.pool != nullptr) {
      pool = &options.pool->values;
    }
    const bool norm = has(t.name, "norm");
    const bool embedding = has(t.name, "embed") || has(t.name, "lm_head");
    scale = (norm || embedding) ? 0.02f : 1.0f / std::sqrt(static_cast<float>(tensor_cols(t)));
    mean = norm ? 1.0f : 0.0f;
  }

  // Element i's master and stored word.
  template <typename F>
  typename F::Word at(uint64_t i, float* master) const {
    if (initial != nullptr) {  // a checkpoint's bits stand as they are (NaN payloads too)
      const typename F::Word word = load<F>(initial, i);
      *master = dithered_master<F>(word, static_cast<float>(draw(key, i) >> 40) * (1.0f / 16777216.0f));
      return word;
    }
    *master = pool != nullptr ? (*pool)[(base + i) % pool->size()] : mean + scale * bell(draw(key, i));
    return F::cast(*master);
  }
};

// tune_lr's sample: at a 0.5% change rate, 4M elements hold ~20k changes (binomial error ~0.7%).
constexpr uint64_t kSampleElements = uint64_t{1} << 22;

// The sorted, disjoint element ranges that `boxes` (all of one tensor of `cols` columns) cover.
std::vector<Range> ranges_of(const std::vector<Box>& boxes, uint64_t cols) {
  std::vector<Range> ranges;
  for (const Box& b : boxes) {
    if (b.col0 == 0 && b.cols == cols) {
      ranges.push_back({b.row0 * cols, (b.row0 + b.rows) * cols});
      continue;
    }
    for (uint64_t r = b.row0; r < b.row0 + b.rows; ++r) ranges.push_back({r * cols + b.col0, r * cols + b.col0 + b.cols});
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<Range> merged;
  for (const Range& r : ranges) {
    if (r.first >= r.second) continue;
    if (!merged.empty() && r.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

// Each tensor's held boxes (every tensor whole without options.held); invalid_argument for a box
// outside its tensor.
Status group_held(const Manifest& manifest, const std::vector<Box>* held, std::vector<std::vector<Box>>* out) {
  out->assign(manifest.tensors.size(), {});
  for (uint32_t id = 0; id < manifest.tensors.size(); ++id) {
    const TensorDesc& t = manifest.tensors[id];
    if (held == nullptr || t.is_buffer) (*out)[id].push_back(whole_tensor(id, t));
  }
  if (held == nullptr) return Status::ok();
  for (const Box& b : *held) {
    DCR_REQUIRE(b.tensor < manifest.tensors.size() && whole_tensor(b.tensor, manifest.tensors[b.tensor]).contains(b),
                Code::invalid_argument, "held box " + b.describe() + " lies outside the model");
    if (!manifest.tensors[b.tensor].is_buffer) (*out)[b.tensor].push_back(b);
  }
  return Status::ok();
}

}  // namespace

struct ChangeModel::TensorState {
  ZeroPages master;              // parameters: numel() fp32 masters
  ZeroPages stored;              // nbytes()
  std::vector<float> row_scale;  // parameters with row_scaled: every row's
  std::vector<Range> held;       // the elements kept
};

// Element first + k * stride of each segment's tensor, k = 0, 1, ...: every stride-th parameter
// element in manifest order, with its master and stored word, stepped as the model steps.
struct ChangeModel::Sample {
  struct Segment {
    uint32_t tensor;
    uint64_t first;
    size_t begin, end;  // its elements in master and word
  };
  uint64_t stride = 1;
  std::vector<Segment> segments;
  std::vector<float> master;
  std::vector<uint32_t> word;

  template <typename Fn>  // fn(j, i): sample element j is element i of the segment's tensor
  static void each(const Segment& segment, uint64_t stride, Fn&& fn) {
    for (size_t j = segment.begin; j < segment.end; ++j) fn(j, segment.first + (j - segment.begin) * stride);
  }
};

ChangeModel::ChangeModel(const Manifest& manifest, uint64_t seed)
    : manifest_(manifest), seed_(seed), sample_(std::make_unique<Sample>()) {}

ChangeModel::~ChangeModel() = default;

const uint8_t* ChangeModel::stored(size_t tensor) const { return tensors_[tensor].stored.data(); }

const float* ChangeModel::master(size_t tensor) const {
  return manifest_.tensors[tensor].is_buffer ? nullptr : reinterpret_cast<const float*>(tensors_[tensor].master.data());
}

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
  DCR_TRY(model->init_tensors(options));
  *out = std::move(model);
  return Status::ok();
}

Status ChangeModel::init_tensors(const ChangeModelOptions& options) {
  std::vector<std::vector<Box>> held;
  DCR_TRY(group_held(manifest_, options.held, &held));
  for (const TensorDesc& t : manifest_.tensors) parameter_elements_ += t.is_buffer ? 0 : t.numel();
  Sample& sample = *sample_;
  sample.stride = std::max<uint64_t>(1, parameter_elements_ / kSampleElements);
  sample.master.reserve(parameter_elements_ / sample.stride + manifest_.tensors.size());
  sample.word.reserve(sample.master.capacity());
  tensors_.resize(manifest_.tensors.size());
  uint64_t base = 0;  // the tensor's first element among all parameter elements
  for (uint32_t id = 0; id < manifest_.tensors.size(); ++id) {
    const TensorDesc& t = manifest_.tensors[id];
    TensorState& state = tensors_[id];
    state.held = ranges_of(held[id], tensor_cols(t));
    DCR_TRY(ZeroPages::map(t.nbytes(), &state.stored).with_context("tensor '" + t.name + "'"));
    if (t.is_buffer) {
      init_buffer(id, options);
      continue;
    }
    DCR_TRY(ZeroPages::map(t.numel() * sizeof(float), &state.master).with_context("tensor '" + t.name + "'"));
    init_row_scale(id, options);
    const Start start(t, stream_key(seed_, Purpose::init, 0, id), base, options, id);
    with_format(t.dtype, [&](auto format) {
      using F = decltype(format);
      float* m = reinterpret_cast<float*>(state.master.data());
      for (const Range& r : state.held) {
        for (uint64_t i = r.first; i < r.second; ++i) put<F>(state.stored.data(), i, start.at<F>(i, &m[i]));
        held_elements_ += r.second - r.first;
      }
      Sample::Segment segment{id, (sample.stride - base % sample.stride) % sample.stride, sample.master.size(), 0};
      for (uint64_t i = segment.first; i < t.numel(); i += sample.stride) {
        float value;
        sample.word.push_back(start.at<F>(i, &value));
        sample.master.push_back(value);
      }
      segment.end = sample.master.size();
      sample.segments.push_back(segment);
    });
    base += t.numel();
  }
  return Status::ok();
}

void ChangeModel::init_row_scale(uint32_t tensor, const ChangeModelOptions& options) {
  if (!options.row_scaled) return;
  const TensorDesc& t = manifest_.tensors[tensor];
  const uint64_t key = stream_key(seed_, Purpose::row_scale, 0, tensor);
  std::vector<float>& row_scale = tensors_[tensor].row_scale;
  row_scale.resize(tensor_rows(t));
  for (uint64_t r = 0; r < row_scale.size(); ++r) row_scale[r] = std::exp(kRowScaleSigma * bell(draw(key, r)));
}

// A checkpoint's buffer as it is; else inv_freq[i] = 1 / 10000^(2i / head_dim), evaluated in fp32
// (powf) as training code does, and zeros for every other buffer.
void ChangeModel::init_buffer(uint32_t tensor, const ChangeModelOptions& options) {
  const TensorDesc& t = manifest_.tensors[tensor];
  uint8_t* stored = tensors_[tensor].stored.data();
  if (options.initial != nullptr) {
    std::copy_n((*options.initial)[tensor].data(), t.nbytes(), stored);
    return;
  }
  if (!ends_with(t.name, "inv_freq")) return;
  const float head_dim = 2.0f * static_cast<float>(t.numel());
  for (uint64_t i = 0; i < t.numel(); ++i) {
    const float value = 1.0f / powf(10000.0f, static_cast<float>(2 * i) / head_dim);
    std::memcpy(stored + 4 * i, &value, 4);
  }
}

void ChangeModel::advance_buffers() {
  ++steps_;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    if (!ends_with(manifest_.tensors[t].name, "step_counter")) continue;
    uint8_t* stored = tensors_[t].stored.data();
    for (uint64_t i = 0; i < manifest_.tensors[t].numel(); ++i) {
      int64_t counter;
      std::memcpy(&counter, stored + 8 * i, 8);
      ++counter;
      std::memcpy(stored + 8 * i, &counter, 8);
    }
  }
}

std::vector<std::vector<uint8_t>> ChangeModel::snapshot() const {
  std::vector<std::vector<uint8_t>> copy;
  copy.reserve(tensors_.size());
  for (const TensorState& state : tensors_) copy.emplace_back(state.stored.data(), state.stored.data() + state.stored.size());
  return copy;
}

Status ChangeModel::step(double lr) {
  DCR_REQUIRE(std::isfinite(lr) && lr >= 0, Code::invalid_argument,
              "step: learning rate " + std::to_string(lr) + " must be finite and >= 0");
  const float lr_f = static_cast<float>(lr);
  for (uint32_t t = 0; t < tensors_.size(); ++t) {
    const TensorDesc& desc = manifest_.tensors[t];
    if (desc.is_buffer) continue;
    TensorState& state = tensors_[t];
    const uint64_t key = stream_key(seed_, Purpose::step, steps_, t);
    with_format(desc.dtype, [&](auto format) {
      using F = decltype(format);
      float* master = reinterpret_cast<float*>(state.master.data());
      for (const Range& r : state.held) step_range<F>(key, lr_f, state.row_scale, tensor_cols(desc), r, master, state.stored.data());
    });
  }
  for (const Sample::Segment& segment : sample_->segments) {
    const TensorDesc& desc = manifest_.tensors[segment.tensor];
    const std::vector<float>& row_scale = tensors_[segment.tensor].row_scale;
    const uint64_t key = stream_key(seed_, Purpose::step, steps_, segment.tensor), cols = tensor_cols(desc);
    with_format(desc.dtype, [&](auto format) {
      using F = decltype(format);
      Sample::each(segment, sample_->stride, [&](size_t j, uint64_t i) {
        sample_->word[j] = stepped<F>(key, i, row_lr(row_scale, lr_f, i / cols), &sample_->master[j]);
      });
    });
  }
  advance_buffers();
  return Status::ok();
}

Status ChangeModel::inject_uniform(double fraction) {
  DCR_REQUIRE(fraction >= 0 && fraction <= 1, Code::invalid_argument,
              "inject_uniform: fraction " + std::to_string(fraction) + " must lie in [0, 1]");
  const uint64_t threshold = static_cast<uint64_t>(std::llround(fraction * 16777216.0));  // of 2^24
  for (uint32_t t = 0; t < tensors_.size(); ++t) {
    const TensorDesc& desc = manifest_.tensors[t];
    if (desc.is_buffer) continue;
    TensorState& state = tensors_[t];
    const uint64_t key = stream_key(seed_, Purpose::inject, steps_, t);
    with_format(desc.dtype, [&](auto format) {
      float* master = reinterpret_cast<float*>(state.master.data());
      for (const Range& r : state.held) inject_range<decltype(format)>(key, threshold, r, master, state.stored.data());
    });
  }
  for (const Sample::Segment& segment : sample_->segments) {
    const uint64_t key = stream_key(seed_, Purpose::inject, steps_, segment.tensor);
    with_format(manifest_.tensors[segment.tensor].dtype, [&](auto format) {
      using F = decltype(format);
      Sample::each(segment, sample_->stride, [&](size_t j, uint64_t i) {
        auto word = static_cast<typename F::Word>(sample_->word[j]);
        if (injected<F>(key, i, threshold, &word, &sample_->master[j])) sample_->word[j] = word;
      });
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
      using F = decltype(format);
      const uint8_t* now = tensors_[t].stored.data();
      for (const Range& r : tensors_[t].held) {
        for (uint64_t i = r.first; i < r.second; ++i) changed += load<F>(before[t].data(), i) != load<F>(now, i);
      }
    });
  }
  return share(changed, held_elements_);
}

// The share of sampled elements whose stored word the next step at `lr` changes, given each
// element's lr scale and noise.
double ChangeModel::sample_fraction(double lr, const std::vector<float>& scale, const std::vector<float>& unit) const {
  const float lr_f = static_cast<float>(lr);
  uint64_t changed = 0;
  for (const Sample::Segment& segment : sample_->segments) {
    with_format(manifest_.tensors[segment.tensor].dtype, [&](auto format) {
      using F = decltype(format);
      for (size_t j = segment.begin; j < segment.end; ++j) {
        const float next = advance(sample_->master[j], lr_f * scale[j], unit[j]);
        changed += F::cast(next) != sample_->word[j];
      }
    });
  }
  return share(changed, sample_->master.size());
}

double ChangeModel::tune_lr(double fraction) const {
  std::vector<float> scale(sample_->master.size()), unit(sample_->master.size());
  for (const Sample::Segment& segment : sample_->segments) {
    const std::vector<float>& row_scale = tensors_[segment.tensor].row_scale;
    const uint64_t key = stream_key(seed_, Purpose::step, steps_, segment.tensor);
    const uint64_t cols = tensor_cols(manifest_.tensors[segment.tensor]);
    Sample::each(segment, sample_->stride, [&](size_t j, uint64_t i) {
      scale[j] = row_lr(row_scale, 1.0f, i / cols);
      unit[j] = bell(draw(key, i));
    });
  }
  double lo = 1e-12, hi = 10.0;
  if (sample_fraction(lo, scale, unit) >= fraction) return lo;
  if (sample_fraction(hi, scale, unit) <= fraction) return hi;
  double mid = std::sqrt(lo * hi);
  for (int i = 0; i < 64; ++i) {
    const double got = sample_fraction(mid, scale, unit);
    if (std::fabs(got - fraction) <= 0.002 * fraction) break;
    (got < fraction ? lo : hi) = mid;
    mid = std::sqrt(lo * hi);
  }
  return mid;
}

}  // namespace dcr
