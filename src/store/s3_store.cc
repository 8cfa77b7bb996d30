// The s3:// object store: path-style requests (<endpoint>/<bucket>/<prefix><key>) signed with AWS
// Signature V4 by libcurl (CURLOPT_AWS_SIGV4). libcurl 7.88 does not hash the payload for service
// s3 and signs the query string as given, so every request here carries its own
// x-amz-content-sha256 and a canonical query (parameters sorted, each "name=value", encoded). It
// also signs a header removed with "Expect:", so PUTs keep curl's "Expect: 100-continue".
// Transport errors, 5xx and 429 are retried with exponential backoff; other 4xx fail at once with
// S3's error code and message. timeout_s bounds a request whole: every attempt's transfer gets
// only what is left of it (CURLOPT_TIMEOUT_MS), so a server trickling bytes cannot hold a request
// longer. Answers are bounded in bytes (an object by the caller's limit, an error by 1 MiB) and
// checked for what S3 answers (src/store/s3_xml.h), so an HTML page from a proxy is refused by name,
// not read as an empty listing. A PUT is durable once S3 answers 200, so `durable` needs nothing
// more. A store opened for reading never writes (not even a missing bucket). Each store owns one
// CURL handle: a store is not thread-safe (open one per thread).
#include <curl/curl.h>
#include <openssl/evp.h>

#include <strings.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "dcr/core/log.h"
#include "dcr/store/object_store.h"
#include "src/store/s3_xml.h"

namespace dcr {
namespace {

constexpr uint64_t kMinPartBytes = uint64_t{5} << 20;  // S3's bounds on a part (the last may be smaller)
constexpr uint64_t kMaxPartBytes = uint64_t{5} << 30;
constexpr uint64_t kMaxParts = 10000;
constexpr double kFirstBackoffS = 0.05;
constexpr double kMaxBackoffS = 2.0;
constexpr long kMaxConnectMs = 10000;
constexpr long kMaxStallS = 30;  // a request moving no byte this long is retried
constexpr double kMinAttemptS = 0.02;  // no attempt is started with less of timeout_s left
constexpr uint64_t kMaxErrorBodyBytes = uint64_t{1} << 20;  // S3's error documents are < 1 KiB

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

// ---- one HTTP exchange

struct Request {
  std::string method;  // GET, PUT, POST, DELETE
  std::string path;    // "/bucket/prefix/key", encoded
  std::string query;   // canonical_query()
  const uint8_t* body = nullptr;
  size_t bytes = 0;
  std::string name;    // "s3://bucket/prefix/key", for messages
  uint64_t max_bytes = kMaxSmallObjectBytes;  // the most bytes a 2xx answer's body may have
  std::string body_is = "the object";         // what a 2xx body is, for messages
};

// The answer as it arrives: the header callback reads the status line and Content-Length, so a
// body over its limit is refused before it is read (declared) or as it grows (not declared).
struct Response {
  long code = 0;
  std::vector<uint8_t> body;
  std::string etag;
  int64_t length = -1;      // Content-Length, -1 when the answer gives none
  uint64_t max_bytes = 0;   // the request's limit for a 2xx body
  uint64_t limit = 0;       // the limit of this answer's body (max_bytes, or kMaxErrorBodyBytes)
  bool too_big = false;     // the transfer was stopped at `limit`
  bool reused = false;      // the transfer went over a connection an earlier one left open
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

// Returning less than given stops the transfer (CURLE_WRITE_ERROR).
size_t write_body(char* data, size_t size, size_t count, void* user) {
  Response* r = static_cast<Response*>(user);
  const size_t n = size * count;
  if (r->body.size() + n > r->limit) return r->too_big = true, 0;
  r->body.insert(r->body.end(), data, data + n);
  return n;
}

// "Name: value" to the value when the header is `name` (with its ':'), else "".
std::string header_value(const std::string& line, const char* name) {
  const size_t n = std::strlen(name);
  if (line.size() <= n || strncasecmp(line.c_str(), name, n) != 0) return "";
  const size_t begin = line.find_first_not_of(" \t", n), end = line.find_last_not_of(" \t\r\n");
  return begin == std::string::npos || end < begin ? "" : line.substr(begin, end - begin + 1);
}

// Each header line: a status line starts an answer (a 100 Continue comes before the real one);
// the blank line ends its headers, when a declared body over the limit stops the transfer.
size_t read_header(char* data, size_t size, size_t count, void* user) {
  Response* r = static_cast<Response*>(user);
  const std::string line(data, size * count);
  if (line.compare(0, 5, "HTTP/") == 0) {
    const size_t space = line.find(' ');
    r->code = space == std::string::npos ? 0 : std::strtol(line.c_str() + space + 1, nullptr, 10);
    r->length = -1;
    r->limit = r->code >= 200 && r->code < 300 ? r->max_bytes : kMaxErrorBodyBytes;
  } else if (!header_value(line, "content-length:").empty()) {
    r->length = std::strtoll(header_value(line, "content-length:").c_str(), nullptr, 10);
  } else if (!header_value(line, "etag:").empty()) {
    r->etag = header_value(line, "etag:");
  } else if ((line == "\r\n" || line == "\n") && r->code >= 200 && r->length > 0 &&
             static_cast<uint64_t>(r->length) > r->limit) {
    return r->too_big = true, 0;
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

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// "26 bytes" or "26 of 1000 bytes" (the answer's Content-Length).
std::string received(const Response& r) {
  const std::string of = r.length >= 0 ? " of " + std::to_string(r.length) : "";
  return std::to_string(r.body.size()) + of + " bytes";
}

// A token for a message: S3's are ~100 characters, a hostile one may be any size.
std::string shown(const std::string& text) {
  return "'" + (text.size() <= 120 ? text : text.substr(0, 120) + "...") + "'";
}

struct CurlFree {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistFree {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// How a listing goes, page by page: a server that pages forever is stopped.
struct Paging {
  std::set<std::string> tokens;  // every continuation token answered so far
  uint64_t pages = 0;
  int empty_in_a_row = 0;        // truncated pages in a row that added no key
};

// ---- the store

class S3Store : public ObjectStore {
 public:
  using ObjectStore::get;
  S3Store(S3Location where, StoreOptions options, StoreAccess access, CURL* curl)
      : where_(std::move(where)), options_(options), access_(access), curl_(curl) {}

  std::string describe() const override {
    std::string prefix = where_.prefix;
    if (!prefix.empty()) prefix.pop_back();
    return "s3://" + where_.bucket + (prefix.empty() ? "" : "/" + prefix) + " (" + where_.endpoint + ", region " +
           where_.region + ")";
  }

  Status put(const std::string& key, const uint8_t* data, size_t bytes, bool durable) override {
    DCR_TRY(check_key(key));
    DCR_TRY(check_writable("put", key));
    if (bytes <= options_.part_bytes) return exchange(object_request("PUT", key, {}, data, bytes), {200});
    return put_multipart(key, data, bytes);
  }

  Status get(const std::string& key, std::vector<uint8_t>* out, bool* found, uint64_t max_bytes) override {
    DCR_TRY(check_key(key));
    Request request = object_request("GET", key, {});
    request.max_bytes = max_bytes;
    Response r;
    out->clear();
    DCR_TRY(exchange(request, {200, 404}, &r));
    DCR_TRY(check_absent(request, r));
    *found = r.code == 200;
    if (*found) out->swap(r.body);
    return Status::ok();
  }

  Status list(const std::string& prefix, std::vector<std::string>* keys) override {
    keys->clear();
    std::string token;
    Paging paging;
    do {
      const size_t before = keys->size();
      DCR_TRY(list_page(prefix, &token, keys));
      DCR_TRY(check_paging(prefix, token, keys->size() - before, keys->size(), &paging));
    } while (!token.empty());
    std::sort(keys->begin(), keys->end());
    return Status::ok();
  }

  Status remove(const std::string& key) override {
    DCR_TRY(check_key(key));
    DCR_TRY(check_writable("remove", key));
    const Request request = object_request("DELETE", key, {});
    Response r;
    DCR_TRY(exchange(request, {200, 204, 404}, &r));
    return check_absent(request, r);
  }

  // Whether the bucket is there (a ListObjectsV2 of no keys: a HEAD would need the same
  // permission but answers an error without S3's code). Opened for writing, a missing bucket is
  // made (PUT bucket; one another job made meanwhile is fine); opened for reading it is an error.
  Status open_bucket() {
    const Request probe = bucket_request("GET", {{"list-type", "2"}, {"max-keys", "0"}}, "s3://" + where_.bucket);
    Response r;
    DCR_TRY(exchange(probe, {200, 404}, &r));
    // (a page of no keys: only its root is checked, servers differ on what else it says)
    if (r.code == 200) return not_s3(probe, r, s3::check_root(r.text(), "ListBucketResult"));
    s3::ErrorDoc error;
    DCR_TRY(not_s3(probe, r, s3::parse_error(r.text(), &error)));
    if (error.code != "NoSuchBucket") return http_error(probe, r);
    return access_ == StoreAccess::write ? create_bucket() : no_bucket();
  }

 private:
  Status check_key(const std::string& key) const {
    DCR_REQUIRE(!key.empty() && where_.prefix.size() + key.size() <= 1024, Code::invalid_argument,
                "S3 object key '" + key + "' under " + describe() + " is empty or longer than S3's 1024 bytes");
    return Status::ok();
  }

  Status check_writable(const char* what, const std::string& key) const {
    DCR_REQUIRE(access_ == StoreAccess::write, Code::invalid_argument,
                std::string("S3 ") + what + " of '" + key + "' refused: the store " + describe() +
                    " was opened for reading");
    return Status::ok();
  }

  std::string object_name(const std::string& key) const { return "s3://" + where_.bucket + "/" + where_.prefix + key; }

  Request object_request(const std::string& method, const std::string& key, const Params& query,
                         const uint8_t* body = nullptr, size_t bytes = 0) const {
    Request r{method, "/" + where_.bucket + "/" + uri_encode(where_.prefix + key, true), canonical_query(query), body,
              bytes, object_name(key)};
    return r;
  }

  Request bucket_request(const std::string& method, const Params& query, const std::string& name) const {
    Request r{method, "/" + where_.bucket, canonical_query(query), nullptr, 0, name};
    r.body_is = "the answer";
    return r;
  }

  Status create_bucket() {
    const std::string config = where_.region == "us-east-1" ? "" :
        "<CreateBucketConfiguration><LocationConstraint>" + where_.region +
        "</LocationConstraint></CreateBucketConfiguration>";
    Request create = bucket_request("PUT", {}, "s3://" + where_.bucket);
    create.body = reinterpret_cast<const uint8_t*>(config.data());
    create.bytes = config.size();
    Response r;
    DCR_TRY(exchange(create, {200, 409}, &r));
    s3::ErrorDoc error;
    const bool ours =
        r.code == 200 || (s3::parse_error(r.text(), &error).is_ok() && error.code == "BucketAlreadyOwnedByYou");
    DCR_REQUIRE(ours, Code::io_error, http_error(create, r).message());
    return Status::ok();
  }

  Status no_bucket() const {
    return Status(Code::not_found, "S3 bucket '" + where_.bucket + "' does not exist at " + where_.endpoint +
                                       " (a store opened for reading never creates it: check the URL, or start the "
                                       "publisher, which creates it)");
  }

  // A 404 must be S3's own: NoSuchBucket is an error, any other S3 error code an absent object,
  // and an answer that is no S3 error document (a web server's page) is refused by name.
  Status check_absent(const Request& request, const Response& r) const {
    if (r.code != 404) return Status::ok();
    s3::ErrorDoc error;
    DCR_TRY(not_s3(request, r, s3::parse_error(r.text(), &error)));
    if (error.code != "NoSuchBucket") return Status::ok();
    if (access_ == StoreAccess::read) return no_bucket();
    return Status(Code::not_found, "S3 " + request.method + " " + request.name + ": bucket '" + where_.bucket +
                                       "' does not exist at " + where_.endpoint + " (deleted while in use?)");
  }

  // `parsed` is the parse of an answer's body; its failure names the request and the endpoint.
  Status not_s3(const Request& request, const Response& r, const Status& parsed) const {
    if (parsed.is_ok()) return parsed;
    return Status(parsed.code(), "S3 " + request.method + " " + request.name + " (" + where_.endpoint + "): HTTP " +
                                     std::to_string(r.code) + ": " + parsed.message() + "; is " + where_.endpoint +
                                     " an S3 service (AWS_ENDPOINT_URL)?");
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
    return not_s3(request, r, s3::parse_upload_id(r.text(), upload_id));
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
    s3::ErrorDoc error;
    if (s3::parse_error(r.text(), &error).is_ok()) return http_error(request, r);
    return not_s3(request, r, s3::parse_complete(r.text()));
  }

  // Best effort, one attempt (the upload already failed, maybe after timeout_s): an upload left
  // behind costs storage, not correctness.
  void abort_upload(const std::string& key, const std::string& upload_id) {
    Response r;
    perform(object_request("DELETE", key, {{"uploadId", upload_id}}), kMaxConnectMs / 1000.0, false, &r);
  }

  // ---- listing

  // One ListObjectsV2 page; *token becomes the next page's continuation token ("" after the last).
  Status list_page(const std::string& prefix, std::string* token, std::vector<std::string>* keys) {
    Params query = {{"list-type", "2"}, {"prefix", where_.prefix + prefix}};
    if (!token->empty()) query.push_back({"continuation-token", *token});
    const Request request =
        bucket_request("GET", query, "s3://" + where_.bucket + " listing '" + where_.prefix + prefix + "'");
    Response r;
    DCR_TRY(exchange(request, {200}, &r));
    s3::ListPage page;
    DCR_TRY(not_s3(request, r, s3::parse_list_page(r.text(), &page)));
    for (const std::string& key : page.keys) {
      DCR_REQUIRE(key.compare(0, where_.prefix.size(), where_.prefix) == 0, Code::corrupt,
                  "S3 GET " + request.name + ": listed key '" + key + "' is outside the prefix '" + where_.prefix +
                      "'");
      keys->push_back(key.substr(where_.prefix.size()));
    }
    *token = page.next_token;
    return Status::ok();
  }

  // After each page: a continuation token answered twice, two truncated pages in a row adding no
  // key, or more keys than max_listed_keys is a listing that would never end.
  Status check_paging(const std::string& prefix, const std::string& token, size_t added, size_t total, Paging* p) {
    ++p->pages;
    p->empty_in_a_row = token.empty() || added > 0 ? 0 : p->empty_in_a_row + 1;
    const std::string what = "S3 listing '" + where_.prefix + prefix + "' of s3://" + where_.bucket + " (" +
                             where_.endpoint + "), page " + std::to_string(p->pages) + " (" + std::to_string(total) +
                             " keys so far): ";
    const std::string why = "; a listing that would never end: is " + where_.endpoint + " an S3 service?";
    DCR_REQUIRE(token.empty() || p->tokens.insert(token).second, Code::io_error,
                what + "the server answered the continuation token " + shown(token) + " a second time" + why);
    DCR_REQUIRE(p->empty_in_a_row < 2, Code::io_error,
                what + "two truncated pages in a row added no key (token " + shown(token) + ")" + why);
    DCR_REQUIRE(total <= options_.max_listed_keys, Code::io_error,
                what + "more than " + std::to_string(options_.max_listed_keys) + " keys (token " + shown(token) +
                    ")" + why);
    return Status::ok();
  }

  // ---- requests, retried

  Status exchange(const Request& request, std::initializer_list<long> accept) {
    Response r;
    return exchange(request, accept, &r);
  }

  // Sends `request` until it gets an answer that is not transient or timeout_s has passed (each
  // attempt bounded by what is left of it); an answer whose code is not in `accept` is an error.
  // A connection an earlier answer left unusable (bytes past its body) fails the next request on
  // it: a request that fails that way on a reused connection is sent once more on a new one.
  Status exchange(const Request& request, std::initializer_list<long> accept, Response* r) {
    const Clock::time_point start = Clock::now();
    double backoff = kFirstBackoffS;
    bool fresh = false;
    std::string failed;  // the last failure that was not a timeout ("503 SlowDown")
    for (int attempt = 1;; ++attempt) {
      const CURLcode code = perform(request, options_.timeout_s - since(start), fresh, r);
      if (r->too_big) return too_big(request, *r);
      if (code == CURLE_OK && !transient(r->code)) return answered(request, accept, *r, attempt, start);
      if (code != CURLE_OK && !transient(code)) {
        if (r->reused && !fresh && options_.timeout_s - since(start) > kMinAttemptS) {
          DCR_LOG(info, "store", "S3 %s %s: %s on a reused connection; sending it again on a new one",
                  request.method.c_str(), request.name.c_str(), curl_error_);
          fresh = true;
          continue;
        }
        return Status(Code::io_error, "S3 " + request.method + " " + request.name + " (" + where_.endpoint +
                                          "): " + curl_error_ + " (curl error " + std::to_string(code) + ")");
      }
      if (code != CURLE_OPERATION_TIMEDOUT) failed = failure(*r, code);
      const double wait = std::min(backoff, options_.timeout_s - since(start) - kMinAttemptS);
      if (wait < 0) return gave_up(request, *r, code, failed, attempt, since(start));
      if (attempt == 1) {  // a long run says why it stalls; the retries that follow stay quiet
        const std::string why = code != CURLE_OK ? std::string(curl_error_) : "HTTP " + std::to_string(r->code);
        DCR_LOG(warn, "store", "S3 %s %s (%s): %s; retrying for up to %g s", request.method.c_str(),
                request.name.c_str(), where_.endpoint.c_str(), why.c_str(), options_.timeout_s);
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(wait));
      backoff = std::min(backoff * 2, kMaxBackoffS);
    }
  }

  Status answered(const Request& request, std::initializer_list<long> accept, const Response& r, int attempt,
                  Clock::time_point start) const {
    if (attempt > 1) {
      DCR_LOG(info, "store", "S3 %s %s: answered after %d attempts (%.1f s)", request.method.c_str(),
              request.name.c_str(), attempt, since(start));
    }
    if (std::find(accept.begin(), accept.end(), r.code) != accept.end()) return Status::ok();
    return http_error(request, r);
  }

  // One attempt of at most left_s; the CURLcode of the transfer (the HTTP code is in r->code).
  CURLcode perform(const Request& request, double left_s, bool fresh, Response* r) {
    *r = Response();
    r->max_bytes = r->limit = request.max_bytes;
    curl_error_[0] = '\0';
    Upload up{request.body, request.bytes, 0};
    std::unique_ptr<curl_slist, SlistFree> headers(make_headers(request));
    set_options(request, left_s, &up, r, headers.get());
    if (fresh) curl_easy_setopt(curl_.get(), CURLOPT_FRESH_CONNECT, 1L);
    const CURLcode code = curl_easy_perform(curl_.get());
    curl_easy_getinfo(curl_.get(), CURLINFO_RESPONSE_CODE, &r->code);
    long connects = 0;
    curl_easy_getinfo(curl_.get(), CURLINFO_NUM_CONNECTS, &connects);
    r->reused = connects == 0;
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

  // The attempt's whole transfer is bounded by left_s (curl takes 0 for "no limit": at least 1 ms).
  void set_options(const Request& request, double left_s, Upload* up, Response* r, curl_slist* headers) {
    CURL* c = curl_.get();
    curl_easy_reset(c);  // keeps the connection for the next request
    const std::string url = where_.endpoint + request.path + (request.query.empty() ? "" : "?" + request.query);
    const long left_ms = std::max(1L, static_cast<long>(left_s * 1000));
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);  // keys may hold "../": never let curl fold them
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4_.c_str());
    curl_easy_setopt(c, CURLOPT_USERNAME, where_.access_key.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, where_.secret_key.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_error_);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, left_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, std::min(left_ms, kMaxConnectMs));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, std::clamp(static_cast<long>(options_.timeout_s), 1L, kMaxStallS));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, read_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
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
  // errors a configuration causes; an answer that is no S3 error document is shown as it begins.
  Status http_error(const Request& request, const Response& r) const {
    s3::ErrorDoc error;
    const Status parsed = s3::parse_error(r.text(), &error);
    const std::string& code = error.code;
    std::string text = "S3 " + request.method + " " + request.name + ": " + std::to_string(r.code);
    if (!code.empty()) text += " " + code;
    if (!error.message.empty()) text += ": " + error.message;
    if (!parsed.is_ok() && !r.body.empty()) text += " from " + where_.endpoint + ", not S3's: " + s3::preview(r.text());
    if (code == "SignatureDoesNotMatch") text += " (is AWS_SECRET_ACCESS_KEY the access key's secret?)";
    if (code == "InvalidAccessKeyId") text += " (AWS_ACCESS_KEY_ID is unknown to " + where_.endpoint + ")";
    if (code == "RequestTimeTooSkewed") text += " (this machine's clock is off)";
    if (r.code == 403 && code.empty()) text += " (access denied: check the credentials and the bucket's owner)";
    return Status(r.code == 404 ? Code::not_found : Code::io_error, text);
  }

  // An object over the caller's limit is corrupt (the caller knew its size); an error answer over
  // 1 MiB is no S3 answer.
  Status too_big(const Request& request, const Response& r) const {
    const std::string head = "S3 " + request.method + " " + request.name + " (" + where_.endpoint + "): ";
    const std::string limit = std::to_string(r.limit);
    const bool declared = r.length >= 0 && static_cast<uint64_t>(r.length) > r.limit;
    if (r.code < 200 || r.code >= 300) {
      return Status(Code::io_error, head + "the HTTP " + std::to_string(r.code) + " answer's body is more than " +
                                        limit + " bytes, not an S3 error document; is " + where_.endpoint +
                                        " an S3 service?");
    }
    if (declared) {
      const std::string size = std::to_string(r.length);
      return Status(Code::corrupt, head + request.body_is + " holds " + size + " bytes, more than the " + limit +
                                       " this read accepts (nothing of it was read)");
    }
    return Status(Code::corrupt, head + request.body_is + " holds more than " + limit +
                                     " bytes, the most this read accepts (an answer without Content-Length, stopped "
                                     "there)");
  }

  // "503 SlowDown", or curl's error ("transfer closed with 10 bytes remaining to read (received
  // 10 of 20 bytes)").
  std::string failure(const Response& r, CURLcode code) const {
    if (code == CURLE_OK) {
      s3::ErrorDoc error;
      s3::parse_error(r.text(), &error);
      return std::to_string(r.code) + (error.code.empty() ? "" : " " + error.code);
    }
    return curl_error_ + std::string(code == CURLE_PARTIAL_FILE ? " (received " + received(r) + ")" : "");
  }

  // A request whose attempts only ran out of time "timed out" (a server trickling or silent); one
  // whose attempts were answered with failures is "unavailable", with the last of them, even when
  // a last attempt, started with little time left, was cut short.
  Status gave_up(const Request& request, const Response& r, CURLcode code, const std::string& failed, int attempts,
                 double elapsed) const {
    const std::string tries = std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts");
    if (code == CURLE_OPERATION_TIMEDOUT && failed.empty()) {
      return Status(Code::unavailable,
                    "S3 " + request.method + " " + request.name + " (" + where_.endpoint + "): timed out: no whole "
                    "answer within timeout_s " + seconds(options_.timeout_s) + " (" + tries + ", the last received " +
                    received(r) + ": " + curl_error_ + "); a slow link or large parts need a larger timeout_s in the "
                    "store URL (s3://bucket/prefix?timeout_s=600)");
    }
    const std::string last =
        code == CURLE_OPERATION_TIMEDOUT ? failed + ", then an attempt cut short by timeout_s" : failure(r, code);
    return Status(Code::unavailable, "S3 " + request.method + " " + request.name + ": " + where_.endpoint +
                                         " unavailable for " + seconds(elapsed) + " (" + tries + ", timeout_s " +
                                         seconds(options_.timeout_s) + "; last: " + last + ")");
  }

  S3Location where_;
  StoreOptions options_;
  StoreAccess access_;
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

Status s3_store(const S3Location& where, const StoreOptions& options, StoreAccess access,
                std::unique_ptr<ObjectStore>* out) {
  static std::once_flag curl_ready;
  std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  DCR_TRY(check_location(where, options));
  S3Location w = where;
  while (!w.endpoint.empty() && w.endpoint.back() == '/') w.endpoint.pop_back();
  CURL* curl = curl_easy_init();
  DCR_REQUIRE(curl != nullptr, Code::internal, "S3 store: curl_easy_init failed");
  auto store = std::make_unique<S3Store>(w, options, access, curl);
  DCR_TRY(store->open_bucket().with_context("opening " + store->describe()));
  *out = std::move(store);
  return Status::ok();
}

}  // namespace dcr
