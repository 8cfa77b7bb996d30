// Internal to the codec: scratch arrays for the hot loops.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace dcr {

// Scratch of 2 MiB or more sits on 2 MiB pages where the kernel offers them (transparent huge
// pages, madvise mode): the hot loops stream through megabytes of it, and on 4 KiB pages whole
// processes ran ~10% slower at random, as their pages happened to fall.
inline void* scratch_alloc(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  void* p = nullptr;
  if (bytes < kHuge) {
    p = std::malloc(bytes);
  } else {
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    p = std::aligned_alloc(kHuge, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p != nullptr) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: without THP nothing changes
#endif
  }
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

struct ScratchFree {
  void operator()(void* p) const { std::free(p); }
};

// A growable array that is never zero-filled (its writers overwrite what they use): growing it
// costs no pass over memory, and it never shrinks. Growing drops the contents.
template <class T>
class Buffer {
  static_assert(std::is_trivial_v<T>, "scratch holds plain values");

 public:
  T* reserve(size_t count) {
    if (count > size_) {
      data_.reset(static_cast<T*>(scratch_alloc(count * sizeof(T))));
      size_ = count;
    }
    return data_.get();
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }

 private:
  std::unique_ptr<T[], ScratchFree> data_;
  size_t size_ = 0;
};

// Makes `v` at least `n` long, never shorter: a vector resized down and up again zero-fills the
// regrown part each time, a pass over memory per frame when frames alternate in size.
template <class T>
T* grow_to(std::vector<T>* v, size_t n) {
  if (v->size() < n) v->resize(n);
  return v->data();
}

}  // namespace dcr
