#include "dcr/ckpt/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <vector>

#include "dcr/ckpt/checkpoint.h"
#include "dcr/codec/byte_io.h"
#include "src/core/files.h"
#include "src/ckpt/tensor_size.h"

namespace dcr {

namespace {

using json = nlohmann::json;

constexpr const char* kMetadataKey = "__metadata__";
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the safetensors format's own cap

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypeNames[] = {
    {DType::bf16, "BF16"}, {DType::f16, "F16"}, {DType::f32, "F32"},         {DType::f64, "F64"},
    {DType::i64, "I64"},   {DType::i32, "I32"}, {DType::u8, "U8"},           {DType::f8_e4m3, "F8_E4M3"},
    {DType::f8_e5m2, "F8_E5M2"},
};

const char* safetensors_name(DType dtype) {
  for (const DTypeName& d : kDTypeNames) {
    if (d.dtype == dtype) return d.name;
  }
  return "";  // every DType is in kDTypeNames
}

// A tensor as the header describes it; offsets are relative to the byte buffer until returned.
using Entry = SafetensorsEntry;

std::string range_text(const Entry& e) {
  return "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
}

// A header nests at most three levels ({name: {"shape": [...]}}); deeper JSON is refused before
// parsing, which recurses once per level.
Status check_nesting(const std::string& text) {
  constexpr int kMaxDepth = 8;
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') DCR_REQUIRE(++depth <= kMaxDepth, Code::corrupt,
                                          "header nests deeper than " + std::to_string(kMaxDepth) + " levels");
    if (c == '}' || c == ']') --depth;
  }
  return Status::ok();
}

// Finds the first key that appears twice in one object (the format disallows them, and JSON
// parsers would silently keep the last one), in one linear SAX pass.
class DuplicateKeys : public nlohmann::json_sax<json> {
 public:
  std::string duplicate;  // "\"key\"" or "\"key\" (in \"entry\")", empty when none

  bool key(string_t& k) override {
    if (objects_.size() == 1) entry_ = k;
    if (!objects_.back().insert(k).second && duplicate.empty()) {
      duplicate = "\"" + k + "\"" + (objects_.size() == 1 ? "" : " (in \"" + entry_ + "\")");
    }
    return true;
  }
  bool start_object(std::size_t) override {
    objects_.emplace_back();
    return true;
  }
  bool end_object() override {
    objects_.pop_back();
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  std::vector<std::set<std::string>> objects_;
  std::string entry_;
};

// Parses with nlohmann after bounding the nesting, refusing duplicate keys.
Status parse_json(const std::string& text, json* out) {
  DCR_TRY(check_nesting(text));
  DuplicateKeys keys;
  try {
    *out = json::parse(text);
  } catch (const json::exception& e) {  // syntax, or a number out of range
    return Status(Code::corrupt, std::string("header is not valid JSON: ") + e.what());
  }
  json::sax_parse(text, &keys);
  DCR_REQUIRE(keys.duplicate.empty(), Code::corrupt, "header has the key " + keys.duplicate + " twice");
  return Status::ok();
}

Status parse_dtype_field(const json& value, DType* out) {
  DCR_REQUIRE(value.is_string(), Code::corrupt, "\"dtype\" is not a string");
  const std::string name = value.get<std::string>();
  for (const DTypeName& d : kDTypeNames) {
    if (name == d.name) {
      *out = d.dtype;
      return Status::ok();
    }
  }
  return Status(Code::corrupt, "unknown dtype \"" + name + "\" (dcr reads BF16, F16, F32, F64, I64, I32, U8, F8_E4M3, F8_E5M2)");
}

Status parse_shape(const json& value, std::vector<int64_t>* shape) {
  DCR_REQUIRE(value.is_array(), Code::corrupt, "\"shape\" is not an array");
  for (const json& d : value) {
    DCR_REQUIRE(d.is_number_unsigned() && d.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()),
                Code::corrupt, "\"shape\" " + value.dump() + " holds something other than dimensions");
    DCR_REQUIRE(d.get<uint64_t>() > 0, Code::invalid_argument,
                "shape " + value.dump() + " has a zero dimension: an empty tensor, which dcr does not hold");
    shape->push_back(d.get<int64_t>());
  }
  return Status::ok();
}

Status parse_offsets(const json& value, Entry* e) {
  DCR_REQUIRE(value.is_array() && value.size() == 2 && value[0].is_number_unsigned() && value[1].is_number_unsigned(),
              Code::corrupt, "\"data_offsets\" " + value.dump() + " is not [begin, end]");
  e->begin = value[0].get<uint64_t>();
  e->end = value[1].get<uint64_t>();
  DCR_REQUIRE(e->begin <= e->end, Code::corrupt, range_text(*e) + " end before they begin");
  uint64_t bytes = 0;
  DCR_TRY(checked_nbytes(e->desc, &bytes));
  DCR_REQUIRE(e->end - e->begin == bytes, Code::corrupt,
              range_text(*e) + " hold " + std::to_string(e->end - e->begin) + " bytes but " +
                  safetensors_name(e->desc.dtype) + " " + shape_text(e->desc.shape) + " needs " + std::to_string(bytes));
  return Status::ok();
}

Status parse_entry(const std::string& name, const json& value, Entry* e) {
  DCR_REQUIRE(value.is_object(), Code::corrupt, "entry is not an object");
  for (const auto& item : value.items()) {
    DCR_REQUIRE(item.key() == "dtype" || item.key() == "shape" || item.key() == "data_offsets", Code::corrupt,
                "unexpected key \"" + item.key() + "\"");
  }
  DCR_REQUIRE(value.size() == 3, Code::corrupt, "entry lacks one of \"dtype\", \"shape\", \"data_offsets\"");
  e->desc.name = name;
  e->desc.is_buffer = is_buffer_name(name);
  DCR_TRY(parse_dtype_field(value["dtype"], &e->desc.dtype));
  DCR_TRY(parse_shape(value["shape"], &e->desc.shape));
  return parse_offsets(value["data_offsets"], e);
}

Status parse_metadata(const json& value, SafetensorsMetadata* metadata) {
  DCR_REQUIRE(value.is_object(), Code::corrupt, "\"__metadata__\" is not an object");
  for (const auto& item : value.items()) {
    DCR_REQUIRE(item.value().is_string(), Code::corrupt,
                "\"__metadata__\" value of \"" + item.key() + "\" is not a string");
    if (metadata) (*metadata)[item.key()] = item.value().get<std::string>();
  }
  return Status::ok();
}

Status parse_header(const std::string& text, std::vector<Entry>* entries, SafetensorsMetadata* metadata) {
  DCR_REQUIRE(!text.empty() && text[0] == '{', Code::corrupt, "header does not begin with '{'");
  json header;
  DCR_TRY(parse_json(text, &header));
  for (const auto& item : header.items()) {
    if (item.key() == kMetadataKey) {
      DCR_TRY(parse_metadata(item.value(), metadata));
      continue;
    }
    Entry e;
    DCR_TRY(parse_entry(item.key(), item.value(), &e).with_context("tensor '" + item.key() + "'"));
    entries->push_back(std::move(e));
  }
  return Status::ok();
}

// Sorts by offset and requires the tensors to tile the byte buffer exactly.
Status check_tiling(std::vector<Entry>* entries, uint64_t buffer_bytes) {
  std::sort(entries->begin(), entries->end(), [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : *entries) {
    const std::string where = "tensor '" + e.desc.name + "' " + range_text(e);
    DCR_REQUIRE(e.begin >= covered, Code::corrupt,
                where + " overlap tensor '" + (previous ? previous->desc.name : "") + "', which ends at " + std::to_string(covered));
    DCR_REQUIRE(e.begin == covered, Code::corrupt,
                where + " leave a hole: bytes [" + std::to_string(covered) + ", " + std::to_string(e.begin) +
                    ") of the data buffer belong to no tensor");
    DCR_REQUIRE(e.end <= buffer_bytes, Code::corrupt,
                where + " run past the end of the " + std::to_string(buffer_bytes) + "-byte data buffer (truncated file?)");
    covered = e.end;
    previous = &e;
  }
  DCR_REQUIRE(covered == buffer_bytes, Code::corrupt,
              "the data buffer holds " + std::to_string(buffer_bytes) + " bytes but the tensors cover only " +
                  std::to_string(covered) + " (trailing bytes belong to no tensor)");
  return Status::ok();
}

Status read_bytes(std::ifstream& in, void* data, uint64_t bytes, const std::string& what) {
  in.read(static_cast<char*>(data), static_cast<std::streamsize>(bytes));
  DCR_REQUIRE(in.good(), Code::io_error, "cannot read " + what);
  return Status::ok();
}

// Opens `path`, reads and checks its header; `in` is left at the start of the data buffer, and
// the entries' offsets are relative to it.
Status open_checked(const std::string& path, std::ifstream* in, std::vector<Entry>* entries,
                    SafetensorsMetadata* metadata, uint64_t* data_start) {
  uint64_t size = 0;
  DCR_TRY(files::check_regular_file(path, UINT64_MAX, &size));
  DCR_REQUIRE(size >= 8, Code::corrupt, "the file holds " + std::to_string(size) + " bytes, less than the 8-byte header length");
  in->open(path, std::ios::binary);
  DCR_REQUIRE(in->is_open(), Code::io_error, std::string("cannot open: ") + std::strerror(errno));
  uint8_t length[8];
  DCR_TRY(read_bytes(*in, length, 8, "the header length"));
  const uint64_t header_bytes = get_le(length, 8);
  DCR_REQUIRE(header_bytes <= kMaxHeaderBytes, Code::corrupt,
              "header length " + std::to_string(header_bytes) + " exceeds the format's 100 MB limit");
  DCR_REQUIRE(header_bytes <= size - 8, Code::corrupt,
              "header length " + std::to_string(header_bytes) + " is larger than the " + std::to_string(size - 8) +
                  " bytes that follow it");
  std::string text(header_bytes, '\0');
  DCR_TRY(read_bytes(*in, text.data(), header_bytes, "the header"));
  if (metadata) metadata->clear();
  DCR_TRY(parse_header(text, entries, metadata));
  DCR_REQUIRE(!entries->empty(), Code::corrupt, "the header names no tensors");
  DCR_TRY(check_tiling(entries, size - 8 - header_bytes));
  *data_start = 8 + header_bytes;
  return Status::ok();
}

Status read_file(const std::string& path, Manifest* manifest, CanonicalBits* bits, SafetensorsMetadata* metadata) {
  std::ifstream in;
  std::vector<Entry> entries;
  uint64_t data_start = 0;
  DCR_TRY(open_checked(path, &in, &entries, metadata, &data_start));
  Manifest m;
  CanonicalBits b;
  for (Entry& e : entries) {
    b.emplace_back(e.end - e.begin);
    DCR_TRY(read_bytes(in, b.back().data(), b.back().size(), "the data of tensor '" + e.desc.name + "'"));
    m.tensors.push_back(std::move(e.desc));
  }
  DCR_TRY(m.validate());
  *manifest = std::move(m);
  *bits = std::move(b);
  return Status::ok();
}

// The JSON header for tensors laid out back to back in manifest order, padded to a multiple of 8.
Status header_text(const Manifest& manifest, const SafetensorsMetadata& metadata, std::string* text) {
  // Entries are appended one by one (an ordered_json object finds each new key by a linear scan,
  // which took minutes for 100,000 tensors).
  try {
    *text = "{";
    if (!metadata.empty()) *text += json(kMetadataKey).dump() + ":" + json(metadata).dump();
    uint64_t offset = 0;
    for (const TensorDesc& t : manifest.tensors) {
      DCR_REQUIRE(t.name != kMetadataKey, Code::invalid_argument, "a tensor cannot be named \"__metadata__\"");
      const json entry = {{"data_offsets", {offset, offset + t.nbytes()}}, {"dtype", safetensors_name(t.dtype)}, {"shape", t.shape}};
      *text += (text->size() > 1 ? "," : "") + json(t.name).dump() + ":" + entry.dump();
      offset += t.nbytes();
    }
    *text += "}";
  } catch (const json::type_error& e) {
    return Status(Code::invalid_argument, std::string("a tensor name or metadata string is not UTF-8: ") + e.what());
  }
  text->append((8 - text->size() % 8) % 8, ' ');
  return Status::ok();
}

// Through files::write_atomic, so a failure (a full disk) names the file and the system's reason.
Status write_checked(const std::string& path, const Manifest& manifest, const CanonicalBits& bits,
                     const SafetensorsMetadata& metadata) {
  DCR_TRY(check_checkpoint(manifest, bits));
  std::string header;
  DCR_TRY(header_text(manifest, metadata, &header));
  uint8_t length[8];
  store_le(length, header.size(), 8);
  std::vector<files::Piece> pieces = {{length, sizeof length}, {header.data(), header.size()}};
  for (const std::vector<uint8_t>& b : bits) pieces.push_back({b.data(), b.size()});
  return files::write_atomic(path, pieces, true);
}

}  // namespace

bool is_buffer_name(const std::string& name) {
  const std::string suffix = "step_counter";
  return name.find("inv_freq") != std::string::npos ||
         (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
}

Status read_safetensors(const std::string& path, Manifest* manifest, CanonicalBits* bits, SafetensorsMetadata* metadata) {
  return read_file(path, manifest, bits, metadata).with_context("safetensors file '" + path + "'");
}

Status read_safetensors_header(const std::string& path, std::vector<SafetensorsEntry>* entries) {
  std::ifstream in;
  uint64_t data_start = 0;
  entries->clear();
  DCR_TRY(open_checked(path, &in, entries, nullptr, &data_start).with_context("safetensors file '" + path + "'"));
  for (SafetensorsEntry& e : *entries) {
    e.begin += data_start;
    e.end += data_start;
  }
  return Status::ok();
}

Status write_safetensors(const std::string& path, const Manifest& manifest, const CanonicalBits& bits,
                         const SafetensorsMetadata& metadata) {
  return write_checked(path, manifest, bits, metadata).with_context("safetensors file '" + path + "'");
}

}  // namespace dcr
