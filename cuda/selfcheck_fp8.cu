#include "selfcheck_fp8.h"

#include <cmath>
#include <string>

#include "dcr/core/dtype.h"
#include "dcr/layout/fp8_block.h"

namespace selfcheck {
namespace {

constexpr uint64_t kBlock = 128;

uint64_t blocks(uint64_t n) { return (n + kBlock - 1) / kBlock; }

// A bf16 matrix and what the CPU rule makes of it.
struct Matrix {
  std::string name;
  uint64_t rows = 0, cols = 0;
  std::vector<uint16_t> w;
  std::vector<uint8_t> e4m3;
  std::vector<float> scales;
};

void quantize_on_cpu(Matrix* m) {
  m->e4m3.resize(m->rows * m->cols);
  m->scales.resize(blocks(m->rows) * blocks(m->cols));
  CHECK_OK(dcr::quantize_fp8_block(m->w.data(), m->rows, m->cols, m->e4m3.data(), m->scales.data()));
}

// The GPU's quantization of the box from block (b0, b0) to the matrix's end, written with row
// pitches `pad` elements longer than the box; compared with the CPU's byte for byte.
bool check_box(const Matrix& m, const selfcheck::DeviceBuffer& d_w, uint64_t b0, uint64_t pad) {
  const uint64_t r0 = b0 * kBlock, c0 = b0 * kBlock, rows = m.rows - r0, cols = m.cols - c0;
  const uint64_t out_pitch = cols + pad, scale_pitch = blocks(cols) + pad;
  DeviceBuffer d_q(rows * out_pitch), d_s(blocks(rows) * scale_pitch * sizeof(float));
  CHECK_OK(dcr::cuda::quantize_fp8_block(d_w.as<uint16_t>() + r0 * m.cols + c0, rows, cols, m.cols, d_q.as<uint8_t>(),
                                         out_pitch, d_s.as<float>(), scale_pitch, nullptr));
  std::vector<uint8_t> q(rows * out_pitch);
  std::vector<float> s(blocks(rows) * scale_pitch);
  copy(q.data(), d_q.p, q.size(), cudaMemcpyDeviceToHost);
  copy(s.data(), d_s.p, s.size() * sizeof(float), cudaMemcpyDeviceToHost);
  const std::string what = m.name + " box from block " + std::to_string(b0) + " pad " + std::to_string(pad);
  for (uint64_t r = 0; r < blocks(rows); ++r) {
    for (uint64_t c = 0; c < blocks(cols); ++c) {
      const float want = m.scales[(b0 + r) * blocks(m.cols) + b0 + c], got = s[r * scale_pitch + c];
      if (std::memcmp(&want, &got, sizeof want) == 0) continue;
      std::printf("MISMATCH %s: scale of block (%llu, %llu): want %a, got %a\n", what.c_str(), (unsigned long long)r,
                  (unsigned long long)c, want, got);
      return false;
    }
  }
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const uint8_t want = m.e4m3[(r0 + r) * m.cols + c0 + c], got = q[r * out_pitch + c];
      if (want == got) continue;
      std::printf("MISMATCH %s: element [%llu, %llu] (bf16 0x%04x): want 0x%02x, got 0x%02x\n", what.c_str(),
                  (unsigned long long)(r0 + r), (unsigned long long)(c0 + c), m.w[(r0 + r) * m.cols + c0 + c], want, got);
      return false;
    }
  }
  return true;
}

bool check_matrix(Matrix m) {
  quantize_on_cpu(&m);
  DeviceBuffer d_w(m.w.size() * 2);
  copy(d_w.p, m.w.data(), m.w.size() * 2, cudaMemcpyHostToDevice);
  for (uint64_t pad : {0, 3}) {
    if (!check_box(m, d_w, 0, pad)) return false;
    if (m.rows > kBlock && m.cols > kBlock && !check_box(m, d_w, 1, pad)) return false;
  }
  std::printf("ok  fp8 %s (%llu x %llu)\n", m.name.c_str(), (unsigned long long)m.rows, (unsigned long long)m.cols);
  return true;
}

// Every finite bf16 value: those up to 448 in magnitude in blocks whose first element is +-448
// (scale 1: the quotient is the value itself, so every E4M3 code, midpoint and its neighbours
// occur), the larger ones in blocks of their own scales.
Matrix every_finite_value() {
  Matrix m{"every finite bf16 value", 0, kBlock, {}, {}, {}};
  const auto add_block = [&m](std::vector<uint16_t> values) {
    values.resize(kBlock * kBlock, 0);
    m.w.insert(m.w.end(), values.begin(), values.end());
    m.rows += kBlock;
  };
  for (uint16_t sign : {0x0000, 0x8000}) {
    std::vector<uint16_t> small, large;
    for (uint32_t bits = 0; bits < 0x7F80; ++bits) (bits <= 0x43E0 ? small : large).push_back(sign | bits);
    for (size_t at = 0; at < small.size(); at += kBlock * kBlock - 1) {
      std::vector<uint16_t> block{static_cast<uint16_t>(sign | 0x43E0)};  // 448: scale 1
      block.insert(block.end(), small.begin() + at, small.begin() + std::min(small.size(), at + kBlock * kBlock - 1));
      add_block(block);
    }
    for (size_t at = 0; at < large.size(); at += kBlock * kBlock) {
      add_block({large.begin() + at, large.begin() + std::min(large.size(), at + kBlock * kBlock)});
    }
  }
  return m;
}

// Edge blocks both ways, magnitudes from 2^-20 to 2^12 by block, an all-zero block of signed zeros
// and one outlier that sends its neighbours to zero and the subnormals.
Matrix mixed(uint64_t rows, uint64_t cols, uint64_t seed) {
  Matrix m{"mixed " + std::to_string(rows) + "x" + std::to_string(cols), rows, cols, std::vector<uint16_t>(rows * cols), {}, {}};
  Rng rng{seed};
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      const int magnitude = static_cast<int>(((r / kBlock) * 3 + c / kBlock) % 9) * 4 - 20;
      const double u = (rng.next() >> 11) * 0x1.0p-53 * 2 - 1;  // uniform in [-1, 1)
      m.w[r * cols + c] = dcr::f32_to_bf16_rne(static_cast<float>(std::ldexp(u, magnitude)));
    }
  }
  for (uint64_t r = kBlock; r < std::min(rows, 2 * kBlock); ++r) {
    for (uint64_t c = 0; c < std::min(cols, kBlock); ++c) m.w[r * cols + c] = (r + c) % 2 ? 0x8000 : 0x0000;
  }
  m.w[5 * cols + std::min<uint64_t>(200, cols - 1)] = dcr::f32_to_bf16_rne(3e4f);
  return m;
}

bool check_refusal() {
  Matrix m = mixed(300, 260, 3);
  m.w[129 * 260 + 2] = 0x7F80;  // +inf, in block (1, 0)
  DeviceBuffer d_w(m.w.size() * 2), d_q(m.w.size()), d_s(9 * sizeof(float));
  copy(d_w.p, m.w.data(), m.w.size() * 2, cudaMemcpyHostToDevice);
  const dcr::Status s = dcr::cuda::quantize_fp8_block(d_w.as<uint16_t>(), 300, 260, 260, d_q.as<uint8_t>(), 260,
                                                      d_s.as<float>(), 3, nullptr);
  if (s.code() != dcr::Code::invalid_argument ||
      s.message().find("block at row 128, column 0 holds a non-finite value") == std::string::npos) {
    std::printf("MISMATCH fp8 refusal: want invalid_argument naming the block at row 128, got %s\n", s.to_string().c_str());
    return false;
  }
  std::printf("ok  fp8 a block holding an infinity is refused, naming it\n");
  return true;
}

}  // namespace

bool run_fp8_checks() {
  return check_matrix(every_finite_value()) && check_matrix(mixed(300, 260, 1)) && check_matrix(mixed(1000, 1000, 2)) &&
         check_matrix(mixed(4096, 2048, 4)) && check_matrix(mixed(1, 7, 5)) && check_refusal();
}

bool benchmark_fp8(std::vector<Timing>* rows) {
  const uint64_t r = 16384, c = 32768, n = r * c;  // 1 GiB of bf16
  std::vector<uint16_t> w(n);
  Rng rng{11};
  for (uint64_t i = 0; i < n; i += 4) {  // weights of |x| in [2^-8, 2^2), random mantissas and signs
    const uint64_t bits = rng.next();
    for (int k = 0; k < 4; ++k) w[i + k] = static_cast<uint16_t>(0x3B80 + ((bits >> (16 * k)) & 0x83FF));
  }
  DeviceBuffer d_w(n * 2), d_q(n), d_s(blocks(r) * blocks(c) * sizeof(float));
  copy(d_w.p, w.data(), n * 2, cudaMemcpyHostToDevice);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  const float ms = median_ms(stream, [] {}, [&] {
    CHECK_OK(dcr::cuda::quantize_fp8_block(d_w.as<uint16_t>(), r, c, c, d_q.as<uint8_t>(), c, d_s.as<float>(),
                                           blocks(c), stream));
  });
  CHECK_CUDA(cudaStreamDestroy(stream));
  // The first block row against the CPU.
  Matrix first{"benchmark block row", kBlock, c, {w.begin(), w.begin() + kBlock * c}, {}, {}};
  quantize_on_cpu(&first);
  std::vector<uint8_t> q(kBlock * c);
  copy(q.data(), d_q.p, q.size(), cudaMemcpyDeviceToHost);
  if (q != first.e4m3) {
    std::printf("MISMATCH fp8 benchmark: the first block row differs from the CPU's\n");
    return false;
  }
  rows->push_back({"fp8_quantize", n * 2, ms});
  return true;
}

}  // namespace selfcheck
