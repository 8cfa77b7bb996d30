#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "dcr/core/dtype.h"
#include "dcr/model/change_model.h"
#include "dcr/model/half.h"
#include "dcr/model/presets.h"

namespace dcr {
namespace {

std::unique_ptr<ChangeModel> make_model(const Manifest& m, ChangeModelOptions options = {}) {
  std::unique_ptr<ChangeModel> model;
  const Status s = ChangeModel::create(m, options, &model);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return model;
}

std::unique_ptr<ChangeModel> tiny_model(uint64_t seed, bool row_scaled = true) {
  Manifest m;
  EXPECT_TRUE(make_preset("tiny", &m).is_ok());
  ChangeModelOptions options;
  options.seed = seed;
  options.row_scaled = row_scaled;
  return make_model(m, options);
}

Manifest one_tensor(DType dtype, std::vector<int64_t> shape) {
  Manifest m;
  TensorDesc t;
  t.name = "w";
  t.dtype = dtype;
  t.shape = std::move(shape);
  m.tensors.push_back(t);
  return m;
}

template <typename T>
T element(const uint8_t* bytes, size_t i) {
  T value;
  std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
T element(const std::vector<uint8_t>& bytes, size_t i) {
  return element<T>(bytes.data(), i);
}

std::vector<float> masters(const ChangeModel& model, size_t t) {
  const float* m = model.master(t);
  return std::vector<float>(m, m + model.manifest().tensors[t].numel());
}

std::vector<uint8_t> stored_bytes(const ChangeModel& model, size_t t) {
  const uint8_t* s = model.stored(t);
  return std::vector<uint8_t>(s, s + model.manifest().tensors[t].nbytes());
}

size_t tensor_index(const ChangeModel& model, const std::string& name) {
  for (size_t t = 0; t < model.manifest().tensors.size(); ++t) {
    if (model.manifest().tensors[t].name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return 0;
}

// Position of a bf16 pattern in sign-magnitude order (-max < ... < -0 < +0 < ... < +max).
int sm_order(uint16_t bits) { return (bits & 0x8000) ? -static_cast<int>(bits & 0x7fff) - 1 : bits; }

float f32_from_bits(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

TEST(Rounding, Bf16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_bf16_rne(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16_rne(f32_from_bits(0x3f808000)), 0x3f80);  // tie, 0x3f80 is even
  EXPECT_EQ(f32_to_bf16_rne(f32_from_bits(0x3f818000)), 0x3f82);  // tie, 0x3f82 is even
  EXPECT_EQ(f32_to_bf16_rne(f32_from_bits(0x3f808001)), 0x3f81);  // just above the tie
  EXPECT_EQ(f32_to_bf16_rne(f32_from_bits(0x3f807fff)), 0x3f80);  // just below the tie
  EXPECT_EQ(f32_to_bf16_rne(-1.0f), 0xbf80);
  EXPECT_EQ(f32_to_bf16_rne(f32_from_bits(0x7f7fffff)), 0x7f80);  // max float rounds to Inf
  EXPECT_EQ(f32_to_bf16_rne(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(f32_to_bf16_rne(f32_from_bits(0x7f800001)), 0x7fc0);  // signalling NaN stays NaN
  EXPECT_EQ(f32_to_bf16_rne(f32_from_bits(0xffc00000)), 0xffc0);  // sign kept
}

TEST(Rounding, F16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_f16_rne(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16_rne(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16_rne(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16_rne(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16_rne(65520.0f), 0x7c00);  // tie above max rounds to Inf
  EXPECT_EQ(f32_to_f16_rne(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie to even
  EXPECT_EQ(f32_to_f16_rne(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie to even
  EXPECT_EQ(f32_to_f16_rne(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(f32_to_f16_rne(std::ldexp(1.0f, -25)), 0x0000);             // tie to even (zero)
  EXPECT_EQ(f32_to_f16_rne(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(f32_to_f16_rne(std::ldexp(1.0f, -14) * 0.99999f), 0x0400);  // rounds up to the smallest normal
  EXPECT_EQ(f32_to_f16_rne(f32_from_bits(0xff800001)) & 0xfe00, 0xfe00);  // NaN, sign kept
}

TEST(Rounding, F16WidensExactly) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float wide = f16_to_f32(static_cast<uint16_t>(bits));
    if (std::isnan(wide)) {
      EXPECT_EQ(bits & 0x7c00, 0x7c00u);
      continue;
    }
    EXPECT_EQ(f32_to_f16_rne(wide), bits) << std::hex << bits;
  }
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_f32(0xfbff), -65504.0f);
}

TEST(ChangeModel, StoredBitsAreTheRoundedMasters) {
  for (DType dtype : {DType::bf16, DType::f16, DType::f32}) {
    auto model = make_model(one_tensor(dtype, {64, 96}), {7});
    const std::vector<float> master = masters(*model, 0);
    const std::vector<uint8_t> stored = stored_bytes(*model, 0);
    ASSERT_EQ(stored.size(), master.size() * dtype_width(dtype));
    for (size_t i = 0; i < master.size(); ++i) {
      if (dtype == DType::bf16) {
        ASSERT_EQ(element<uint16_t>(stored, i), f32_to_bf16_rne(master[i]));
      } else if (dtype == DType::f16) {
        ASSERT_EQ(element<uint16_t>(stored, i), f32_to_f16_rne(master[i]));
      } else {
        ASSERT_EQ(element<float>(stored, i), master[i]);
      }
    }
  }
}

TEST(ChangeModel, InitialScalesFollowTheTensorRole) {
  auto model = tiny_model(1);
  auto spread = [&](const std::string& name, double* mean) {
    const std::vector<float> w = masters(*model, tensor_index(*model, name));
    double sum = 0, squares = 0;
    for (float v : w) sum += v;
    *mean = sum / w.size();
    for (float v : w) squares += (v - *mean) * (v - *mean);
    return std::sqrt(squares / w.size());
  };
  double mean = 0;
  EXPECT_NEAR(spread("embed_tokens.weight", &mean), 0.02, 0.001);
  EXPECT_NEAR(mean, 0.0, 0.001);
  EXPECT_NEAR(spread("layers.0.input_norm.weight", &mean), 0.02, 0.005);
  EXPECT_NEAR(mean, 1.0, 0.005);
  EXPECT_NEAR(spread("layers.0.mlp.down.weight", &mean), 1 / std::sqrt(512.0), 0.002);  // fan_in = ff
}

TEST(ChangeModel, StepsAreDeterministicPerSeed) {
  auto a = tiny_model(42), b = tiny_model(42), c = tiny_model(43);
  EXPECT_EQ(a->snapshot(), b->snapshot());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a->step(1e-6).is_ok());
    ASSERT_TRUE(b->step(1e-6).is_ok());
    ASSERT_TRUE(c->step(1e-6).is_ok());
    EXPECT_EQ(a->snapshot(), b->snapshot()) << "step " << i;
    EXPECT_NE(a->snapshot(), c->snapshot()) << "step " << i;
  }
  EXPECT_EQ(masters(*a, 1), masters(*b, 1));
}

TEST(ChangeModel, StepsDifferFromStepToStep) {
  auto model = tiny_model(5);
  const size_t q = tensor_index(*model, "layers.0.attn.q.weight");
  auto before = model->snapshot();
  ASSERT_TRUE(model->step(1e-6).is_ok());
  auto first = model->snapshot();
  ASSERT_TRUE(model->step(1e-6).is_ok());
  // Changed positions of two steps overlap only by chance (~f^2), not as a copy of each other.
  const std::vector<uint8_t>& w0 = before[q];
  const std::vector<uint8_t>& w1 = first[q];
  const std::vector<uint8_t> w2 = stored_bytes(*model, q);
  size_t first_changes = 0, both = 0;
  for (size_t i = 0; i < w0.size() / 2; ++i) {
    const bool c1 = element<uint16_t>(w0, i) != element<uint16_t>(w1, i);
    const bool c2 = element<uint16_t>(w1, i) != element<uint16_t>(w2, i);
    first_changes += c1;
    both += c1 && c2;
  }
  EXPECT_GT(first_changes, 0u);
  EXPECT_LT(both, first_changes / 2);
}

void expect_tuned_rates(ChangeModel* model) {
  for (double target : {0.005, 0.01, 0.03, 0.05}) {
    const auto before = model->snapshot();
    const uint64_t steps = model->steps();
    const double lr = model->tune_lr(target);
    EXPECT_EQ(model->snapshot(), before) << "tune_lr changed the stored bits";
    EXPECT_EQ(model->steps(), steps);
    ASSERT_TRUE(model->step(lr).is_ok());
    const double got = model->changed_fraction(before);
    EXPECT_NEAR(got / target, 1.0, 0.10) << "target " << target << " lr " << lr << " got " << got;
  }
}

TEST(ChangeModel, TuneLrHitsTheTargetRate) {
  auto model = tiny_model(9);
  expect_tuned_rates(model.get());
}

TEST(ChangeModel, TuneLrHitsTheTargetRateWithoutRowScales) {
  auto model = tiny_model(9, false);
  expect_tuned_rates(model.get());
}

// Started from a checkpoint's bits, the masters sit inside their words' rounding intervals (as a
// trainer's do), so version 0 is the checkpoint exactly and steps hit the requested rates, with
// mostly one-ulp moves.
TEST(ChangeModel, CheckpointStartKeepsItsBitsAndHitsTheTargetRate) {
  auto seeded = tiny_model(4);
  const std::vector<std::vector<uint8_t>> checkpoint = seeded->snapshot();
  ChangeModelOptions options;
  options.seed = 11;
  options.initial = &checkpoint;
  auto model = make_model(seeded->manifest(), options);
  EXPECT_EQ(model->snapshot(), checkpoint);
  expect_tuned_rates(model.get());
  const size_t q = tensor_index(*model, "layers.0.attn.q.weight");
  const auto before = model->snapshot();
  ASSERT_TRUE(model->step(model->tune_lr(0.03)).is_ok());
  size_t changed = 0, one_ulp = 0;
  for (size_t i = 0; i < before[q].size() / 2; ++i) {
    const int move = sm_order(element<uint16_t>(model->stored(q), i)) - sm_order(element<uint16_t>(before[q], i));
    changed += move != 0;
    one_ulp += move == 1 || move == -1;
  }
  EXPECT_GT(one_ulp, changed * 8 / 10) << one_ulp << " of " << changed;
}

TEST(ChangeModel, TuneLrGivesItsBoundsForUnreachableRates) {
  auto model = tiny_model(3);
  EXPECT_EQ(model->tune_lr(1e-9), 1e-12);
  EXPECT_EQ(model->tune_lr(1.0), 10.0);
}

TEST(ChangeModel, BuffersFollowTheSteps) {
  auto model = tiny_model(11);
  const size_t inv_freq = tensor_index(*model, "rotary.inv_freq");
  const size_t counter = tensor_index(*model, "step_counter");
  const std::vector<uint8_t> freq = stored_bytes(*model, inv_freq);
  ASSERT_EQ(freq.size(), 32 * 4u);
  for (size_t i = 0; i < 32; ++i) {
    EXPECT_EQ(element<float>(freq, i), 1.0f / powf(10000.0f, static_cast<float>(2 * i) / 64.0f));
  }
  EXPECT_EQ(element<float>(freq, 0), 1.0f);
  EXPECT_EQ(element<int64_t>(model->stored(counter), 0), 0);
  for (int64_t i = 1; i <= 4; ++i) {
    ASSERT_TRUE(i % 2 ? model->step(1e-5).is_ok() : model->inject_uniform(0.02).is_ok());
    EXPECT_EQ(element<int64_t>(model->stored(counter), 0), i);
    EXPECT_EQ(model->steps(), static_cast<uint64_t>(i));
    EXPECT_EQ(stored_bytes(*model, inv_freq), freq);
  }
}

TEST(ChangeModel, InjectUniformHitsItsFractionWithSmallUlpMoves) {
  auto model = tiny_model(21);
  const auto before = model->snapshot();
  ASSERT_TRUE(model->inject_uniform(0.01).is_ok());
  EXPECT_NEAR(model->changed_fraction(before) / 0.01, 1.0, 0.03);

  size_t moves[9] = {}, negative = 0, changed = 0;
  for (size_t t = 0; t < before.size(); ++t) {
    if (model->manifest().tensors[t].is_buffer) continue;
    for (size_t i = 0; i < before[t].size() / 2; ++i) {
      const uint16_t old_bits = element<uint16_t>(before[t], i);
      const uint16_t new_bits = element<uint16_t>(model->stored(t), i);
      if (old_bits == new_bits) continue;
      ASSERT_EQ(model->master(t)[i], bf16_to_f32(new_bits));  // masters follow the stored value
      const int distance = sm_order(new_bits) - sm_order(old_bits);
      ASSERT_GE(std::abs(distance), 1);
      ASSERT_LE(std::abs(distance), 8);
      ASSERT_TRUE(std::isfinite(bf16_to_f32(new_bits)));
      ++moves[std::abs(distance)];
      negative += distance < 0;
      ++changed;
    }
  }
  EXPECT_NEAR(static_cast<double>(moves[1]) / changed, 0.89, 0.01);
  EXPECT_NEAR(static_cast<double>(moves[2]) / changed, 0.05, 0.01);
  for (int k = 3; k <= 8; ++k) EXPECT_NEAR(static_cast<double>(moves[k]) / changed, 0.01, 0.004) << k;
  EXPECT_NEAR(static_cast<double>(negative) / changed, 0.5, 0.02);
}

TEST(ChangeModel, InjectUniformNeverLeavesTheFiniteRange) {
  RealWeights pool;
  pool.values = {bf16_to_f32(0x7f7f), bf16_to_f32(0xff7f), bf16_to_f32(0x7f7e)};  // +-max finite bf16
  ChangeModelOptions options;
  options.pool = &pool;
  auto model = make_model(one_tensor(DType::bf16, {3000}), options);
  const auto before = model->snapshot();
  ASSERT_TRUE(model->inject_uniform(1.0).is_ok());
  EXPECT_EQ(model->changed_fraction(before), 1.0);
  for (size_t i = 0; i < 3000; ++i) {
    const uint16_t bits = element<uint16_t>(model->stored(0), i);
    ASSERT_TRUE(std::isfinite(bf16_to_f32(bits))) << std::hex << bits;
  }
}

TEST(ChangeModel, PoolSlicesAreConsecutiveAndWrap) {
  RealWeights pool;
  pool.values = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  Manifest m = one_tensor(DType::f32, {4});
  m.tensors.push_back(m.tensors[0]);
  m.tensors[1].name = "v";
  m.tensors[1].shape = {2, 4};
  ChangeModelOptions options;
  options.pool = &pool;
  auto model = make_model(m, options);
  EXPECT_EQ(masters(*model, 0), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(masters(*model, 1), (std::vector<float>{5, 6, 7, 8, 9, 10, 1, 2}));
}

TEST(ChangeModel, TinyValuesChangeAtEveryStep) {
  RealWeights pool;
  pool.values = {1e-30f, -3e-30f, 2e-31f};
  ChangeModelOptions options;
  options.pool = &pool;
  auto model = make_model(one_tensor(DType::bf16, {90000}), options);
  const auto before = model->snapshot();
  ASSERT_TRUE(model->step(1e-9).is_ok());
  EXPECT_EQ(model->changed_fraction(before), 1.0);
  EXPECT_EQ(model->tune_lr(0.01), 1e-12);  // the floor is out of reach
}

TEST(ChangeModel, RoundingTiesChangeWhenStepsPointToTheOddSide) {
  RealWeights pool;
  pool.values = {f32_from_bits(0x3f808000), f32_from_bits(0x3f818000)};  // exact bf16 ties near 1
  ChangeModelOptions options;
  options.pool = &pool;
  options.row_scaled = false;
  auto model = make_model(one_tensor(DType::bf16, {100000}), options);
  const auto before = model->snapshot();
  // Steps of 1e-5 * u move the f32 masters (ulp 2^-23) but stay far below half a bf16 ulp (2^-8).
  ASSERT_TRUE(model->step(1e-5).is_ok());
  EXPECT_NEAR(model->changed_fraction(before), 0.5, 0.01);
}

// Boxes of every kind a rank holds: whole rows, a column band (a row-parallel TP shard), an FSDP
// flat range inside one row, and boxes that overlap (a quantized weight and its scales' rows).
std::vector<Box> some_boxes(const ChangeModel& model) {
  const size_t q = tensor_index(model, "layers.0.attn.q.weight");
  const size_t down = tensor_index(model, "layers.1.mlp.down.weight");
  const size_t embed = tensor_index(model, "embed_tokens.weight");
  return {Box{static_cast<uint32_t>(q), 10, 50, 0, 192}, Box{static_cast<uint32_t>(down), 0, 192, 256, 256},
          Box{static_cast<uint32_t>(embed), 7, 1, 30, 100}, Box{static_cast<uint32_t>(q), 40, 30, 64, 64}};
}

// Held elements read exactly as a whole model's through steps and injections from every start
// (seeded, a checkpoint's bits, real weights), tune_lr finds the same rates, and the others read
// zero.
TEST(ChangeModel, HeldBoxesFollowTheWholeModel) {
  auto seeded = tiny_model(4);
  const std::vector<std::vector<uint8_t>> checkpoint = seeded->snapshot();
  RealWeights pool;
  for (int i = 0; i < 1000; ++i) pool.values.push_back(0.01f * std::sin(static_cast<float>(i)));
  for (int start = 0; start < 3; ++start) {
    ChangeModelOptions options;
    options.seed = 13;
    options.initial = start == 1 ? &checkpoint : nullptr;
    options.pool = start == 2 ? &pool : nullptr;
    auto whole = make_model(seeded->manifest(), options);
    const std::vector<Box> boxes = some_boxes(*whole);
    options.held = &boxes;
    auto part = make_model(seeded->manifest(), options);
    for (int step = 0; step < 4; ++step) {
      const double lr = whole->tune_lr(0.02);
      ASSERT_EQ(part->tune_lr(0.02), lr) << "start " << start << " step " << step;
      ASSERT_TRUE(step == 2 ? whole->inject_uniform(0.02).is_ok() : whole->step(lr).is_ok());
      ASSERT_TRUE(step == 2 ? part->inject_uniform(0.02).is_ok() : part->step(lr).is_ok());
    }
    uint64_t held = 0;
    for (size_t t = 0; t < whole->manifest().tensors.size(); ++t) {
      const TensorDesc& desc = whole->manifest().tensors[t];
      const uint64_t cols = desc.shape.back();
      for (uint64_t i = 0; i < desc.numel(); ++i) {
        bool in = desc.is_buffer;
        for (const Box& b : boxes) in = in || b.contains(Box{static_cast<uint32_t>(t), i / cols, 1, i % cols, 1});
        held += in && !desc.is_buffer;
        const size_t w = dtype_width(desc.dtype);
        const int differ = std::memcmp(part->stored(t) + i * w, in ? whole->stored(t) + i * w : std::vector<uint8_t>(w).data(), w);
        ASSERT_EQ(differ, 0) << desc.name << " element " << i << " start " << start;
        if (!desc.is_buffer) {
          ASSERT_EQ(part->master(t)[i], in ? whole->master(t)[i] : 0.0f) << desc.name << " " << i;
        }
      }
    }
    EXPECT_EQ(part->held_parameter_elements(), held);
  }
  std::vector<Box> outside{Box{0, 0, 1, 0, 1u << 20}};
  ChangeModelOptions options;
  options.held = &outside;
  std::unique_ptr<ChangeModel> model;
  EXPECT_EQ(ChangeModel::create(seeded->manifest(), options, &model).code(), Code::invalid_argument);
}

// What is not held costs no memory: holding an eighth of a 64M-element tensor takes about an
// eighth of its masters and stored bits (plus tune_lr's sample), not the whole 384 MB.
TEST(ChangeModel, HeldBoxesCostOnlyTheirMemory) {
  const auto anon = [] {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) * 1024;
    }
    return 0ull;
  };
  const Manifest m = one_tensor(DType::bf16, {8192, 8192});
  const std::vector<Box> eighth{Box{0, 1024, 1024, 0, 8192}};
  ChangeModelOptions options;
  options.held = &eighth;
  const unsigned long long before = anon();
  auto model = make_model(m, options);
  ASSERT_TRUE(model->step(model->tune_lr(0.01)).is_ok());
  const unsigned long long grew = anon() - before;
  EXPECT_LT(grew, 128ull << 20) << "a model holding 1/8 of 384 MB of state grew by " << grew << " bytes";
  EXPECT_EQ(model->held_parameter_elements(), 1024u * 8192u);
}

TEST(ChangeModel, RejectsWhatItCannotModel) {
  std::unique_ptr<ChangeModel> model;
  Status s = ChangeModel::create(one_tensor(DType::f64, {4}), {}, &model);
  EXPECT_EQ(s.code(), Code::invalid_argument);
  EXPECT_NE(s.message().find("'w'"), std::string::npos);

  Manifest int_buffer = one_tensor(DType::i32, {4});
  int_buffer.tensors[0].is_buffer = true;
  EXPECT_TRUE(ChangeModel::create(int_buffer, {}, &model).is_ok());

  Manifest bad_freq = one_tensor(DType::bf16, {4});
  bad_freq.tensors[0].name = "rotary.inv_freq";
  bad_freq.tensors[0].is_buffer = true;
  EXPECT_EQ(ChangeModel::create(bad_freq, {}, &model).code(), Code::invalid_argument);

  RealWeights empty;
  ChangeModelOptions options;
  options.pool = &empty;
  EXPECT_EQ(ChangeModel::create(one_tensor(DType::bf16, {4}), options, &model).code(),
            Code::invalid_argument);

  model = tiny_model(1);
  EXPECT_EQ(model->step(-1e-6).code(), Code::invalid_argument);
  EXPECT_EQ(model->step(std::nan("")).code(), Code::invalid_argument);
  EXPECT_EQ(model->inject_uniform(1.5).code(), Code::invalid_argument);
  EXPECT_EQ(model->steps(), 0u);
  EXPECT_TRUE(std::isnan(model->changed_fraction({})));
}

}  // namespace
}  // namespace dcr
