// Where published versions live between a trainer job and the jobs that follow it: a flat space
// of named objects (keys like "v12/w0-000003.frame") reached by URL.
//   file:///abs/dir         a directory shared by the jobs (keys are paths under it)
//   s3://bucket/prefix      an S3 API (AWS, radosgw, MinIO, ...), see src/store/s3_store.cc
// An object is whole or absent for readers: a put replaces it atomically. Every backend passes
// the same suite (tests/store/test_object_store.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dcr/core/status.h"

namespace dcr {

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // "file:///x" or "s3://bucket/prefix (http://host:port, region r)", for messages.
  virtual std::string describe() const = 0;
  // Stores `bytes` under `key`, replacing any object there. With `durable` the object (and every
  // object put before it) survives a crash once this returns; without, it may be lost in a crash
  // until a later durable put (frames are put lazily, the manifest that lists them durably).
  virtual Status put(const std::string& key, const uint8_t* data, size_t bytes, bool durable) = 0;
  // The object's bytes; *found false (and ok) when there is none.
  virtual Status get(const std::string& key, std::vector<uint8_t>* out, bool* found) = 0;
  // Every key starting with `prefix`, sorted.
  virtual Status list(const std::string& prefix, std::vector<std::string>* keys) = 0;
  // Removes the object; a missing one is fine.
  virtual Status remove(const std::string& key) = 0;

  Status put(const std::string& key, const std::vector<uint8_t>& bytes, bool durable) {
    return put(key, bytes.data(), bytes.size(), durable);
  }
};

// Options every backend may take (from the URL's query, e.g. "s3://b/p?part_mb=8&timeout_s=60").
struct StoreOptions {
  uint64_t part_bytes = uint64_t{64} << 20;  // S3: objects above this go as multipart uploads of this size
  double timeout_s = 120;                    // S3: give up a request retried this long (5xx, timeouts)
};

// Opens the store a URL names (see above). Errors name the URL and what is wrong with it. S3
// credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), else from
// the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials, profile
// AWS_PROFILE or "default"); the endpoint from AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (default
// https://s3.<region>.amazonaws.com), the region from AWS_REGION or AWS_DEFAULT_REGION (us-east-1).
Status open_store(const std::string& url, std::unique_ptr<ObjectStore>* out);

// The backends, for tests and callers that build one directly.
std::unique_ptr<ObjectStore> file_store(const std::string& dir);
struct S3Location {
  std::string endpoint;  // "http://127.0.0.1:7480"
  std::string region = "us-east-1";
  std::string bucket;
  std::string prefix;    // "" or "runs/a/" (ends with '/')
  std::string access_key, secret_key, session_token;
};
Status s3_store(const S3Location& where, const StoreOptions& options, std::unique_ptr<ObjectStore>* out);

}  // namespace dcr
