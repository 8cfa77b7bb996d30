// Small pieces of the HDF5 C API for the checkpoint: owned ids, a quiet error stack, the HDF5 type
// of each dtype, and scalar attributes. Failures become Status messages naming the attribute; the
// caller adds the file and object.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>

#include "dcr/core/dtype.h"
#include "dcr/core/status.h"

namespace dcr {

// An HDF5 id closed by its closer (H5Fclose, H5Dclose, ...) unless invalid.
class H5Id {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Id(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~H5Id() { close(); }
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  bool close();  // true when the id was valid and closed cleanly

 private:
  hid_t id_;
  Closer closer_;
};

// Turns off HDF5's printing of its error stack for this object's lifetime (restored afterwards).
class QuietHdf5 {
 public:
  QuietHdf5();
  ~QuietHdf5();
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// The stored (and in-memory: no conversion) type of a dtype; see dcr/ckpt/hdf5_checkpoint.h.
H5Id h5_type(DType dtype);

Status write_string_attribute(hid_t object, const char* name, const std::string& value);
Status read_string_attribute(hid_t object, const char* name, std::string* value);
// `file_type` is stored; `memory_type` describes *value (e.g. H5T_STD_U64LE and H5T_NATIVE_UINT64).
Status write_attribute(hid_t object, const char* name, hid_t file_type, hid_t memory_type, const void* value);
Status read_integer_attribute(hid_t object, const char* name, hid_t memory_type, void* value);

}  // namespace dcr
