// diff on the GPU in three steps over a bitmap with one bit per element:
//   mark: each thread compares one 16-byte chunk of base and target (one vector load each when
//         both arrays are 16-byte aligned, element loads otherwise and at the tail); the lanes of a
//         warp merge their chunk masks into 32-element bitmap words and their popcounts;
//   scan: CUB exclusive sum of the popcounts gives each bitmap word its first output slot, and
//         the total at the end;
//   emit: one thread per bitmap word writes the positions of its set bits in ascending order and
//         encode_word of each pair.
// Positions come out ascending because output slots follow bitmap order, as in scan_changes.
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>

#include "dcr_cuda.h"

namespace dcr::cuda {
namespace {

constexpr unsigned kThreads = 256;

unsigned blocks_for(uint64_t threads) {
  return static_cast<unsigned>((threads + kThreads - 1) / kThreads);
}

template <unsigned W>
__global__ void mark_kernel(const void* base, const void* target, uint64_t count, bool vec,
                            uint32_t* bitmap, uint32_t* counts) {
  constexpr unsigned E = 16 / W;  // elements per 16-byte chunk
  constexpr unsigned L = 32 / E;  // lanes whose chunks make one 32-element bitmap word
  using T = detail::Elem<W>;
  const uint64_t chunk = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  const uint64_t first = chunk * E;
  uint32_t mask = 0;  // bit k: element first + k changed
  if (vec && first + E <= count) {
    const ulonglong2 a = static_cast<const ulonglong2*>(base)[chunk];
    const ulonglong2 b = static_cast<const ulonglong2*>(target)[chunk];
    const uint64_t x[2] = {a.x ^ b.x, a.y ^ b.y};
#pragma unroll
    for (unsigned k = 0; k < E; ++k) {
      const uint64_t bits = (x[k * W / 8] >> (8 * W * k % 64)) & width_mask(W);
      mask |= uint32_t(bits != 0) << k;
    }
  } else {
    for (unsigned k = 0; k < E && first + k < count; ++k) {
      mask |= uint32_t(static_cast<const T*>(base)[first + k] !=
                       static_cast<const T*>(target)[first + k])
              << k;
    }
  }
  // Every lane takes part in the shuffles: the warp's first chunk is a multiple of 32, so its
  // elements start at a bitmap word boundary and lanes [g*L, g*L+L) fill word g of the warp.
  const unsigned lane = threadIdx.x % 32;
  uint32_t word = mask << (lane % L * E);
#pragma unroll
  for (unsigned offset = 1; offset < L; offset *= 2) word |= __shfl_xor_sync(~0u, word, offset);
  const uint64_t nwords = (count + 31) / 32;
  const uint64_t index = (chunk - lane) / 32 * E + lane / L;
  if (lane % L == 0 && index < nwords) {
    bitmap[index] = word;
    counts[index] = __popc(word);
    if (index + 1 == nwords) counts[nwords] = 0;  // the scan's last slot becomes the total
  }
}

template <unsigned W>
__global__ void emit_kernel(const void* base, const void* target, ValueMode mode,
                            const uint32_t* bitmap, const uint32_t* offsets, uint64_t nwords,
                            uint32_t* positions, uint64_t* words) {
  using T = detail::Elem<W>;
  const uint64_t index = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  if (index >= nwords) return;
  uint32_t bits = bitmap[index];
  uint32_t out = offsets[index];
  while (bits != 0) {
    const uint32_t p = static_cast<uint32_t>(index * 32 + __ffs(bits) - 1);
    bits &= bits - 1;
    positions[out] = p;
    words[out] = encode_word(mode, static_cast<const T*>(base)[p],
                             static_cast<const T*>(target)[p], W);
    ++out;
  }
}

struct Scratch {
  uint32_t* bitmap;
  uint32_t* counts;   // nwords + 1
  uint32_t* offsets;  // nwords + 1
  void* temp;
  size_t temp_bytes;
};

template <unsigned W>
cudaError_t run_diff(const void* base, const void* target, uint64_t count, ValueMode mode,
                     uint32_t* positions, uint64_t* words, const Scratch& s,
                     cudaStream_t stream) {
  const uint64_t nwords = (count + 31) / 32;
  const bool vec = detail::aligned(base, 16) && detail::aligned(target, 16);
  const uint64_t chunks = (count + 16 / W - 1) / (16 / W);
  mark_kernel<W><<<blocks_for(chunks), kThreads, 0, stream>>>(base, target, count, vec,
                                                              s.bitmap, s.counts);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  size_t temp_bytes = s.temp_bytes;
  err = cub::DeviceScan::ExclusiveSum(s.temp, temp_bytes, s.counts, s.offsets,
                                      static_cast<int>(nwords + 1), stream);
  if (err != cudaSuccess) return err;
  emit_kernel<W><<<blocks_for(nwords), kThreads, 0, stream>>>(base, target, mode, s.bitmap,
                                                             s.offsets, nwords, positions, words);
  return cudaGetLastError();
}

size_t round_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

namespace detail {

Status cuda_error(int error, const char* what) {
  const auto err = static_cast<cudaError_t>(error);
  if (err == cudaSuccess) return Status::ok();
  const bool absent = err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver;
  return Status(absent ? Code::unavailable : Code::internal,
                std::string(what) + ": " + cudaGetErrorName(err) + " (" +
                    cudaGetErrorString(err) + ")");
}

}  // namespace detail

bool device_available(std::string* why) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess || devices == 0) {
    if (why != nullptr) {
      *why = err != cudaSuccess ? detail::cuda_error(err, "cudaGetDeviceCount").message()
                                : std::string("cudaGetDeviceCount found 0 devices");
    }
    return false;
  }
  return true;
}

DeviceDelta::~DeviceDelta() { cudaFree(scratch_); }

Status DeviceDelta::reserve(size_t bytes) {
  if (bytes <= scratch_bytes_) return Status::ok();
  cudaFree(scratch_);
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  const std::string what = "diff: cudaMalloc of " + std::to_string(bytes) + " scratch bytes";
  DCR_TRY(detail::cuda_error(cudaMalloc(&scratch_, bytes), what.c_str()));
  scratch_bytes_ = bytes;
  return Status::ok();
}

Status DeviceDelta::diff(const void* d_base, const void* d_target, uint64_t count, unsigned width,
                         ValueMode mode, uint32_t* d_positions, uint64_t* d_words,
                         uint64_t* changed_out, void* stream) {
  DCR_TRY(detail::check_args("diff", count, width, mode));
  DCR_REQUIRE(changed_out != nullptr, Code::invalid_argument, "diff: changed_out is null");
  DCR_REQUIRE(detail::aligned(d_base, width) && detail::aligned(d_target, width),
              Code::invalid_argument, "diff: base or target is not aligned to the element width");
  *changed_out = 0;
  if (count == 0) return Status::ok();

  const auto s = static_cast<cudaStream_t>(stream);
  const uint64_t nwords = (count + 31) / 32;
  size_t temp_bytes = 0;
  DCR_TRY(detail::cuda_error(
      cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, static_cast<uint32_t*>(nullptr),
                                    static_cast<uint32_t*>(nullptr),
                                    static_cast<int>(nwords + 1), s),
      "diff: scan storage size"));
  const size_t region = round_up((nwords + 1) * sizeof(uint32_t));
  DCR_TRY(reserve(3 * region + temp_bytes));
  char* bytes = static_cast<char*>(scratch_);
  const Scratch scratch{reinterpret_cast<uint32_t*>(bytes),
                        reinterpret_cast<uint32_t*>(bytes + region),
                        reinterpret_cast<uint32_t*>(bytes + 2 * region), bytes + 3 * region,
                        temp_bytes};

  const auto run = width == 1   ? run_diff<1>
                  : width == 2 ? run_diff<2>
                  : width == 4 ? run_diff<4>
                               : run_diff<8>;  // width checked above
  const cudaError_t err = run(d_base, d_target, count, mode, d_positions, d_words, scratch, s);
  DCR_TRY(detail::cuda_error(err, "diff: kernel launch"));

  uint32_t total = 0;
  DCR_TRY(detail::cuda_error(cudaMemcpyAsync(&total, scratch.offsets + nwords, sizeof(total),
                                             cudaMemcpyDeviceToHost, s),
                             "diff: reading the change count"));
  DCR_TRY(detail::cuda_error(cudaStreamSynchronize(s), "diff: synchronize"));
  *changed_out = total;
  return Status::ok();
}

}  // namespace dcr::cuda
