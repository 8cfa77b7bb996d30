// apply on the GPU: one thread per (position, word) pair does what scatter_swap does for it. The
// positions are distinct, so no two threads touch the same element.
#include <cuda_runtime.h>

#include "dcr_cuda.h"

namespace dcr::cuda {
namespace {

constexpr unsigned kThreads = 256;

template <unsigned W>
__global__ void apply_kernel(void* dst, uint64_t count, ValueMode mode, const uint32_t* positions,
                             uint64_t* words, uint64_t changed) {
  using T = detail::Elem<W>;
  const uint64_t j = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  if (j >= changed) return;
  const uint32_t p = positions[j];
  if (p >= count) return;
  T* element = static_cast<T*>(dst) + p;
  const uint64_t old_bits = *element;
  *element = static_cast<T>(apply_word(mode, old_bits, words[j], W));
  words[j] = old_bits;
}

}  // namespace

Status DeviceDelta::apply(void* d_dst, uint64_t count, unsigned width, ValueMode mode,
                          const uint32_t* d_positions, uint64_t* d_words, uint64_t changed,
                          void* stream) {
  DCR_TRY(detail::check_args("apply", count, width, mode));
  DCR_REQUIRE(changed <= count, Code::invalid_argument,
              "apply: " + std::to_string(changed) + " changes for " + std::to_string(count) +
                  " elements");
  DCR_REQUIRE(detail::aligned(d_dst, width), Code::invalid_argument,
              "apply: destination is not aligned to the element width");
  if (changed == 0) return Status::ok();

  const auto s = static_cast<cudaStream_t>(stream);
  const auto blocks = static_cast<unsigned>((changed + kThreads - 1) / kThreads);
  const auto kernel = width == 1   ? apply_kernel<1>
                     : width == 2 ? apply_kernel<2>
                     : width == 4 ? apply_kernel<4>
                                  : apply_kernel<8>;  // width checked above
  kernel<<<blocks, kThreads, 0, s>>>(d_dst, count, mode, d_positions, d_words, changed);
  return detail::cuda_error(cudaGetLastError(), "apply: kernel launch");
}

}  // namespace dcr::cuda
