// The GPU side of the element-wise codec stages: find changed elements between two device arrays
// and scatter words back, bit for bit as the CPU reference in dcr/codec/scan.h does. Plain C++: no
// CUDA types appear here (streams travel as void*), so host code built by any compiler can use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "dcr/codec/value_mode.h"
#include "dcr/core/status.h"

namespace dcr::cuda {

// True when the CUDA runtime sees at least one device; otherwise `why` (if not null) says why not.
bool device_available(std::string* why);

// Runs diff and apply on device memory. Owns a scratch buffer that grows to the largest count seen
// and is reused, so calls after the first of a size allocate nothing. One object per device; not
// thread-safe. Element arrays must be aligned to `width`; counts must fit positions (<= 2^32 - 1).
class DeviceDelta {
 public:
  DeviceDelta() = default;
  ~DeviceDelta();
  DeviceDelta(const DeviceDelta&) = delete;
  DeviceDelta& operator=(const DeviceDelta&) = delete;

  // scan_changes + gather_words: writes the ascending indices where d_base and d_target differ to
  // d_positions (room for `count`), their encode_word values to d_words (room for `count`), and the
  // number of them to the host variable *changed_out. Synchronizes `stream` (a cudaStream_t).
  Status diff(const void* d_base, const void* d_target, uint64_t count, unsigned width,
              ValueMode mode, uint32_t* d_positions, uint64_t* d_words, uint64_t* changed_out,
              void* stream);

  // scatter_swap: d_dst[p] = apply_word(mode, d_dst[p], word) for the `changed` pairs, and the
  // replaced bits go back into d_words. Positions must be distinct; any >= count are skipped.
  // Asynchronous on `stream`.
  Status apply(void* d_dst, uint64_t count, unsigned width, ValueMode mode,
               const uint32_t* d_positions, uint64_t* d_words, uint64_t changed, void* stream);

 private:
  Status reserve(size_t bytes);

  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
};

// Block FP8 (dcr/layout/fp8_block.h), bit for bit as quantize_fp8_block on the CPU: the bf16 box
// d_bf16 [rows, cols] (row pitch `pitch` elements; its first element on a block corner of its
// tensor, its far edges on block edges or the tensor's own) into E4M3 bytes d_e4m3 (row pitch
// out_pitch bytes) and scales d_scales [ceil(rows/128), ceil(cols/128)] (row pitch scale_pitch
// floats). invalid_argument naming the first block, in row-major order, that holds a NaN or an
// infinity (the outputs are then unspecified). Synchronizes `stream`, whose verdict it returns.
Status quantize_fp8_block(const uint16_t* d_bf16, uint64_t rows, uint64_t cols, uint64_t pitch, uint8_t* d_e4m3,
                          uint64_t out_pitch, float* d_scales, uint64_t scale_pitch, void* stream);

namespace detail {

// Unsigned type of a W-byte element.
template <unsigned W>
using Elem = std::conditional_t<
    W == 1, uint8_t,
    std::conditional_t<W == 2, uint16_t, std::conditional_t<W == 4, uint32_t, uint64_t>>>;

// Status of a cudaError_t value (0 = success): unavailable when there is no usable device or
// driver, internal otherwise; the message names `what` and the CUDA error.
Status cuda_error(int error, const char* what);

inline Status check_args(const char* op, uint64_t count, unsigned width, ValueMode mode) {
  const std::string name = op;
  DCR_REQUIRE(width == 1 || width == 2 || width == 4 || width == 8, Code::invalid_argument,
              name + ": element width " + std::to_string(width) + " is not 1, 2, 4 or 8");
  DCR_REQUIRE(static_cast<unsigned>(mode) < kValueModeCount, Code::invalid_argument,
              name + ": unknown value mode " + std::to_string(static_cast<unsigned>(mode)));
  DCR_REQUIRE(count <= UINT32_MAX, Code::invalid_argument,
              name + ": " + std::to_string(count) + " elements exceed 32-bit positions");
  return Status::ok();
}

inline bool aligned(const void* p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

}  // namespace detail
}  // namespace dcr::cuda
