#include "dcr/core/tensor.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "dcr/core/hash.h"

namespace dcr {

uint64_t TensorDesc::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

uint64_t Manifest::total_bytes() const {
  uint64_t bytes = 0;
  for (const TensorDesc& t : tensors) bytes += t.nbytes();
  return bytes;
}

uint64_t Manifest::total_elements() const {
  uint64_t n = 0;
  for (const TensorDesc& t : tensors) n += t.numel();
  return n;
}

uint64_t Manifest::hash() const {
  Hasher h;
  for (const TensorDesc& t : tensors) {
    h.update(t.name.data(), t.name.size() + 1);  // include the terminating NUL as a separator
    const uint8_t kind[2] = {static_cast<uint8_t>(t.dtype), static_cast<uint8_t>(t.is_buffer)};
    h.update(kind, sizeof(kind));
    const uint64_t rank = t.shape.size();
    h.update(&rank, sizeof(rank));
    h.update(t.shape.data(), t.shape.size() * sizeof(int64_t));
  }
  return h.digest();
}

std::string printable(const std::string& name) {
  std::string out;
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20) {
      out += c;
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", u);
    out += hex;
  }
  return out;
}

bool has_control(const std::string& name) {
  return std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
}

Status Manifest::validate() const {
  std::set<std::string> names;
  for (const TensorDesc& t : tensors) {
    DCR_REQUIRE(!t.name.empty(), Code::invalid_argument, "manifest has a tensor with an empty name");
    DCR_REQUIRE(!has_control(t.name), Code::invalid_argument,
                "tensor name '" + printable(t.name) + "' holds a control character");
    DCR_REQUIRE(names.insert(t.name).second, Code::invalid_argument,
                "manifest names tensor '" + t.name + "' twice");
    for (int64_t d : t.shape) {
      DCR_REQUIRE(d > 0, Code::invalid_argument,
                  "tensor '" + t.name + "' has a non-positive dimension " + std::to_string(d));
    }
  }
  return Status::ok();
}

}  // namespace dcr
