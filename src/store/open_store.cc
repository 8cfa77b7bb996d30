// open_store: a store URL (object_store.h) to a backend, with the S3 endpoint, region and
// credentials from the environment or the shared credentials file, never from the command line.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "dcr/store/object_store.h"

namespace dcr {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// Bucket names as S3 allows them: 3-63 of [a-z0-9.-], starting and ending with a letter or digit.
bool valid_bucket(const std::string& b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return false;
  }
  return b.front() != '.' && b.front() != '-' && b.back() != '.' && b.back() != '-';
}

Status parse_number(const std::string& url, const std::string& name, const std::string& text, double low,
                    double high, double* out) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  DCR_REQUIRE(!text.empty() && *end == '\0' && value >= low && value <= high, Code::invalid_argument,
              "store URL '" + url + "': " + name + "=" + text + " is not a number in [" + std::to_string(low) + ", " +
                  std::to_string(high) + "]");
  *out = value;
  return Status::ok();
}

// "part_mb=8&timeout_s=60".
Status parse_query(const std::string& url, const std::string& query, StoreOptions* options) {
  std::istringstream in(query);
  std::string item;
  while (std::getline(in, item, '&')) {
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    double number = 0;
    if (name == "part_mb") {
      DCR_TRY(parse_number(url, name, value, 5, 5120, &number));  // S3's part sizes: 5 MiB to 5 GiB
      options->part_bytes = static_cast<uint64_t>(number * (1 << 20));
    } else if (name == "timeout_s") {
      DCR_TRY(parse_number(url, name, value, 0.1, 1e6, &options->timeout_s));
    } else {
      return Status(Code::invalid_argument,
                    "store URL '" + url + "': unknown option '" + name + "' (known: part_mb, timeout_s)");
    }
  }
  return Status::ok();
}

// The [profile] section of an AWS shared credentials file.
Status read_credentials_file(const std::string& path, const std::string& profile, S3Location* where) {
  std::ifstream in(path);
  DCR_REQUIRE(in.good(), Code::not_found,
              "no S3 credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are not set and the credentials file '" +
                  path + "' cannot be read");
  std::string line, section;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trim(line.substr(1, line.size() - 2));
      continue;
    }
    const size_t eq = line.find('=');
    if (section != profile || eq == std::string::npos) continue;
    const std::string name = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (name == "aws_access_key_id") where->access_key = value;
    if (name == "aws_secret_access_key") where->secret_key = value;
    if (name == "aws_session_token") where->session_token = value;
  }
  DCR_REQUIRE(!where->access_key.empty() && !where->secret_key.empty(), Code::invalid_argument,
              "S3 credentials file '" + path + "' has no aws_access_key_id and aws_secret_access_key in profile [" +
                  profile + "]");
  return Status::ok();
}

Status find_credentials(S3Location* where) {
  where->access_key = env("AWS_ACCESS_KEY_ID");
  where->secret_key = env("AWS_SECRET_ACCESS_KEY");
  where->session_token = env("AWS_SESSION_TOKEN");
  if (!where->access_key.empty() || !where->secret_key.empty()) {
    DCR_REQUIRE(!where->access_key.empty() && !where->secret_key.empty(), Code::invalid_argument,
                "S3 credentials: set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (one of them is empty)");
    return Status::ok();
  }
  std::string path = env("AWS_SHARED_CREDENTIALS_FILE");
  if (path.empty()) path = env("HOME") + "/.aws/credentials";
  const std::string profile = env("AWS_PROFILE").empty() ? "default" : env("AWS_PROFILE");
  return read_credentials_file(path, profile, where);
}

Status open_s3(const std::string& url, StoreAccess access, std::unique_ptr<ObjectStore>* out) {
  std::string rest = url.substr(5), query;
  const size_t q = rest.find('?');
  if (q != std::string::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  S3Location where;
  const size_t slash = rest.find('/');
  where.bucket = rest.substr(0, slash);
  where.prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (!where.prefix.empty() && where.prefix.back() != '/') where.prefix += '/';
  DCR_REQUIRE(valid_bucket(where.bucket), Code::invalid_argument,
              "store URL '" + url + "': '" + where.bucket + "' is not an S3 bucket name (3-63 of a-z, 0-9, '.', '-')");
  StoreOptions options;
  DCR_TRY(parse_query(url, query, &options));
  where.region = env("AWS_REGION").empty() ? env("AWS_DEFAULT_REGION") : env("AWS_REGION");
  if (where.region.empty()) where.region = "us-east-1";
  where.endpoint = env("AWS_ENDPOINT_URL_S3").empty() ? env("AWS_ENDPOINT_URL") : env("AWS_ENDPOINT_URL_S3");
  if (where.endpoint.empty()) where.endpoint = "https://s3." + where.region + ".amazonaws.com";
  while (!where.endpoint.empty() && where.endpoint.back() == '/') where.endpoint.pop_back();
  DCR_TRY(find_credentials(&where).with_context("store '" + url + "'"));
  return s3_store(where, options, access, out);
}

}  // namespace

Status open_store(const std::string& url, StoreAccess access, std::unique_ptr<ObjectStore>* out) {
  if (url.compare(0, 7, "file://") == 0) {
    const std::string dir = url.substr(7);
    DCR_REQUIRE(!dir.empty() && dir[0] == '/', Code::invalid_argument,
                "store URL '" + url + "': a file:// URL names an absolute directory (file:///shared/dcr-store)");
    *out = file_store(dir, access);
    return Status::ok();
  }
  if (url.compare(0, 5, "s3://") == 0) return open_s3(url, access, out);
  return Status(Code::invalid_argument,
                "store URL '" + url + "' is neither file:///DIR nor s3://BUCKET[/PREFIX] (credentials come from the "
                "AWS_* environment or ~/.aws/credentials, never from the command line)");
}

}  // namespace dcr
