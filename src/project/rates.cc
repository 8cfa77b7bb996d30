// Stage rates from the benchmark JSON files.
#include "dcr/project/rates.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace dcr {

namespace {

using nlohmann::json;

Status read_text(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  DCR_REQUIRE(in.good(), Code::io_error, "cannot open '" + path + "'");
  std::ostringstream all;
  all << in.rdbuf();
  *text = all.str();
  return Status::ok();
}

Status parse(const std::string& text, const std::string& source, json* doc) {
  try {
    *doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return Status(Code::corrupt, "'" + source + "' is not valid JSON: " + e.what());
  }
  DCR_REQUIRE(doc->is_object(), Code::corrupt, "'" + source + "' does not hold a JSON object");
  return Status::ok();
}

Status field(const json& object, const char* key, const std::string& where, const json** out) {
  DCR_REQUIRE(object.is_object() && object.contains(key), Code::corrupt, where + " has no '" + key + "'");
  *out = &object[key];
  return Status::ok();
}

Status number(const json& object, const char* key, const std::string& where, double* out) {
  const json* value = nullptr;
  DCR_TRY(field(object, key, where, &value));
  DCR_REQUIRE(value->is_number(), Code::corrupt, where + ": '" + key + "' is not a number");
  *out = value->get<double>();
  return Status::ok();
}

Status text(const json& object, const char* key, const std::string& where, std::string* out) {
  const json* value = nullptr;
  DCR_TRY(field(object, key, where, &value));
  DCR_REQUIRE(value->is_string(), Code::corrupt, where + ": '" + key + "' is not a string");
  *out = value->get<std::string>();
  return Status::ok();
}

Status array(const json& doc, const char* key, const std::string& source, const json** out) {
  DCR_TRY(field(doc, key, "'" + source + "'", out));
  DCR_REQUIRE((*out)->is_array(), Code::corrupt, "'" + source + "': '" + key + "' is not an array");
  return Status::ok();
}

Status codec_point(const json& record, const std::string& where, CodecPoint* p) {
  DCR_TRY(number(record, "change_rate", where, &p->change_rate));
  DCR_TRY(number(record, "bytes_per_changed_element", where, &p->bytes_per_change));
  DCR_TRY(number(record, "encode_gbps", where, &p->encode_gb_s));
  DCR_TRY(number(record, "apply_gbps", where, &p->apply_gb_s));
  DCR_TRY(number(record, "memcpy_gbps", where, &p->memcpy_gb_s));
  DCR_REQUIRE(p->change_rate > 0 && p->change_rate < 1, Code::corrupt, where + ": 'change_rate' is not in (0, 1)");
  DCR_REQUIRE(p->bytes_per_change > 0 && p->encode_gb_s > 0 && p->apply_gb_s > 0 && p->memcpy_gb_s > 0,
              Code::corrupt, where + ": bytes per change and GB/s must be positive");
  return Status::ok();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

Status parse_codec_json(const std::string& content, const std::string& source, const std::string& case_prefix,
                        MachineRates* rates) {
  json doc;
  DCR_TRY(parse(content, source, &doc));
  const json* records = nullptr;
  DCR_TRY(array(doc, "records", source, &records));
  double frame_elements = 0;
  DCR_TRY(number(doc, "frame_elements", "'" + source + "'", &frame_elements));
  DCR_REQUIRE(frame_elements >= 1, Code::corrupt, "'" + source + "': 'frame_elements' must be positive");
  std::string model, cases;
  DCR_TRY(text(doc, "model", "'" + source + "'", &model));
  std::vector<CodecPoint> points;
  for (size_t i = 0; i < records->size(); ++i) {
    const std::string where = "'" + source + "' record " + std::to_string(i);
    CodecPoint p;
    DCR_TRY(text((*records)[i], "case", where, &p.name));
    cases += (cases.empty() ? "'" : ", '") + p.name + "'";
    if (p.name.compare(0, case_prefix.size(), case_prefix) != 0) continue;
    DCR_TRY(codec_point((*records)[i], where + " ('" + p.name + "')", &p));
    points.push_back(p);
  }
  DCR_REQUIRE(!points.empty(), Code::not_found,
              "'" + source + "' has no record whose case starts with '" + case_prefix + "' (cases: " + cases + ")");
  std::sort(points.begin(), points.end(),
            [](const CodecPoint& a, const CodecPoint& b) { return a.change_rate < b.change_rate; });
  rates->codec_source = source;
  rates->codec_model = model;
  rates->codec = points;
  rates->frame_elements = static_cast<uint64_t>(frame_elements);
  return Status::ok();
}

Status parse_refit_json(const std::string& content, const std::string& source, MachineRates* rates) {
  json doc;
  DCR_TRY(parse(content, source, &doc));
  const json* steps = nullptr;
  DCR_TRY(array(doc, "steps", source, &steps));
  double wire = 0, relay = 0;
  std::vector<double> commits;
  for (size_t i = 0; i < steps->size(); ++i) {
    const std::string where = "'" + source + "' step " + std::to_string(i);
    std::string kind;
    DCR_TRY(text((*steps)[i], "kind", where, &kind));
    if (kind != "delta") continue;
    const json* stages = nullptr;
    double bytes = 0, relay_s = 0, commit_s = 0;
    DCR_TRY(number((*steps)[i], "wire_bytes", where, &bytes));
    DCR_TRY(field((*steps)[i], "stage_seconds", where, &stages));
    DCR_TRY(number(*stages, "relay", where + " stage_seconds", &relay_s));
    DCR_TRY(number(*stages, "commit", where + " stage_seconds", &commit_s));
    wire += bytes;
    relay += relay_s;
    commits.push_back(commit_s);
  }
  DCR_REQUIRE(!commits.empty(), Code::not_found, "'" + source + "' has no delta step");
  DCR_REQUIRE(relay > 0, Code::corrupt, "'" + source + "': the delta steps spent no time in a relay");
  rates->refit_source = source;
  rates->relay_gb_s = wire / relay / 1e9;
  rates->commit_s = median(commits);
  return Status::ok();
}

Status load_codec_json(const std::string& path, const std::string& case_prefix, MachineRates* rates) {
  std::string content;
  DCR_TRY(read_text(path, &content));
  return parse_codec_json(content, path, case_prefix, rates);
}

Status load_refit_json(const std::string& path, MachineRates* rates) {
  std::string content;
  DCR_TRY(read_text(path, &content));
  return parse_refit_json(content, path, rates);
}

}  // namespace dcr
