#include "dcr/core/dtype.h"

#include <cstring>

namespace dcr {

namespace {
struct DTypeInfo {
  DType dtype;
  const char* name;
  size_t width;
  bool is_float;
};
constexpr DTypeInfo kInfo[] = {
    {DType::bf16, "bf16", 2, true},     {DType::f16, "f16", 2, true},
    {DType::f32, "f32", 4, true},       {DType::f64, "f64", 8, true},
    {DType::f8_e4m3, "f8_e4m3", 1, true}, {DType::f8_e5m2, "f8_e5m2", 1, true},
    {DType::i32, "i32", 4, false},      {DType::i64, "i64", 8, false},
    {DType::u8, "u8", 1, false},
};
const DTypeInfo& info(DType dtype) { return kInfo[static_cast<size_t>(dtype)]; }
}  // namespace

size_t dtype_width(DType dtype) { return info(dtype).width; }
const char* dtype_name(DType dtype) { return info(dtype).name; }
bool dtype_is_float(DType dtype) { return info(dtype).is_float; }

int exponent_shift(DType dtype) {
  switch (dtype) {
    case DType::bf16: return 7;
    case DType::f16: return 10;
    case DType::f32: return 23;
    case DType::f64: return 52;
    case DType::f8_e4m3: return 3;
    case DType::f8_e5m2: return 2;
    default: return -1;
  }
}

Status parse_dtype(const std::string& name, DType* out) {
  for (const DTypeInfo& i : kInfo) {
    if (name == i.name) {
      *out = i.dtype;
      return Status::ok();
    }
  }
  return Status(Code::invalid_argument,
                "unknown dtype '" + name + "' (expected bf16, f16, f32, f64, f8_e4m3, f8_e5m2, i32, i64 or u8)");
}

uint16_t f32_to_bf16_rne(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet NaN, sign kept
  }
  const uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace dcr
