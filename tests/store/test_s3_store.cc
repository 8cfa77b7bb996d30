// The S3 backend's own cases (every backend also passes tests/store/test_object_store.cc):
// multipart uploads, listings past one page, keys that need encoding, a wrong secret key, radosgw
// stopped and restarted under a request, a server that stays down. They need a server in the
// environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, from
// `scripts/s3_server.sh start DIR`) and skip without one; the stop/restart cases also need
// DCR_S3_SERVER_DIR=DIR to drive the script.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "dcr/store/object_store.h"

namespace dcr {
namespace {

using Clock = std::chrono::steady_clock;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A location under the shared test bucket that no other test (or run) uses.
S3Location fresh_location() {
  static std::atomic<int> counter{0};
  S3Location where;
  where.endpoint = env("AWS_ENDPOINT_URL");
  if (!env("AWS_REGION").empty()) where.region = env("AWS_REGION");
  where.bucket = "dcr-test";
  where.prefix = "s3-" + std::to_string(::getpid()) + "-" +
                 std::to_string(Clock::now().time_since_epoch().count() % 1000000007) + "-" +
                 std::to_string(counter++) + "/";
  where.access_key = env("AWS_ACCESS_KEY_ID");
  where.secret_key = env("AWS_SECRET_ACCESS_KEY");
  where.session_token = env("AWS_SESSION_TOKEN");
  return where;
}

std::vector<uint8_t> pattern(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> out(bytes);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    out[i] = static_cast<uint8_t>(x);
  }
  return out;
}

// Runs scripts/s3_server.sh ACTION DIR; true when it succeeded.
bool server(const std::string& action) {
  const std::string command =
      std::string(DCR_SOURCE_DIR) + "/scripts/s3_server.sh " + action + " '" + env("DCR_S3_SERVER_DIR") + "'";
  return std::system(command.c_str()) == 0;
}

// Held while a test stops and starts radosgw: ctest -j runs the cases as separate processes.
class RestartLock {
 public:
  RestartLock()
      : fd_(::open((env("DCR_S3_SERVER_DIR") + "/test-restart.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600)) {
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~RestartLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_;
};

// A TCP port on 127.0.0.1 where nothing listens (bound, then closed).
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A one-thread HTTP server on 127.0.0.1 giving the answers in turn (the last one repeats), for what
// a real server cannot be made to do: 5xx, 429, a 400 with a message.
class FakeServer {
 public:
  explicit FakeServer(std::vector<std::pair<int, std::string>> answers) : answers_(std::move(answers)) {
    listen_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(listen_, 8);
    ::getsockname(listen_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeServer() {
    stop_ = true;
    thread_.join();
    ::close(listen_);
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return served_; }

 private:
  bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 20) > 0;
  }
  void serve() {
    while (!stop_) {
      if (!readable(listen_)) continue;
      const int fd = ::accept(listen_, nullptr, nullptr);
      while (!stop_ && answer_one(fd)) {
      }
      ::close(fd);
    }
  }
  // Reads one request (headers and Content-Length body) and answers it; false when the client left.
  bool answer_one(int fd) {
    std::string in;
    char buffer[4096];
    while (in.find("\r\n\r\n") == std::string::npos) {
      if (stop_) return false;
      if (!readable(fd)) continue;
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return false;
      in.append(buffer, static_cast<size_t>(n));
    }
    if (in.find("Expect: 100-continue") != std::string::npos) {  // curl asks before a PUT's body
      const std::string go = "HTTP/1.1 100 Continue\r\n\r\n";
      if (::write(fd, go.data(), go.size()) != static_cast<ssize_t>(go.size())) return false;
    }
    const size_t at = in.find("Content-Length: ");
    const size_t body = at == std::string::npos ? 0 : std::stoul(in.substr(at + 16));
    while (in.size() < in.find("\r\n\r\n") + 4 + body) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return false;
      in.append(buffer, static_cast<size_t>(n));
    }
    const auto& [code, text] = answers_[std::min<size_t>(served_++, answers_.size() - 1)];
    const std::string out =
        "HTTP/1.1 " + std::to_string(code) + " X\r\nContent-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text;
    return ::write(fd, out.data(), out.size()) == static_cast<ssize_t>(out.size());
  }

  std::vector<std::pair<int, std::string>> answers_;
  int listen_ = -1, port_ = 0;
  std::atomic<int> served_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

S3Location fake_location(const FakeServer& server) {
  S3Location where;
  where.endpoint = server.endpoint();
  where.bucket = "dcr-test";
  where.access_key = "a";
  where.secret_key = "b";
  return where;
}

class S3StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (env("AWS_ENDPOINT_URL").empty()) {
      GTEST_SKIP() << "no S3 server (set AWS_ENDPOINT_URL and credentials, e.g. from scripts/s3_server.sh start DIR)";
    }
  }
  // Whether the test may stop and start the server's radosgw.
  static bool may_restart() { return !env("DCR_S3_SERVER_DIR").empty(); }
  std::unique_ptr<ObjectStore> open(const StoreOptions& options, S3Location where = fresh_location()) {
    std::unique_ptr<ObjectStore> store;
    const Status st = s3_store(where, options, &store);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return store;
  }
};

TEST_F(S3StoreTest, DescribeNamesBucketPrefixEndpointAndRegion) {
  S3Location where = fresh_location();
  std::unique_ptr<ObjectStore> store = open(StoreOptions(), where);
  ASSERT_NE(store, nullptr);
  where.prefix.pop_back();
  EXPECT_EQ(store->describe(),
            "s3://dcr-test/" + where.prefix + " (" + where.endpoint + ", region " + where.region + ")");
}

TEST_F(S3StoreTest, MultipartUploadReadsBackByteExact) {
  StoreOptions options;
  options.part_bytes = uint64_t{5} << 20;
  std::unique_ptr<ObjectStore> store = open(options);
  ASSERT_NE(store, nullptr);
  const std::vector<uint8_t> big = pattern((size_t{12} << 20) + 12345, 1);  // 3 parts, the last short
  const Status st = store->put("v1/w0-000000.frame", big, true);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  std::vector<uint8_t> back;
  bool found = false;
  ASSERT_TRUE(store->get("v1/w0-000000.frame", &back, &found).is_ok());
  EXPECT_TRUE(found);
  EXPECT_TRUE(back == big) << "read back " << back.size() << " bytes of " << big.size();
  // Exactly one part's size still goes as one PUT, and replaces a multipart object.
  const std::vector<uint8_t> edge = pattern(options.part_bytes, 2);
  ASSERT_TRUE(store->put("v1/w0-000000.frame", edge, true).is_ok());
  ASSERT_TRUE(store->get("v1/w0-000000.frame", &back, &found).is_ok());
  EXPECT_TRUE(back == edge);
  std::vector<std::string> keys;
  ASSERT_TRUE(store->list("", &keys).is_ok());
  EXPECT_EQ(keys, std::vector<std::string>{"v1/w0-000000.frame"});
}

// S3 answers at most 1000 keys a page: 1100 keys take two, joined in order.
TEST_F(S3StoreTest, ListingFollowsContinuationTokensPastAThousandKeys) {
  const S3Location where = fresh_location();
  const int kKeys = 1100, kThreads = 8;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::unique_ptr<ObjectStore> store;
      if (!s3_store(where, StoreOptions(), &store).is_ok()) return void(++failures);
      for (int i = t; i < kKeys; i += kThreads) {
        const std::string key = (i % 2 ? "b/" : "a/") + std::to_string(100000 + i);
        if (!store->put(key, std::vector<uint8_t>{static_cast<uint8_t>(i)}, false).is_ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  std::unique_ptr<ObjectStore> store = open(StoreOptions(), where);
  std::vector<std::string> keys;
  ASSERT_TRUE(store->list("", &keys).is_ok());
  ASSERT_EQ(keys.size(), size_t(kKeys));
  EXPECT_EQ(keys.front(), "a/100000");
  EXPECT_EQ(keys[kKeys / 2], "b/100001");
  EXPECT_EQ(keys.back(), "b/101099");
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  ASSERT_TRUE(store->list("b/1010", &keys).is_ok());
  EXPECT_EQ(keys.size(), 50u);
}

// Keys are URL-encoded in requests (but for '/') and XML-decoded in listings.
TEST_F(S3StoreTest, KeysThatNeedEncodingRoundTrip) {
  std::unique_ptr<ObjectStore> store = open(StoreOptions());
  ASSERT_NE(store, nullptr);
  const std::vector<std::string> names = {"a b+c&d=e?f#g%h~i", "dir/<x>\"y'", "dots/../up", "\xc3\xbc-utf8", "z*!$"};
  for (size_t i = 0; i < names.size(); ++i) {
    const Status st = store->put(names[i], pattern(10 + i, 3 + i), false);
    ASSERT_TRUE(st.is_ok()) << names[i] << ": " << st.to_string();
  }
  std::vector<std::string> keys;
  ASSERT_TRUE(store->list("", &keys).is_ok());
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(keys, sorted);
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<uint8_t> back;
    bool found = false;
    ASSERT_TRUE(store->get(names[i], &back, &found).is_ok());
    EXPECT_TRUE(found && back == pattern(10 + i, 3 + i)) << names[i];
  }
  ASSERT_TRUE(store->remove(names[0]).is_ok());
  ASSERT_TRUE(store->list("a ", &keys).is_ok());
  EXPECT_TRUE(keys.empty());
}

TEST_F(S3StoreTest, AWrongSecretKeyIsAClear403) {
  S3Location where = fresh_location();
  where.secret_key += "-wrong";
  std::unique_ptr<ObjectStore> store;
  const Status st = s3_store(where, StoreOptions(), &store);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(store, nullptr);
  EXPECT_NE(st.message().find("S3 GET s3://dcr-test: 403 SignatureDoesNotMatch"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("AWS_SECRET_ACCESS_KEY"), std::string::npos) << st.message();
}

TEST_F(S3StoreTest, AnUnknownAccessKeyIsAClear403) {
  S3Location where = fresh_location();
  where.access_key = "NOSUCHACCESSKEY";
  std::unique_ptr<ObjectStore> store;
  const Status st = s3_store(where, StoreOptions(), &store);
  EXPECT_NE(st.message().find("403 InvalidAccessKeyId"), std::string::npos) << st.message();
}

// radosgw stopped before a put and started 1.5 s into it: the put retries through.
TEST_F(S3StoreTest, ARequestRidesOutARadosgwRestart) {
  if (!may_restart()) GTEST_SKIP() << "set DCR_S3_SERVER_DIR (scripts/s3_server.sh's DIR) to stop and restart radosgw";
  StoreOptions options;
  options.timeout_s = 60;
  std::unique_ptr<ObjectStore> store = open(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->put("before", pattern(1000, 5), true).is_ok());
  RestartLock lock;
  ASSERT_TRUE(server("stop-rgw"));
  std::atomic<bool> restarted{false};
  std::thread restart([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    restarted = server("start-rgw");
  });
  const Clock::time_point start = Clock::now();
  const Status put = store->put("during", pattern(100000, 6), true);
  const double took = seconds_since(start);
  restart.join();
  ASSERT_TRUE(restarted.load());
  ASSERT_TRUE(put.is_ok()) << put.to_string();
  EXPECT_GE(took, 1.4);
  std::vector<uint8_t> back;
  bool found = false;
  ASSERT_TRUE(store->get("before", &back, &found).is_ok());
  EXPECT_TRUE(found && back == pattern(1000, 5));
  ASSERT_TRUE(store->get("during", &back, &found).is_ok());
  EXPECT_TRUE(found && back == pattern(100000, 6));
}

// radosgw stays down past a short timeout: "unavailable", naming the endpoint, within the timeout.
TEST_F(S3StoreTest, AStoppedServerIsUnavailableAfterTheTimeout) {
  if (!may_restart()) GTEST_SKIP() << "set DCR_S3_SERVER_DIR (scripts/s3_server.sh's DIR) to stop and restart radosgw";
  StoreOptions options;
  options.timeout_s = 1.5;
  std::unique_ptr<ObjectStore> store = open(options);
  ASSERT_NE(store, nullptr);
  RestartLock lock;
  ASSERT_TRUE(server("stop-rgw"));
  const Clock::time_point start = Clock::now();
  std::vector<uint8_t> back;
  bool found = false;
  const Status st = store->get("v1/MANIFEST", &back, &found);
  const double took = seconds_since(start);
  ASSERT_TRUE(server("start-rgw"));
  EXPECT_EQ(st.code(), Code::unavailable) << st.to_string();
  EXPECT_NE(st.message().find("S3 GET s3://dcr-test/"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(env("AWS_ENDPOINT_URL") + " unavailable for"), std::string::npos) << st.message();
  EXPECT_GE(took, 1.4);
  EXPECT_LT(took, 4.0);
}

// Needs no server: nothing listens on the endpoint's port.
TEST(S3StoreNoServer, ANobodyThereEndpointIsUnavailableNamingIt) {
  S3Location where;
  where.endpoint = "http://127.0.0.1:" + std::to_string(closed_port());
  where.bucket = "dcr-test";
  where.access_key = "a";
  where.secret_key = "b";
  StoreOptions options;
  options.timeout_s = 0.5;
  std::unique_ptr<ObjectStore> store;
  const Clock::time_point start = Clock::now();
  const Status st = s3_store(where, options, &store);
  EXPECT_EQ(st.code(), Code::unavailable) << st.to_string();
  EXPECT_NE(st.message().find(where.endpoint + " unavailable for"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("Couldn't connect"), std::string::npos) << st.message();
  EXPECT_LT(seconds_since(start), 3.0);
}

const char kListing[] = "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";

TEST(S3StoreNoServer, ServerErrorsAndThrottlingAreRetried) {
  FakeServer server({{200, kListing},
                     {503, "<Error><Code>SlowDown</Code></Error>"},
                     {429, "<Error><Code>TooManyRequests</Code></Error>"},
                     {500, "<Error><Code>InternalError</Code></Error>"},
                     {200, "payload"}});
  std::unique_ptr<ObjectStore> store;
  ASSERT_TRUE(s3_store(fake_location(server), StoreOptions(), &store).is_ok());
  std::vector<uint8_t> back;
  bool found = false;
  const Status st = store->get("k", &back, &found);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_TRUE(found);
  EXPECT_EQ(std::string(back.begin(), back.end()), "payload");
  EXPECT_EQ(server.requests(), 5);
}

TEST(S3StoreNoServer, ClientErrorsFailAtOnceWithS3sCodeAndMessage) {
  const char* error = "<Error><Code>InvalidArgument</Code><Message>part &lt; 5 MiB &amp; &#x263A;</Message></Error>";
  FakeServer server({{200, kListing}, {400, error}});
  std::unique_ptr<ObjectStore> store;
  ASSERT_TRUE(s3_store(fake_location(server), StoreOptions(), &store).is_ok());
  const Status st = store->put("v1/MANIFEST", std::vector<uint8_t>{1, 2}, true);
  EXPECT_EQ(st.message(), "S3 PUT s3://dcr-test/v1/MANIFEST: 400 InvalidArgument: part < 5 MiB & \xe2\x98\xba");
  EXPECT_EQ(server.requests(), 2);
}

// A part refused ends the upload: the error names the part, and the upload is aborted.
TEST(S3StoreNoServer, AFailedMultipartUploadIsAborted) {
  FakeServer server({{200, kListing},
                     {200, "<InitiateMultipartUploadResult><UploadId>u-1</UploadId></InitiateMultipartUploadResult>"},
                     {403, "<Error><Code>AccessDenied</Code></Error>"},
                     {204, ""}});
  StoreOptions options;
  options.part_bytes = uint64_t{5} << 20;
  std::unique_ptr<ObjectStore> store;
  ASSERT_TRUE(s3_store(fake_location(server), options, &store).is_ok());
  const Status st = store->put("big", pattern(6 << 20, 7), false);
  EXPECT_EQ(st.message(), "part 1: S3 PUT s3://dcr-test/big: 403 AccessDenied");
  EXPECT_EQ(server.requests(), 4);
}

// A server that keeps failing is given up after timeout_s: "unavailable", with its last answer.
TEST(S3StoreNoServer, AServerThatKeepsFailingIsUnavailableAfterTheTimeout) {
  FakeServer server({{200, kListing}, {503, "<Error><Code>ServiceUnavailable</Code></Error>"}});
  StoreOptions options;
  options.timeout_s = 0.5;
  std::unique_ptr<ObjectStore> store;
  ASSERT_TRUE(s3_store(fake_location(server), options, &store).is_ok());
  const Status st = store->remove("k");
  EXPECT_EQ(st.code(), Code::unavailable);
  EXPECT_NE(st.message().find(server.endpoint() + " unavailable for 0.5 s"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("last: 503 ServiceUnavailable"), std::string::npos) << st.message();
}

TEST(S3StoreNoServer, BadLocationsAndOptionsAreRefused) {
  S3Location where;
  where.endpoint = "127.0.0.1:7480";
  where.bucket = "dcr-test";
  where.access_key = "a";
  where.secret_key = "b";
  std::unique_ptr<ObjectStore> store;
  EXPECT_NE(s3_store(where, StoreOptions(), &store).message().find("is not an http:// or https:// URL"),
            std::string::npos);
  where.endpoint = "http://127.0.0.1:7480";
  where.prefix = "runs/a";
  EXPECT_NE(s3_store(where, StoreOptions(), &store).message().find("must be empty or end with '/'"), std::string::npos);
  where.prefix = "";
  StoreOptions small;
  small.part_bytes = 1 << 20;
  EXPECT_NE(s3_store(where, small, &store).message().find("outside S3's 5 MiB to 5 GiB"), std::string::npos);
}

}  // namespace
}  // namespace dcr
