// Where published versions live between a trainer job and the jobs that follow it: a flat space
// of named objects (keys like "v12/w0-000003.frame") reached by URL.
//   file:///abs/dir         a directory shared by the jobs (keys are paths under it)
//   s3://bucket/prefix      an S3 API (AWS, radosgw, MinIO, ...), see src/store/s3_store.cc
// An object is whole or absent for readers: a put replaces it atomically. Every backend passes
// the same suite (tests/store/test_object_store.cc). A store is opened for reading or for
// writing: one opened for reading (a follow job) writes nothing, not even a missing bucket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

// The most bytes a get without a limit reads (manifests, LAYOUT, CLOSED): a store that answers more
// is refused, not read into memory without end.
constexpr uint64_t kMaxSmallObjectBytes = uint64_t{64} << 20;

// What a store is opened for: `read` never writes (put and remove are refused, nothing is
// created); `write` creates what is missing (an S3 bucket, a directory) as it puts.
enum class StoreAccess { read, write };

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // "file:///x" or "s3://bucket/prefix (http://host:port, region r)", for messages.
  virtual std::string describe() const = 0;
  // Stores `bytes` under `key`, replacing any object there. With `durable` the object (and every
  // object put before it) survives a crash once this returns; without, it may be lost in a crash
  // until a later durable put (frames are put lazily, the manifest that lists them durably).
  virtual Status put(const std::string& key, const uint8_t* data, size_t bytes, bool durable) = 0;
  // The object's bytes; *found false (and ok) when there is none. An object of more than
  // `max_bytes` is Code::corrupt naming it, its size and the limit, and is not read whole.
  virtual Status get(const std::string& key, std::vector<uint8_t>* out, bool* found, uint64_t max_bytes) = 0;
  // Every key starting with `prefix`, sorted.
  virtual Status list(const std::string& prefix, std::vector<std::string>* keys) = 0;
  // Removes the object; a missing one is fine.
  virtual Status remove(const std::string& key) = 0;

  Status put(const std::string& key, const std::vector<uint8_t>& bytes, bool durable) {
    return put(key, bytes.data(), bytes.size(), durable);
  }
  // A metadata object: at most kMaxSmallObjectBytes.
  Status get(const std::string& key, std::vector<uint8_t>* out, bool* found) {
    return get(key, out, found, kMaxSmallObjectBytes);
  }
};

// Options every backend may take (from the URL's query, e.g. "s3://b/p?part_mb=8&timeout_s=60").
struct StoreOptions {
  uint64_t part_bytes = uint64_t{64} << 20;  // S3: objects above this go as multipart uploads of this size
  // S3: the most time one request takes, every attempt and its transfer together (retries of 5xx,
  // 429 and transport errors included); a request not answered whole by then fails naming it.
  double timeout_s = 120;
  // S3: a listing of more keys is refused (a server paging forever); not a URL option, tests lower it.
  uint64_t max_listed_keys = 10000000;
};

// Opens the store a URL names (see above). Errors name the URL and what is wrong with it. S3
// credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), else from
// the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials, profile
// AWS_PROFILE or "default"); the endpoint from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (default
// https://s3.<region>.amazonaws.com), the region from AWS_REGION or AWS_DEFAULT_REGION (us-east-1).
// Opened for reading, a missing S3 bucket is Code::not_found; a missing directory lists nothing.
Status open_store(const std::string& url, StoreAccess access, std::unique_ptr<ObjectStore>* out);

// Requests made through a store (counted_store), for records: a follower's GETs per version, a
// publisher's bytes put.
struct StoreCounts {
  uint64_t gets = 0, lists = 0, puts = 0, removes = 0;
  uint64_t get_bytes = 0, put_bytes = 0;  // object bytes read (found) and written
  StoreCounts since(const StoreCounts& before) const;
};
// `inner` with every request added to *counts (not thread-safe: one store per rank, as the job uses).
std::unique_ptr<ObjectStore> counted_store(std::unique_ptr<ObjectStore> inner, std::shared_ptr<StoreCounts> counts);

// The backends, for tests and callers that build one directly.
std::unique_ptr<ObjectStore> file_store(const std::string& dir, StoreAccess access = StoreAccess::write);
struct S3Location {
  std::string endpoint;  // "http://127.0.0.1:7480"
  std::string region = "us-east-1";
  std::string bucket;
  std::string prefix;    // "" or "runs/a/" (ends with '/')
  std::string access_key, secret_key, session_token;
};
Status s3_store(const S3Location& where, const StoreOptions& options, StoreAccess access,
                std::unique_ptr<ObjectStore>* out);

}  // namespace dcr
