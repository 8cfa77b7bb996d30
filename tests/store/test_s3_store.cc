// The S3 backend's own cases (every backend also passes tests/store/test_object_store.cc):
// multipart uploads, listings past one page, keys that need encoding, a wrong secret key, radosgw
// stopped and restarted under a request, a server that stays down. They need a server in the
// environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, from
// `scripts/s3_server.sh start DIR`) and skip without one; the stop/restart cases also need
// DCR_S3_SERVER_DIR=DIR to drive the script. The S3StoreNoServer and S3StoreHostile cases need no
// server and always run: a scripted fake server (FakeServer) gives 5xx, 429, and a hostile
// server's answers (pages without end, trickled, endless, cut or HTML bodies, bytes past a body,
// a missing bucket).
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
#include <mutex>
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

// How a FakeServer sends an answer's body.
enum class Shape {
  whole,     // Content-Length, then the body
  trickle,   // Content-Length, then the body at 2 bytes/s
  endless,   // chunked, bytes without end
  huge,      // Content-Length 10^12, then bytes without end
  extra,     // the body, then (a moment later) bytes past it that no request asked for
  cut,       // Content-Length twice the body, the body, then the connection closed
};

struct Answer {
  int code;
  std::string body;  // "%n" becomes the request's number (1, 2, ...)
  Shape shape = Shape::whole;
};

// A one-thread HTTP server on 127.0.0.1 giving the answers in turn (the last one repeats), for what
// a real server cannot be made to do: 5xx, 429, a 400 with a message, and a hostile server's
// answers (see Shape). It keeps each request's first line ("GET /dcr-test?list-type=2...").
class FakeServer {
 public:
  explicit FakeServer(std::vector<Answer> answers) : answers_(std::move(answers)) {
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
  std::vector<std::string> lines() const {
    std::lock_guard<std::mutex> hold(mutex_);
    return lines_;
  }

 private:
  bool ready(int fd, short events) {
    pollfd p{fd, events, 0};
    return ::poll(&p, 1, 20) > 0;
  }
  void serve() {
    while (!stop_) {
      if (!ready(listen_, POLLIN)) continue;
      const int fd = ::accept(listen_, nullptr, nullptr);
      while (!stop_ && answer_one(fd)) {
      }
      ::close(fd);
    }
  }
  // All of `text`, unless the client leaves or the server stops (no SIGPIPE: MSG_NOSIGNAL).
  bool send_all(int fd, const std::string& text) {
    for (size_t at = 0; at < text.size();) {
      if (stop_) return false;
      if (!ready(fd, POLLOUT)) continue;
      const ssize_t n = ::send(fd, text.data() + at, text.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<size_t>(n);
    }
    return true;
  }
  bool pause_ms(int ms) {
    for (int i = 0; i < ms / 10 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return !stop_;
  }
  // Reads one request (headers and Content-Length body) and answers it; false when the client left
  // (or the answer closes the connection).
  bool answer_one(int fd) {
    std::string in;
    char buffer[4096];
    while (in.find("\r\n\r\n") == std::string::npos) {
      if (stop_) return false;
      if (!ready(fd, POLLIN)) continue;
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return false;
      in.append(buffer, static_cast<size_t>(n));
    }
    if (in.find("Expect: 100-continue") != std::string::npos) {  // curl asks before a PUT's body
      if (!send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n")) return false;
    }
    const size_t at = in.find("Content-Length: ");
    const size_t body = at == std::string::npos ? 0 : std::stoul(in.substr(at + 16));
    while (in.size() < in.find("\r\n\r\n") + 4 + body) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) return false;
      in.append(buffer, static_cast<size_t>(n));
    }
    {
      std::lock_guard<std::mutex> hold(mutex_);
      lines_.push_back(in.substr(0, in.find("\r\n")));
    }
    const int number = ++served_;
    const Answer& a = answers_[std::min<size_t>(number - 1, answers_.size() - 1)];
    std::string text = a.body;
    for (size_t n = text.find("%n"); n != std::string::npos; n = text.find("%n", n)) {
      text.replace(n, 2, std::to_string(number));
    }
    return respond(fd, a, text);
  }
  bool respond(int fd, const Answer& a, const std::string& body) {
    const std::string status =
        "HTTP/1.1 " + std::to_string(a.code) + " X\r\nETag: \"etag-" + std::to_string(served_) + "\"\r\n";
    const auto length = [](size_t n) { return "Content-Length: " + std::to_string(n) + "\r\n\r\n"; };
    switch (a.shape) {
      case Shape::whole:
        return send_all(fd, status + length(body.size()) + body);
      case Shape::trickle:
        if (!send_all(fd, status + length(body.size()))) return false;
        for (char c : body) {
          if (!pause_ms(500) || !send_all(fd, std::string(1, c))) return false;
        }
        return true;
      case Shape::endless:
        if (!send_all(fd, status + "Transfer-Encoding: chunked\r\n\r\n")) return false;
        while (send_all(fd, "1000\r\n" + std::string(4096, 'x') + "\r\n")) {
        }
        return false;
      case Shape::huge:
        if (!send_all(fd, status + length(1000000000000))) return false;
        while (send_all(fd, std::string(4096, 'x'))) {
        }
        return false;
      case Shape::extra:  // a later packet: curl has handed the connection back by then
        return send_all(fd, status + length(body.size()) + body) && pause_ms(100) &&
               send_all(fd, "EXTRA BYTES PAST THE BODY\r\n");
      case Shape::cut:
        send_all(fd, status + length(body.size() * 2) + body);
        return false;
    }
    return false;
  }

  std::vector<Answer> answers_;
  int listen_ = -1, port_ = 0;
  std::atomic<int> served_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

bool has(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

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
    const Status st = s3_store(where, options, StoreAccess::write, &store);
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
      if (!s3_store(where, StoreOptions(), StoreAccess::write, &store).is_ok()) return void(++failures);
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

// A store opened for reading on a bucket that is not there: not_found, and the bucket stays absent.
TEST_F(S3StoreTest, AMissingBucketOpenedForReadingIsNotFoundAndNotMade) {
  S3Location where = fresh_location();
  where.bucket = "dcr-absent-" + std::to_string(::getpid());
  for (int i = 0; i < 2; ++i) {
    std::unique_ptr<ObjectStore> store;
    const Status st = s3_store(where, StoreOptions(), StoreAccess::read, &store);
    std::printf("%s\n", st.to_string().c_str());
    EXPECT_EQ(st.code(), Code::not_found) << st.to_string();
    EXPECT_NE(st.message().find("S3 bucket '" + where.bucket + "' does not exist at " + where.endpoint),
              std::string::npos)
        << st.message();
  }
}

TEST_F(S3StoreTest, AWrongSecretKeyIsAClear403) {
  S3Location where = fresh_location();
  where.secret_key += "-wrong";
  std::unique_ptr<ObjectStore> store;
  const Status st = s3_store(where, StoreOptions(), StoreAccess::write, &store);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(store, nullptr);
  EXPECT_NE(st.message().find("S3 GET s3://dcr-test: 403 SignatureDoesNotMatch"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("AWS_SECRET_ACCESS_KEY"), std::string::npos) << st.message();
}

TEST_F(S3StoreTest, AnUnknownAccessKeyIsAClear403) {
  S3Location where = fresh_location();
  where.access_key = "NOSUCHACCESSKEY";
  std::unique_ptr<ObjectStore> store;
  const Status st = s3_store(where, StoreOptions(), StoreAccess::write, &store);
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
  const Status st = s3_store(where, options, StoreAccess::write, &store);
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
  ASSERT_TRUE(s3_store(fake_location(server), StoreOptions(), StoreAccess::write, &store).is_ok());
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
  ASSERT_TRUE(s3_store(fake_location(server), StoreOptions(), StoreAccess::write, &store).is_ok());
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
  ASSERT_TRUE(s3_store(fake_location(server), options, StoreAccess::write, &store).is_ok());
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
  ASSERT_TRUE(s3_store(fake_location(server), options, StoreAccess::write, &store).is_ok());
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
  EXPECT_TRUE(has(s3_store(where, StoreOptions(), StoreAccess::write, &store), "is not an http:// or https:// URL"));
  where.endpoint = "http://127.0.0.1:7480";
  where.prefix = "runs/a";
  EXPECT_TRUE(has(s3_store(where, StoreOptions(), StoreAccess::write, &store), "must be empty or end with '/'"));
  where.prefix = "";
  StoreOptions small;
  small.part_bytes = 1 << 20;
  EXPECT_TRUE(has(s3_store(where, small, StoreAccess::write, &store), "outside S3's 5 MiB to 5 GiB"));
}

// ---- a hostile server (tests/hostile/hostile_s3.py does the same to whole jobs): every case
// needs no real server, ends in an error naming what went wrong (or the right result), and is
// bounded in time: each asserts the call returned within 10 s (timeout_s is 2 s or less).

constexpr double kHangBoundS = 10;

std::unique_ptr<ObjectStore> open_fake(const FakeServer& server, StoreOptions options = StoreOptions(),
                                       StoreAccess access = StoreAccess::write) {
  std::unique_ptr<ObjectStore> store;
  const Status st = s3_store(fake_location(server), options, access, &store);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return store;
}

std::string page(const std::string& token, const std::string& keys) {
  return "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>" + token +
         "</NextContinuationToken>" + keys + "</ListBucketResult>";
}

// 1. A server answering the same continuation token every time is stopped at the second page.
TEST(S3StoreHostile, ARepeatedContinuationTokenEndsTheListing) {
  FakeServer server({{200, kListing}, {200, page("same-token", "<Contents><Key>k%n</Key></Contents>")}});
  std::unique_ptr<ObjectStore> store = open_fake(server);
  ASSERT_NE(store, nullptr);
  std::vector<std::string> keys;
  const Clock::time_point start = Clock::now();
  const Status st = store->list("v1/", &keys);
  std::printf("listing: %s\n", st.to_string().c_str());
  EXPECT_LT(seconds_since(start), kHangBoundS);
  EXPECT_EQ(st.code(), Code::io_error);
  EXPECT_TRUE(has(st, "S3 listing 'v1/' of s3://dcr-test (" + server.endpoint() + "), page 2 (2 keys so far)"))
      << st.message();
  EXPECT_TRUE(has(st, "continuation token 'same-token' a second time")) << st.message();
  EXPECT_EQ(server.requests(), 3);
}

// Tokens that change but pages that add nothing: stopped at the second empty page in a row.
TEST(S3StoreHostile, TruncatedPagesAddingNoKeyEndTheListing) {
  FakeServer server({{200, kListing}, {200, page("token-%n", "")}});
  std::unique_ptr<ObjectStore> store = open_fake(server);
  ASSERT_NE(store, nullptr);
  std::vector<std::string> keys;
  const Clock::time_point start = Clock::now();
  const Status st = store->list("", &keys);
  std::printf("listing: %s\n", st.to_string().c_str());
  EXPECT_LT(seconds_since(start), kHangBoundS);
  EXPECT_TRUE(has(st, "two truncated pages in a row added no key (token 'token-3')")) << st.message();
  EXPECT_EQ(server.requests(), 3);
}

// New tokens and new keys on every page, without end: stopped past max_listed_keys.
TEST(S3StoreHostile, AListingPastMaxListedKeysEnds) {
  FakeServer server({{200, kListing}, {200, page("token-%n", "<Contents><Key>k%n</Key></Contents>")}});
  StoreOptions options;
  options.max_listed_keys = 50;
  std::unique_ptr<ObjectStore> store = open_fake(server, options);
  ASSERT_NE(store, nullptr);
  std::vector<std::string> keys;
  const Clock::time_point start = Clock::now();
  const Status st = store->list("", &keys);
  std::printf("listing: %s\n", st.to_string().c_str());
  EXPECT_LT(seconds_since(start), kHangBoundS);
  EXPECT_TRUE(has(st, "page 51 (51 keys so far): more than 50 keys")) << st.message();
}

// 2. A body trickled at 2 bytes/s: the request ends after timeout_s, saying it timed out.
TEST(S3StoreHostile, ATrickledBodyTimesOutWithinTimeoutS) {
  FakeServer server({{200, kListing}, {200, std::string(100, 'b'), Shape::trickle}});
  StoreOptions options;
  options.timeout_s = 2;
  std::unique_ptr<ObjectStore> store = open_fake(server, options);
  ASSERT_NE(store, nullptr);
  std::vector<uint8_t> back;
  bool found = false;
  const Clock::time_point start = Clock::now();
  const Status st = store->get("v1/w0-000000.frame", &back, &found, 100);
  const double took = seconds_since(start);
  std::printf("after %.1f s: %s\n", took, st.to_string().c_str());
  EXPECT_LT(took, kHangBoundS);
  EXPECT_EQ(st.code(), Code::unavailable);
  EXPECT_TRUE(has(st, "S3 GET s3://dcr-test/v1/w0-000000.frame (" + server.endpoint() + "): timed out"))
      << st.message();
  EXPECT_TRUE(has(st, "within timeout_s 2.0 s")) << st.message();
  EXPECT_TRUE(has(st, "the last received ")) << st.message();  // "... 3 of 100 bytes"
  EXPECT_TRUE(has(st, " of 100 bytes")) << st.message();
}

// A 503 answered slowly, again and again: every attempt and the wait between them share timeout_s.
TEST(S3StoreHostile, SlowRetriesShareOneTimeout) {
  FakeServer server({{200, kListing}, {503, "<Error><Code>SlowDown</Code></Error>", Shape::trickle}});
  StoreOptions options;
  options.timeout_s = 1.5;
  std::unique_ptr<ObjectStore> store = open_fake(server, options);
  ASSERT_NE(store, nullptr);
  const Clock::time_point start = Clock::now();
  const Status st = store->remove("k");
  std::printf("after %.1f s: %s\n", seconds_since(start), st.to_string().c_str());
  EXPECT_LT(seconds_since(start), kHangBoundS);
  EXPECT_TRUE(has(st, "S3 DELETE s3://dcr-test/k (" + server.endpoint() + "): timed out")) << st.message();
}

// Failures answered, then an attempt cut short by what is left of timeout_s: "unavailable" with the
// last answer, not "timed out" (the server answered; it did not stall).
TEST(S3StoreHostile, AnswersThenACutShortAttemptAreUnavailableNotTimedOut) {
  FakeServer server({{200, kListing},
                     {503, "<Error><Code>SlowDown</Code></Error>"},
                     {503, "<Error><Code>SlowDown</Code></Error>", Shape::trickle}});
  StoreOptions options;
  options.timeout_s = 1;
  std::unique_ptr<ObjectStore> store = open_fake(server, options);
  ASSERT_NE(store, nullptr);
  const Clock::time_point start = Clock::now();
  const Status st = store->put("v1/w0.MANIFEST", std::vector<uint8_t>(217, 1), true);
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_LT(seconds_since(start), kHangBoundS);
  EXPECT_EQ(st.code(), Code::unavailable);
  EXPECT_TRUE(has(st, "S3 PUT s3://dcr-test/v1/w0.MANIFEST: " + server.endpoint() + " unavailable for"))
      << st.message();
  EXPECT_TRUE(has(st, "last: 503 SlowDown, then an attempt cut short by timeout_s)")) << st.message();
}

// 3. An endless body is cut at the caller's limit, naming the object and the limit.
TEST(S3StoreHostile, AnEndlessBodyIsCutAtTheLimit) {
  FakeServer server({{200, kListing}, {200, "", Shape::endless}});
  std::unique_ptr<ObjectStore> store = open_fake(server);
  ASSERT_NE(store, nullptr);
  std::vector<uint8_t> back;
  bool found = false;
  const Clock::time_point start = Clock::now();
  const Status st = store->get("v1/w0-000000.frame", &back, &found, 100000);
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_LT(seconds_since(start), kHangBoundS);
  EXPECT_EQ(st.code(), Code::corrupt);
  EXPECT_TRUE(has(st, "S3 GET s3://dcr-test/v1/w0-000000.frame (" + server.endpoint() +
                          "): the object holds more than 100000 bytes, the most this read accepts"))
      << st.message();
  EXPECT_TRUE(back.empty());
}

// A declared size over the limit is refused before the body is read; a get without a limit
// (metadata) is bounded by kMaxSmallObjectBytes.
TEST(S3StoreHostile, ADeclaredSizeOverTheLimitIsRefusedUnread) {
  FakeServer server({{200, kListing}, {200, "", Shape::huge}});
  std::unique_ptr<ObjectStore> store = open_fake(server);
  ASSERT_NE(store, nullptr);
  std::vector<uint8_t> back;
  bool found = false;
  const Clock::time_point start = Clock::now();
  Status st = store->get("v1/w0-000000.frame", &back, &found, 1000);
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_EQ(st.code(), Code::corrupt);
  EXPECT_TRUE(has(st, "the object holds 1000000000000 bytes, more than the 1000 this read accepts")) << st.message();
  st = store->get("v1/MANIFEST", &back, &found);
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_TRUE(has(st, "S3 GET s3://dcr-test/v1/MANIFEST")) << st.message();
  EXPECT_TRUE(has(st, "more than the " + std::to_string(kMaxSmallObjectBytes) + " this read accepts"))
      << st.message();
  // A listing is bounded too (an endless one is read up to kMaxSmallObjectBytes, then refused).
  FakeServer listing({{200, kListing}, {200, "", Shape::endless}});
  store = open_fake(listing);
  ASSERT_NE(store, nullptr);
  std::vector<std::string> keys;
  st = store->list("", &keys);
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_TRUE(has(st, "S3 GET s3://dcr-test listing '' (" + listing.endpoint() + "): the answer holds more than " +
                          std::to_string(kMaxSmallObjectBytes) + " bytes"))
      << st.message();
  EXPECT_LT(seconds_since(start), kHangBoundS);
}

// A body shorter than its Content-Length (the connection closed): retried, then an error naming it.
TEST(S3StoreHostile, ABodyCutShortIsAnErrorNamingTheObject) {
  FakeServer server({{200, kListing}, {200, "half of it", Shape::cut}});
  StoreOptions options;
  options.timeout_s = 1;
  std::unique_ptr<ObjectStore> store = open_fake(server, options);
  ASSERT_NE(store, nullptr);
  std::vector<uint8_t> back;
  bool found = false;
  const Clock::time_point start = Clock::now();
  const Status st = store->get("v1/LAYOUT", &back, &found);
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_LT(seconds_since(start), kHangBoundS);
  EXPECT_EQ(st.code(), Code::unavailable);
  EXPECT_TRUE(has(st, "S3 GET s3://dcr-test/v1/LAYOUT: " + server.endpoint() + " unavailable")) << st.message();
  EXPECT_TRUE(has(st, "received 10 of 20 bytes")) << st.message();
}

// 4. A web page answered with 200 is no listing: refused at open and on a listing, naming the
// request and the endpoint and showing how the page begins.
const char kHtml[] =
    "<!DOCTYPE html>\n<html>\n  <head><title>Welcome to nginx!</title></head><body>It works</body></html>";

TEST(S3StoreHostile, AnHtmlPageIsNoListing) {
  FakeServer at_open({{200, kHtml}});
  std::unique_ptr<ObjectStore> store;
  const Status st = s3_store(fake_location(at_open), StoreOptions(), StoreAccess::read, &store);
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_EQ(st.code(), Code::io_error);
  EXPECT_TRUE(has(st, "S3 GET s3://dcr-test (" + at_open.endpoint() + "): HTTP 200: the answer is not an S3 "
                      "ListBucketResult document (it begins '<!DOCTYPE html> <html> <head><title>Welcome to nginx!"))
      << st.message();
  FakeServer later({{200, kListing}, {200, kHtml}});
  store = open_fake(later);
  ASSERT_NE(store, nullptr);
  std::vector<std::string> keys;
  const Status listed = store->list("v", &keys);
  std::printf("%s\n", listed.to_string().c_str());
  EXPECT_TRUE(has(listed, "S3 GET s3://dcr-test listing 'v' (" + later.endpoint() + "): HTTP 200: the answer is not"))
      << listed.message();
  EXPECT_TRUE(has(listed, "is " + later.endpoint() + " an S3 service")) << listed.message();
}

// A 404 that is a web page is not "no such object"; an error that is not S3's is shown as it begins.
TEST(S3StoreHostile, AnswersThatAreNotS3sAreRefusedByName) {
  StoreOptions options;
  options.timeout_s = 0.3;
  options.part_bytes = uint64_t{5} << 20;
  FakeServer missing({{200, kListing}, {404, kHtml}});
  std::unique_ptr<ObjectStore> store = open_fake(missing, options);
  ASSERT_NE(store, nullptr);
  std::vector<uint8_t> back;
  bool found = true;
  Status st = store->get("v1/MANIFEST", &back, &found);
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_TRUE(has(st, "S3 GET s3://dcr-test/v1/MANIFEST (" + missing.endpoint() + "): HTTP 404: the answer is not an "
                      "S3 Error document (it begins '<!DOCTYPE html>"))
      << st.message();
  FakeServer refused({{200, kListing}, {400, "<html><body>Bad Request</body></html>"}});
  store = open_fake(refused, options);
  ASSERT_NE(store, nullptr);
  st = store->remove("k");
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_EQ(st.message(), "S3 DELETE s3://dcr-test/k: 400 from " + refused.endpoint() +
                              ", not S3's: '<html><body>Bad Request</body></html>'");
  FakeServer uploads({{200, kListing}, {200, "<html>no upload here</html>"}});
  store = open_fake(uploads, options);
  ASSERT_NE(store, nullptr);
  st = store->put("big", pattern(6 << 20, 8), false);
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_TRUE(has(st, "S3 POST s3://dcr-test/big (" + uploads.endpoint() + "): HTTP 200: the answer is not an S3 "
                      "InitiateMultipartUploadResult document (it begins '<html>no upload here</html>')"))
      << st.message();
}

TEST(S3StoreHostile, AnErrorAnsweredWith200CompletingAnUploadIsAnError) {
  FakeServer server({{200, kListing},
                     {200, "<InitiateMultipartUploadResult><UploadId>u-1</UploadId></InitiateMultipartUploadResult>"},
                     {200, ""},
                     {200, ""},
                     {200, "\n  <Error><Code>InternalError</Code><Message>try again</Message></Error>"}});
  StoreOptions options;
  options.part_bytes = uint64_t{5} << 20;
  std::unique_ptr<ObjectStore> store = open_fake(server, options);
  ASSERT_NE(store, nullptr);
  const Status st = store->put("big", pattern(6 << 20, 9), false);
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_EQ(st.message(), "S3 POST s3://dcr-test/big: 200 InternalError: try again");
  EXPECT_EQ(server.lines().back().compare(0, 36, "DELETE /dcr-test/big?uploadId=u-1 HT"), 0) << server.lines().back();
}

// 5. Bytes past a body's Content-Length must not fail the next request on that connection.
TEST(S3StoreHostile, ExtraBytesAfterABodyDoNotFailTheNextRequest) {
  FakeServer server({{200, kListing}, {200, "first", Shape::extra}, {200, "second"}});
  std::unique_ptr<ObjectStore> store = open_fake(server);
  ASSERT_NE(store, nullptr);
  std::vector<uint8_t> back;
  bool found = false;
  const Clock::time_point start = Clock::now();
  Status st = store->get("a", &back, &found);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(std::string(back.begin(), back.end()), "first");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the extra bytes are there by now
  st = store->get("b", &back, &found);
  std::printf("next request: %s, '%s'\n", st.to_string().c_str(), std::string(back.begin(), back.end()).c_str());
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(std::string(back.begin(), back.end()), "second");
  EXPECT_LT(seconds_since(start), kHangBoundS);
}

// 6. Opened for reading, a missing bucket is not_found, and nothing is written: one GET only.
TEST(S3StoreHostile, AStoreOpenedForReadingNeverCreatesItsBucket) {
  FakeServer server({{404, "<Error><Code>NoSuchBucket</Code><Message>no bucket</Message></Error>"}});
  std::unique_ptr<ObjectStore> store;
  const Status st = s3_store(fake_location(server), StoreOptions(), StoreAccess::read, &store);
  std::printf("%s\n", st.to_string().c_str());
  EXPECT_EQ(st.code(), Code::not_found);
  EXPECT_TRUE(has(st, "S3 bucket 'dcr-test' does not exist at " + server.endpoint() +
                          " (a store opened for reading never creates it: check the URL, or start the publisher, "
                          "which creates it)"))
      << st.message();
  EXPECT_EQ(store, nullptr);
  const std::vector<std::string> lines = server.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].compare(0, 4, "GET "), 0) << lines[0];
}

// Opened for writing, the missing bucket is made (PUT bucket), as before.
TEST(S3StoreHostile, AStoreOpenedForWritingCreatesItsBucket) {
  FakeServer server({{404, "<Error><Code>NoSuchBucket</Code></Error>"}, {200, ""}});
  std::unique_ptr<ObjectStore> store = open_fake(server);
  ASSERT_NE(store, nullptr);
  const std::vector<std::string> lines = server.lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "PUT /dcr-test HTTP/1.1");
}

// Put and remove on a store opened for reading are refused without a request.
TEST(S3StoreHostile, PutAndRemoveOnAStoreOpenedForReadingAreRefused) {
  FakeServer server({{200, kListing}});
  std::unique_ptr<ObjectStore> store = open_fake(server, StoreOptions(), StoreAccess::read);
  ASSERT_NE(store, nullptr);
  const Status put = store->put("v1/MANIFEST", std::vector<uint8_t>{1}, true);
  const Status removed = store->remove("v1/MANIFEST");
  std::printf("%s\n%s\n", put.to_string().c_str(), removed.to_string().c_str());
  EXPECT_EQ(put.code(), Code::invalid_argument);
  EXPECT_EQ(put.message(), "S3 put of 'v1/MANIFEST' refused: the store s3://dcr-test (" + server.endpoint() +
                               ", region us-east-1) was opened for reading");
  EXPECT_EQ(removed.code(), Code::invalid_argument);
  EXPECT_EQ(server.requests(), 1);
}

}  // namespace
}  // namespace dcr
