// Internal to the codec: scratch arrays for the hot loops.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace dcr {

// A growable array that is never zero-filled (its writers overwrite what they use): growing it
// costs no pass over memory, and it never shrinks. Growing drops the contents.
template <class T>
class Buffer {
 public:
  T* reserve(size_t count) {
    if (count > size_) {
      data_.reset(new T[count]);
      size_ = count;
    }
    return data_.get();
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }

 private:
  std::unique_ptr<T[]> data_;
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
