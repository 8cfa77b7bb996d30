// Internal to the codec: scratch arrays for the hot loops.
#pragma once

#include <cstddef>
#include <memory>

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

}  // namespace dcr
