#include "src/ckpt/h5_util.h"

#include <algorithm>
#include <vector>

namespace dcr {

namespace {

// The 2-byte IEEE half (sign 15, exponent 10..14 with bias 15, mantissa 0..9), as h5py stores float16.
hid_t half_type() {
  const hid_t type = H5Tcopy(H5T_IEEE_F32LE);
  if (type >= 0 && (H5Tset_fields(type, 15, 10, 5, 0, 10) < 0 || H5Tset_size(type, 2) < 0 || H5Tset_ebias(type, 15) < 0)) {
    H5Tclose(type);
    return -1;
  }
  return type;
}

// An attribute that exists and holds one value of class `type_class`.
Status check_single_value(const H5Id& attribute, const char* name, H5T_class_t type_class) {
  DCR_REQUIRE(attribute.valid(), Code::corrupt, std::string("attribute '") + name + "' is missing");
  H5Id type(H5Aget_type(attribute.get()), H5Tclose);
  H5Id space(H5Aget_space(attribute.get()), H5Sclose);
  DCR_REQUIRE(type.valid() && space.valid() && H5Tget_class(type.get()) == type_class &&
                  H5Sget_simple_extent_npoints(space.get()) == 1,
              Code::corrupt,
              std::string("attribute '") + name + "' is not a single " + (type_class == H5T_STRING ? "string" : "integer"));
  return Status::ok();
}

}  // namespace

bool H5Id::close() {
  const bool closed = id_ >= 0 && closer_(id_) >= 0;
  id_ = -1;
  return closed;
}

QuietHdf5::QuietHdf5() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

QuietHdf5::~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

H5Id h5_type(DType dtype) {
  switch (dtype) {
    case DType::f16: return H5Id(half_type(), H5Tclose);
    case DType::f32: return H5Id(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
    case DType::f64: return H5Id(H5Tcopy(H5T_IEEE_F64LE), H5Tclose);
    case DType::i32: return H5Id(H5Tcopy(H5T_STD_I32LE), H5Tclose);
    case DType::i64: return H5Id(H5Tcopy(H5T_STD_I64LE), H5Tclose);
    case DType::bf16: return H5Id(H5Tcopy(H5T_STD_U16LE), H5Tclose);
    case DType::u8:
    case DType::f8_e4m3:
    case DType::f8_e5m2: return H5Id(H5Tcopy(H5T_STD_U8LE), H5Tclose);
  }
  return H5Id(-1, H5Tclose);
}

Status write_string_attribute(hid_t object, const char* name, const std::string& value) {
  H5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  DCR_REQUIRE(type.valid() && H5Tset_size(type.get(), value.size() + 1) >= 0, Code::io_error,
              std::string("cannot make the string type of attribute '") + name + "'");
  return write_attribute(object, name, type.get(), type.get(), value.c_str());
}

Status read_string_attribute(hid_t object, const char* name, std::string* value) {
  H5Id attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  DCR_TRY(check_single_value(attribute, name, H5T_STRING));
  H5Id type(H5Aget_type(attribute.get()), H5Tclose);
  DCR_REQUIRE(H5Tis_variable_str(type.get()) == 0, Code::corrupt,
              std::string("attribute '") + name + "' is not a fixed-length string");
  std::vector<char> text(H5Tget_size(type.get()) + 1, '\0');
  DCR_REQUIRE(H5Aread(attribute.get(), type.get(), text.data()) >= 0, Code::corrupt,
              std::string("cannot read attribute '") + name + "'");
  value->assign(text.data(), std::find(text.begin(), text.end(), '\0') - text.begin());
  return Status::ok();
}

Status write_attribute(hid_t object, const char* name, hid_t file_type, hid_t memory_type, const void* value) {
  H5Id space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Id attribute(space.valid() ? H5Acreate2(object, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT) : -1, H5Aclose);
  DCR_REQUIRE(attribute.valid() && H5Awrite(attribute.get(), memory_type, value) >= 0, Code::io_error,
              std::string("cannot write attribute '") + name + "'");
  return Status::ok();
}

Status read_integer_attribute(hid_t object, const char* name, hid_t memory_type, void* value) {
  H5Id attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  DCR_TRY(check_single_value(attribute, name, H5T_INTEGER));
  DCR_REQUIRE(H5Aread(attribute.get(), memory_type, value) >= 0, Code::corrupt,
              std::string("cannot read attribute '") + name + "'");
  return Status::ok();
}

}  // namespace dcr
