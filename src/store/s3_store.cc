// The s3:// object store: path-style requests (<endpoint>/<bucket>/<prefix><key>) signed with AWS
// Signature V4 by libcurl (CURLOPT_AWS_SIGV4). libcurl 7.88 does not hash the payload for service
// s3 and signs the query string as given, so every request here carries its own
// x-amz-content-sha256 and a canonical query (parameters sorted, each "name=value", encoded). It
// also signs a header removed with "Expect:", so PUTs keep curl's "Expect: 100-continue".
// Transport errors, 5xx and 429 are retried with exponential backoff for up to timeout_s; other
// 4xx fail at once with S3's error code and message. A PUT is durable once S3 answers 200, so
// `durable` needs nothing more. Each store owns one CURL handle: a store is not thread-safe (open
// one per thread).
#include <curl/curl.h>
#include <openssl/evp.h>

#include <strings.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "dcr/core/log.h"
#include "dcr/store/object_store.h"

namespace dcr {
namespace {

constexpr uint64_t kMinPartBytes = uint64_t{5} << 20;  // S3's bounds on a part (the last may be smaller)
constexpr uint64_t kMaxPartBytes = uint64_t{5} << 30;
constexpr uint64_t kMaxParts = 10000;
constexpr double kFirstBackoffS = 0.05;
constexpr double kMaxBackoffS = 2.0;
constexpr long kMaxConnectMs = 10000;
constexpr long kMaxStallS = 30;  // a request moving no byte this long is retried

using Clock = std::chrono::steady_clock;
using Params = std::vector<std::pair<std::string, std::string>>;

// ---- encoding

std::string hex(const unsigned char* bytes, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

std::string sha256_hex(const uint8_t* data, size_t bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data, bytes, digest, &n, EVP_sha256(), nullptr);
  return hex(digest, n);
}

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters stay, the rest become %XX.
std::string uri_encode(const std::string& text, bool keep_slash) {
  static const char digits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += digits[c >> 4];
      out += digits[c & 15];
    }
  }
  return out;
}

// "a=1&b=2": sorted by name, every part encoded, "name=" for an empty value (as SigV4 signs it).
std::string canonical_query(Params params) {
  for (auto& p : params) p = {uri_encode(p.first, false), uri_encode(p.second, false)};
  std::sort(params.begin(), params.end());
  std::string out;
  for (const auto& p : params) out += (out.empty() ? "" : "&") + p.first + "=" + p.second;
  return out;
}

// ---- the few XML answers S3 gives: tag texts, entities decoded

void append_utf8(uint32_t code, std::string* out) {
  if (code < 0x80) {
    *out += static_cast<char>(code);
  } else if (code < 0x800) {
    *out += static_cast<char>(0xC0 | (code >> 6));
    *out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    *out += static_cast<char>(0xE0 | (code >> 12));
    *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (code >> 18));
    *out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// One entity ("amp", "#38", "#x26") to *out; false when it is none of these.
bool decode_entity(const std::string& name, std::string* out) {
  static const std::pair<const char*, char> named[] = {
      {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
  for (const auto& n : named) {
    if (name == n.first) return *out += n.second, true;
  }
  if (name.size() < 2 || name[0] != '#') return false;
  const bool is_hex = name[1] == 'x' || name[1] == 'X';
  const std::string digits = name.substr(is_hex ? 2 : 1);
  char* end = nullptr;
  const unsigned long code = std::strtoul(digits.c_str(), &end, is_hex ? 16 : 10);
  if (digits.empty() || *end != '\0' || code > 0x10FFFF) return false;
  append_utf8(static_cast<uint32_t>(code), out);
  return true;
}

std::string xml_decode(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const size_t semi = text[i] == '&' ? text.find(';', i) : std::string::npos;
    if (semi != std::string::npos && decode_entity(text.substr(i + 1, semi - i - 1), &out)) {
      i = semi;
    } else {
      out += text[i];
    }
  }
  return out;
}

// The decoded text of every <tag>...</tag> in `xml`, in order.
std::vector<std::string> xml_texts(const std::string& xml, const std::string& tag) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  std::vector<std::string> out;
  for (size_t at = xml.find(open); at != std::string::npos; at = xml.find(open, at)) {
    const size_t begin = at + open.size(), end = xml.find(close, begin);
    if (end == std::string::npos) break;
    out.push_back(xml_decode(xml.substr(begin, end - begin)));
    at = end + close.size();
  }
  return out;
}

std::string xml_text(const std::string& xml, const std::string& tag) {
  const std::vector<std::string> texts = xml_texts(xml, tag);
  return texts.empty() ? "" : texts[0];
}

// ---- one HTTP exchange

struct Request {
  std::string method;  // GET, PUT, POST, DELETE
  std::string path;    // "/bucket/prefix/key", encoded
  std::string query;   // canonical_query()
  const uint8_t* body = nullptr;
  size_t bytes = 0;
  std::string name;    // "s3://bucket/prefix/key", for messages
};

struct Response {
  long code = 0;
  std::vector<uint8_t> body;
  std::string etag;
  std::string text() const { return std::string(body.begin(), body.end()); }
};

struct Upload {
  const uint8_t* data;
  size_t bytes;
  size_t at;
};

size_t read_body(char* buffer, size_t size, size_t count, void* user) {
  Upload* up = static_cast<Upload*>(user);
  const size_t n = std::min(size * count, up->bytes - up->at);
  if (n > 0) std::memcpy(buffer, up->data + up->at, n);
  up->at += n;
  return n;
}

int seek_body(void* user, curl_off_t offset, int origin) {
  Upload* up = static_cast<Upload*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > up->bytes) return CURL_SEEKFUNC_FAIL;
  up->at = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

size_t write_body(char* data, size_t size, size_t count, void* user) {
  std::vector<uint8_t>* body = static_cast<std::vector<uint8_t>*>(user);
  body->insert(body->end(), data, data + size * count);
  return size * count;
}

// Keeps the ETag header (an UploadPart's answer names its part by it).
size_t read_header(char* data, size_t size, size_t count, void* user) {
  const std::string line(data, size * count);
  if (line.size() > 5 && strncasecmp(line.c_str(), "etag:", 5) == 0) {
    const size_t begin = line.find_first_not_of(" \t", 5), end = line.find_last_not_of(" \t\r\n");
    std::string* etag = static_cast<std::string*>(user);
    if (begin != std::string::npos && end >= begin) *etag = line.substr(begin, end - begin + 1);
  }
  return size * count;
}

bool transient(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

bool transient(long http) { return http >= 500 || http == 429; }

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", s);
  return text;
}

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// ---- the store

class S3Store : public ObjectStore {
 public:
  S3Store(S3Location where, StoreOptions options, CURL* curl)
      : where_(std::move(where)), options_(options), curl_(curl) {}

  std::string describe() const override {
    std::string prefix = where_.prefix;
    if (!prefix.empty()) prefix.pop_back();
    return "s3://" + where_.bucket + (prefix.empty() ? "" : "/" + prefix) + " (" + where_.endpoint + ", region " +
           where_.region + ")";
  }

  Status put(const std::string& key, const uint8_t* data, size_t bytes, bool durable) override {
    DCR_TRY(check_key(key));
    if (bytes <= options_.part_bytes) return exchange(object_request("PUT", key, {}, data, bytes), {200});
    return put_multipart(key, data, bytes);
  }

  Status get(const std::string& key, std::vector<uint8_t>* out, bool* found) override {
    DCR_TRY(check_key(key));
    const Request request = object_request("GET", key, {});
    Response r;
    DCR_TRY(exchange(request, {200, 404}, &r));
    DCR_TRY(check_bucket_there(request, r));
    *found = r.code == 200;
    out->clear();
    if (*found) out->swap(r.body);
    return Status::ok();
  }

  Status list(const std::string& prefix, std::vector<std::string>* keys) override {
    keys->clear();
    std::string token;
    do {
      DCR_TRY(list_page(prefix, &token, keys));
    } while (!token.empty());
    std::sort(keys->begin(), keys->end());
    return Status::ok();
  }

  Status remove(const std::string& key) override {
    DCR_TRY(check_key(key));
    const Request request = object_request("DELETE", key, {});
    Response r;
    DCR_TRY(exchange(request, {200, 204, 404}, &r));
    return check_bucket_there(request, r);
  }

  // Whether the bucket is there (a ListObjectsV2 of no keys: a HEAD would need the same
  // permission but answers an error without S3's code); PUT bucket when it is not (a bucket another
  // job made meanwhile is fine).
  Status ensure_bucket() {
    Response r;
    DCR_TRY(exchange(bucket_request("GET", {{"list-type", "2"}, {"max-keys", "0"}}), {200, 404}, &r));
    if (r.code == 200) return Status::ok();
    const std::string config = where_.region == "us-east-1" ? "" :
        "<CreateBucketConfiguration><LocationConstraint>" + where_.region +
        "</LocationConstraint></CreateBucketConfiguration>";
    Request create = bucket_request("PUT", {});
    create.body = reinterpret_cast<const uint8_t*>(config.data());
    create.bytes = config.size();
    DCR_TRY(exchange(create, {200, 409}, &r));
    DCR_REQUIRE(r.code == 200 || xml_text(r.text(), "Code") == "BucketAlreadyOwnedByYou", Code::io_error,
                http_error(create, r).message());
    return Status::ok();
  }

 private:
  Status check_key(const std::string& key) const {
    DCR_REQUIRE(!key.empty() && where_.prefix.size() + key.size() <= 1024, Code::invalid_argument,
                "S3 object key '" + key + "' under " + describe() + " is empty or longer than S3's 1024 bytes");
    return Status::ok();
  }

  std::string object_name(const std::string& key) const { return "s3://" + where_.bucket + "/" + where_.prefix + key; }

  Request object_request(const std::string& method, const std::string& key, const Params& query,
                         const uint8_t* body = nullptr, size_t bytes = 0) const {
    Request r{method, "/" + where_.bucket + "/" + uri_encode(where_.prefix + key, true), canonical_query(query), body,
              bytes, object_name(key)};
    return r;
  }

  Request bucket_request(const std::string& method, const Params& query) const {
    return Request{method, "/" + where_.bucket, canonical_query(query), nullptr, 0, "s3://" + where_.bucket};
  }

  // A 404 that is about the bucket, not the object, is an error.
  Status check_bucket_there(const Request& request, const Response& r) const {
    DCR_REQUIRE(r.code != 404 || xml_text(r.text(), "Code") != "NoSuchBucket", Code::not_found,
                http_error(request, r).message());
    return Status::ok();
  }

  // ---- multipart uploads

  Status put_multipart(const std::string& key, const uint8_t* data, size_t bytes) {
    const uint64_t part = std::max<uint64_t>(options_.part_bytes, (bytes + kMaxParts - 1) / kMaxParts);
    std::string upload_id;
    DCR_TRY(start_upload(key, &upload_id));
    std::vector<std::string> etags;
    Status st;
    for (uint64_t at = 0; st.is_ok() && at < bytes; at += part) {
      std::string etag;
      st = upload_part(key, upload_id, etags.size() + 1, data + at, std::min<uint64_t>(part, bytes - at), &etag);
      etags.push_back(etag);
    }
    if (st.is_ok()) st = complete_upload(key, upload_id, etags);
    if (!st.is_ok()) abort_upload(key, upload_id);
    return st;
  }

  Status start_upload(const std::string& key, std::string* upload_id) {
    const Request request = object_request("POST", key, {{"uploads", ""}});
    Response r;
    DCR_TRY(exchange(request, {200}, &r));
    *upload_id = xml_text(r.text(), "UploadId");
    DCR_REQUIRE(!upload_id->empty(), Code::io_error,
                "S3 POST " + request.name + "?uploads: the answer names no UploadId: " + r.text().substr(0, 200));
    return Status::ok();
  }

  Status upload_part(const std::string& key, const std::string& upload_id, size_t number, const uint8_t* data,
                     size_t bytes, std::string* etag) {
    const Request request =
        object_request("PUT", key, {{"partNumber", std::to_string(number)}, {"uploadId", upload_id}}, data, bytes);
    Response r;
    DCR_TRY(exchange(request, {200}, &r).with_context("part " + std::to_string(number)));
    DCR_REQUIRE(!r.etag.empty(), Code::io_error,
                "S3 PUT " + request.name + " part " + std::to_string(number) + ": the answer has no ETag");
    *etag = r.etag;
    return Status::ok();
  }

  // CompleteMultipartUpload may answer 200 and still fail: the error is then in the body.
  Status complete_upload(const std::string& key, const std::string& upload_id, const std::vector<std::string>& etags) {
    std::string xml = "<CompleteMultipartUpload>";
    for (size_t i = 0; i < etags.size(); ++i) {
      xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags[i] + "</ETag></Part>";
    }
    xml += "</CompleteMultipartUpload>";
    const Request request = object_request("POST", key, {{"uploadId", upload_id}},
                                           reinterpret_cast<const uint8_t*>(xml.data()), xml.size());
    Response r;
    DCR_TRY(exchange(request, {200}, &r));
    DCR_REQUIRE(r.text().find("<Error>") == std::string::npos, Code::io_error, http_error(request, r).message());
    return Status::ok();
  }

  // Best effort, one attempt (the upload already failed, maybe after timeout_s): an upload left
  // behind costs storage, not correctness.
  void abort_upload(const std::string& key, const std::string& upload_id) {
    Response r;
    perform(object_request("DELETE", key, {{"uploadId", upload_id}}), kMaxConnectMs / 1000.0, &r);
  }

  // ---- listing

  // One ListObjectsV2 page; *token becomes the next page's continuation token ("" after the last).
  Status list_page(const std::string& prefix, std::string* token, std::vector<std::string>* keys) {
    Params query = {{"list-type", "2"}, {"prefix", where_.prefix + prefix}};
    if (!token->empty()) query.push_back({"continuation-token", *token});
    const Request request = bucket_request("GET", query);
    Response r;
    DCR_TRY(exchange(request, {200}, &r).with_context("listing '" + prefix + "'"));
    const std::string xml = r.text();
    for (const std::string& key : xml_texts(xml, "Key")) {
      DCR_REQUIRE(key.compare(0, where_.prefix.size(), where_.prefix) == 0, Code::corrupt,
                  "S3 GET " + request.name + ": listed key '" + key + "' is outside the prefix '" + where_.prefix +
                      "'");
      keys->push_back(key.substr(where_.prefix.size()));
    }
    *token = xml_text(xml, "IsTruncated") == "true" ? xml_text(xml, "NextContinuationToken") : "";
    DCR_REQUIRE(xml_text(xml, "IsTruncated") != "true" || !token->empty(), Code::io_error,
                "S3 GET " + request.name + ": a truncated listing without a NextContinuationToken");
    return Status::ok();
  }

  // ---- requests, retried

  Status exchange(const Request& request, std::initializer_list<long> accept) {
    Response r;
    return exchange(request, accept, &r);
  }

  // Sends `request` until it gets an answer that is not transient or timeout_s has passed; an
  // answer whose code is not in `accept` is an error.
  Status exchange(const Request& request, std::initializer_list<long> accept, Response* r) {
    const Clock::time_point start = Clock::now();
    double backoff = kFirstBackoffS;
    for (int attempt = 1;; ++attempt) {
      const double left = options_.timeout_s - std::chrono::duration<double>(Clock::now() - start).count();
      const CURLcode code = perform(request, left, r);
      if (code == CURLE_OK && !transient(r->code)) {
        if (attempt > 1) {
          DCR_LOG(info, "store", "S3 %s %s: answered after %d attempts (%.1f s)", request.method.c_str(),
                  request.name.c_str(), attempt, std::chrono::duration<double>(Clock::now() - start).count());
        }
        if (std::find(accept.begin(), accept.end(), r->code) != accept.end()) return Status::ok();
        return http_error(request, *r);
      }
      if (code != CURLE_OK && !transient(code)) {
        return Status(Code::io_error, "S3 " + request.method + " " + request.name + " (" + where_.endpoint +
                                          "): " + curl_error_ + " (curl error " + std::to_string(code) + ")");
      }
      const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      if (elapsed >= options_.timeout_s) return unavailable(request, *r, code, attempt, elapsed);
      if (attempt == 1) {  // a long run says why it stalls; the retries that follow stay quiet
        const std::string why = code != CURLE_OK ? std::string(curl_error_) : "HTTP " + std::to_string(r->code);
        DCR_LOG(warn, "store", "S3 %s %s (%s): %s; retrying for up to %g s", request.method.c_str(),
                request.name.c_str(), where_.endpoint.c_str(), why.c_str(), options_.timeout_s);
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(std::min(backoff, options_.timeout_s - elapsed)));
      backoff = std::min(backoff * 2, kMaxBackoffS);
    }
  }

  // One attempt; the CURLcode of the transfer (the HTTP code is in r->code).
  CURLcode perform(const Request& request, double left_s, Response* r) {
    *r = Response();
    curl_error_[0] = '\0';
    Upload up{request.body, request.bytes, 0};
    std::unique_ptr<curl_slist, SlistFree> headers(make_headers(request));
    set_options(request, left_s, &up, r, headers.get());
    const CURLcode code = curl_easy_perform(curl_.get());
    curl_easy_getinfo(curl_.get(), CURLINFO_RESPONSE_CODE, &r->code);
    if (code != CURLE_OK && curl_error_[0] == '\0') {
      std::snprintf(curl_error_, sizeof curl_error_, "%s", curl_easy_strerror(code));
    }
    return code;
  }

  curl_slist* make_headers(const Request& request) const {
    curl_slist* list = nullptr;
    list = curl_slist_append(list, ("x-amz-content-sha256: " + sha256_hex(request.body, request.bytes)).c_str());
    if (!where_.session_token.empty()) {
      list = curl_slist_append(list, ("x-amz-security-token: " + where_.session_token).c_str());
    }
    return list;
  }

  void set_options(const Request& request, double left_s, Upload* up, Response* r, curl_slist* headers) {
    CURL* c = curl_.get();
    curl_easy_reset(c);  // keeps the connection for the next request
    const std::string url = where_.endpoint + request.path + (request.query.empty() ? "" : "?" + request.query);
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);  // keys may hold "../": never let curl fold them
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4_.c_str());
    curl_easy_setopt(c, CURLOPT_USERNAME, where_.access_key.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, where_.secret_key.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_error_);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::clamp(static_cast<long>(left_s * 1000), 100L, kMaxConnectMs));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, std::clamp(static_cast<long>(options_.timeout_s), 1L, kMaxStallS));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, read_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r->etag);
    set_method(request, up);
  }

  void set_method(const Request& request, Upload* up) {
    CURL* c = curl_.get();
    if (request.method == "PUT" || request.method == "POST") {
      curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);  // a body of exactly `bytes`, read (and re-read) from memory
      curl_easy_setopt(c, CURLOPT_READFUNCTION, read_body);
      curl_easy_setopt(c, CURLOPT_READDATA, up);
      curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, seek_body);
      curl_easy_setopt(c, CURLOPT_SEEKDATA, up);
      curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.bytes));
    }
    if (request.method != "GET" && request.method != "PUT") {
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
  }

  // "S3 PUT s3://bucket/v1/MANIFEST: 403 SignatureDoesNotMatch: <message>", with a hint for the
  // errors a configuration causes.
  Status http_error(const Request& request, const Response& r) const {
    const std::string xml = r.text(), code = xml_text(xml, "Code"), message = xml_text(xml, "Message");
    std::string text = "S3 " + request.method + " " + request.name + ": " + std::to_string(r.code);
    if (!code.empty()) text += " " + code;
    if (!message.empty()) text += ": " + message;
    if (code == "SignatureDoesNotMatch") text += " (is AWS_SECRET_ACCESS_KEY the access key's secret?)";
    if (code == "InvalidAccessKeyId") text += " (AWS_ACCESS_KEY_ID is unknown to " + where_.endpoint + ")";
    if (code == "RequestTimeTooSkewed") text += " (this machine's clock is off)";
    if (r.code == 403 && code.empty()) text += " (access denied: check the credentials and the bucket's owner)";
    return Status(r.code == 404 ? Code::not_found : Code::io_error, text);
  }

  Status unavailable(const Request& request, const Response& r, CURLcode code, int attempts, double elapsed) const {
    std::string last = curl_error_;
    if (code == CURLE_OK) {
      const std::string xml = r.text(), s3_code = xml_text(xml, "Code");
      last = std::to_string(r.code) + (s3_code.empty() ? "" : " " + s3_code);
    }
    return Status(Code::unavailable, "S3 " + request.method + " " + request.name + ": " + where_.endpoint +
                                         " unavailable for " + seconds(elapsed) + " (" + std::to_string(attempts) +
                                         " attempts, timeout_s " + seconds(options_.timeout_s) + "; last: " + last +
                                         ")");
  }

  S3Location where_;
  StoreOptions options_;
  std::unique_ptr<CURL, CurlFree> curl_;
  std::string sigv4_ = "aws:amz:" + where_.region + ":s3";
  char curl_error_[CURL_ERROR_SIZE] = {};
};

Status check_location(const S3Location& w, const StoreOptions& o) {
  const std::string what = "S3 store s3://" + w.bucket + "/" + w.prefix + ": ";
  DCR_REQUIRE(w.endpoint.compare(0, 7, "http://") == 0 || w.endpoint.compare(0, 8, "https://") == 0,
              Code::invalid_argument, what + "endpoint '" + w.endpoint + "' is not an http:// or https:// URL");
  DCR_REQUIRE(!w.bucket.empty() && w.bucket.find('/') == std::string::npos, Code::invalid_argument,
              what + "'" + w.bucket + "' is not a bucket name");
  DCR_REQUIRE(w.prefix.empty() || (w.prefix.back() == '/' && w.prefix.front() != '/'), Code::invalid_argument,
              what + "the prefix '" + w.prefix + "' must be empty or end with '/' (and not start with one)");
  DCR_REQUIRE(!w.access_key.empty() && !w.secret_key.empty(), Code::invalid_argument,
              what + "no credentials (an access key and a secret key)");
  DCR_REQUIRE(!w.region.empty(), Code::invalid_argument, what + "no region");
  DCR_REQUIRE(o.part_bytes >= kMinPartBytes && o.part_bytes <= kMaxPartBytes, Code::invalid_argument,
              what + "part size " + std::to_string(o.part_bytes) + " bytes is outside S3's 5 MiB to 5 GiB");
  DCR_REQUIRE(o.timeout_s > 0, Code::invalid_argument, what + "timeout_s must be positive");
  return Status::ok();
}

}  // namespace

Status s3_store(const S3Location& where, const StoreOptions& options, std::unique_ptr<ObjectStore>* out) {
  static std::once_flag curl_ready;
  std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  DCR_TRY(check_location(where, options));
  S3Location w = where;
  while (!w.endpoint.empty() && w.endpoint.back() == '/') w.endpoint.pop_back();
  CURL* curl = curl_easy_init();
  DCR_REQUIRE(curl != nullptr, Code::internal, "S3 store: curl_easy_init failed");
  auto store = std::make_unique<S3Store>(w, options, curl);
  DCR_TRY(store->ensure_bucket().with_context("opening " + store->describe()));
  *out = std::move(store);
  return Status::ok();
}

}  // namespace dcr
