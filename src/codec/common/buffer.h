// Internal to the codec: scratch arrays for the hot loops.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

namespace dcr {

// Scratch is 64-byte aligned for the vector loops, on the kernel's ordinary pages. It was once
// advised onto transparent huge pages (MADV_HUGEPAGE), against ~10% slowdowns at random on 4 KiB
// pages; on the VM this is measured on, that advice later made whole passes 10-25 times slower at
// random (perf/bench_codec.sh: memcpy passes varied up to 4,600% within one run with it, 22-190%
// without), so none is given.
inline void* scratch_alloc(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
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
