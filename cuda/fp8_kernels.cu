// Block FP8 on the GPU: quantize_fp8_block (dcr/layout/fp8_block.h) for a box of a bf16 matrix,
// bit for bit as the CPU rule. One thread block per 128 x 128 block: 256 threads, 16 to a row
// and 8 elements each, 8 passes of 16 rows. The block's elements stay in registers between the
// amax reduction and the conversion, so the bf16 box is read once.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include "dcr_cuda.h"

namespace dcr::cuda {
namespace {

constexpr unsigned kBlock = 128, kThreads = 256, kLanesPerRow = 16, kPerLane = 8;
constexpr unsigned kPasses = kBlock / (kThreads / kLanesPerRow);  // 8
constexpr unsigned long long kNoBlock = ~0ull;

__device__ float bf16_bits_to_float(uint16_t bits) { return __uint_as_float(static_cast<uint32_t>(bits) << 16); }

// The largest of `value` over the thread block.
__device__ uint32_t block_max(uint32_t value) {
  __shared__ uint32_t warps[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) value = max(value, __shfl_xor_sync(0xffffffffu, value, offset));
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = value;
  __syncthreads();
  value = warps[0];
  for (unsigned w = 1; w < kThreads / 32; ++w) value = max(value, warps[w]);
  return value;
}

__global__ void quantize_kernel(const uint16_t* in, uint64_t rows, uint64_t cols, uint64_t pitch, uint8_t* out,
                                uint64_t out_pitch, float* scales, uint64_t scale_pitch, bool vector,
                                unsigned long long* bad) {
  const uint64_t br = blockIdx.y, bc = blockIdx.x;
  const uint64_t r0 = br * kBlock + threadIdx.x / kLanesPerRow, c0 = bc * kBlock + (threadIdx.x % kLanesPerRow) * kPerLane;
  const bool whole = vector && (br + 1) * kBlock <= rows && (bc + 1) * kBlock <= cols;
  uint16_t v[kPasses][kPerLane];
  uint32_t largest = 0;  // bf16 magnitudes order as their bits do
  for (unsigned p = 0; p < kPasses; ++p) {
    const uint64_t r = r0 + p * (kThreads / kLanesPerRow);
    if (whole) {
      const uint4 q = *reinterpret_cast<const uint4*>(in + r * pitch + c0);
      memcpy(v[p], &q, sizeof q);
    } else {
      for (unsigned k = 0; k < kPerLane; ++k) v[p][k] = r < rows && c0 + k < cols ? in[r * pitch + c0 + k] : 0;
    }
    for (unsigned k = 0; k < kPerLane; ++k) largest = max(largest, static_cast<uint32_t>(v[p][k] & 0x7FFF));
  }
  const uint32_t amax_bits = block_max(largest);
  if (amax_bits >= 0x7F80) {  // an infinity or NaN: the block has no scale
    if (threadIdx.x == 0) atomicMin(bad, br * gridDim.x + bc);
    return;
  }
  const float amax = bf16_bits_to_float(static_cast<uint16_t>(amax_bits));
  const float scale = amax == 0.0f ? 1.0f : __fdiv_rn(amax, 448.0f);
  if (threadIdx.x == 0) scales[br * scale_pitch + bc] = scale;
  for (unsigned p = 0; p < kPasses; ++p) {
    const uint64_t r = r0 + p * (kThreads / kLanesPerRow);
    uint8_t q[kPerLane];
    for (unsigned k = 0; k < kPerLane; ++k) {
      q[k] = __nv_cvt_float_to_fp8(__fdiv_rn(bf16_bits_to_float(v[p][k]), scale), __NV_SATFINITE, __NV_E4M3);
    }
    if (whole) {
      uint2 packed;
      memcpy(&packed, q, sizeof packed);
      *reinterpret_cast<uint2*>(out + r * out_pitch + c0) = packed;
    } else {
      for (unsigned k = 0; k < kPerLane; ++k) {
        if (r < rows && c0 + k < cols) out[r * out_pitch + c0 + k] = q[k];
      }
    }
  }
}

}  // namespace

Status quantize_fp8_block(const uint16_t* d_bf16, uint64_t rows, uint64_t cols, uint64_t pitch, uint8_t* d_e4m3,
                          uint64_t out_pitch, float* d_scales, uint64_t scale_pitch, void* stream) {
  const uint64_t block_rows = (rows + kBlock - 1) / kBlock, block_cols = (cols + kBlock - 1) / kBlock;
  DCR_REQUIRE(pitch >= cols && out_pitch >= cols && scale_pitch >= block_cols, Code::invalid_argument,
              "quantize_fp8_block: a row pitch is shorter than its row");
  DCR_REQUIRE(block_rows <= 65535 && block_cols <= 0x7fffffffull, Code::invalid_argument,
              "quantize_fp8_block: " + std::to_string(rows) + " x " + std::to_string(cols) +
                  " has more 128 x 128 blocks than one launch holds");
  if (rows == 0 || cols == 0) return Status::ok();
  const auto s = static_cast<cudaStream_t>(stream);
  unsigned long long* bad = nullptr;
  DCR_TRY(detail::cuda_error(cudaMallocAsync(&bad, sizeof *bad, s), "quantize_fp8_block: scratch"));
  const unsigned long long none = kNoBlock;
  cudaError_t e = cudaMemcpyAsync(bad, &none, sizeof none, cudaMemcpyHostToDevice, s);
  const bool vector = pitch % kPerLane == 0 && out_pitch % kPerLane == 0 && detail::aligned(d_bf16, 16) &&
                      detail::aligned(d_e4m3, 8);
  if (e == cudaSuccess) {
    quantize_kernel<<<dim3(static_cast<unsigned>(block_cols), static_cast<unsigned>(block_rows)), kThreads, 0, s>>>(
        d_bf16, rows, cols, pitch, d_e4m3, out_pitch, d_scales, scale_pitch, vector, bad);
    e = cudaGetLastError();
  }
  unsigned long long first = kNoBlock;
  if (e == cudaSuccess) e = cudaMemcpyAsync(&first, bad, sizeof first, cudaMemcpyDeviceToHost, s);
  cudaFreeAsync(bad, s);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  DCR_TRY(detail::cuda_error(e, "quantize_fp8_block"));
  DCR_REQUIRE(first == kNoBlock, Code::invalid_argument,
              "block FP8: the block at row " + std::to_string(first / block_cols * kBlock) + ", column " +
                  std::to_string(first % block_cols * kBlock) + " holds a non-finite value; it has no scale");
  return Status::ok();
}

}  // namespace dcr::cuda
