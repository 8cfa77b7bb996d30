// The one suite every object store backend passes: file:// always, S3 when a server is given in
// the environment (AWS_ENDPOINT_URL and credentials; scripts/s3_server.sh starts radosgw).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "dcr/store/object_store.h"

namespace dcr {
namespace {

std::string unique_name() {
  return std::to_string(::getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007);
}

// A fresh, empty store of the backend named by the test parameter.
std::unique_ptr<ObjectStore> fresh_store(const std::string& backend, std::string* skip) {
  std::unique_ptr<ObjectStore> store;
  if (backend == "file") {
    const std::string dir = std::filesystem::temp_directory_path() / ("dcr-store-" + unique_name());
    std::filesystem::remove_all(dir);
    EXPECT_TRUE(open_store("file://" + dir, StoreAccess::write, &store).is_ok());
    return store;
  }
  if (std::getenv("AWS_ENDPOINT_URL") == nullptr) {
    *skip = "no S3 server (set AWS_ENDPOINT_URL and credentials, e.g. from scripts/s3_server.sh start DIR)";
    return nullptr;
  }
  const Status st = open_store("s3://dcr-test/" + unique_name(), StoreAccess::write, &store);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return store;
}

class ObjectStoreSuite : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string skip;
    store_ = fresh_store(GetParam(), &skip);
    if (!skip.empty()) GTEST_SKIP() << skip;
    ASSERT_NE(store_, nullptr);
  }
  std::vector<uint8_t> get(const std::string& key, bool* found) {
    std::vector<uint8_t> bytes;
    const Status st = store_->get(key, &bytes, found);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return bytes;
  }
  std::vector<std::string> list(const std::string& prefix) {
    std::vector<std::string> keys;
    const Status st = store_->list(prefix, &keys);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return keys;
  }
  std::unique_ptr<ObjectStore> store_;
};

TEST_P(ObjectStoreSuite, PutThenGetGivesTheBytes) {
  std::vector<uint8_t> bytes(100000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 131 + 7);
  ASSERT_TRUE(store_->put("v1/w0-000000.frame", bytes, false).is_ok());
  bool found = false;
  EXPECT_EQ(get("v1/w0-000000.frame", &found), bytes);
  EXPECT_TRUE(found);
}

TEST_P(ObjectStoreSuite, AMissingObjectIsNotFoundNotAnError) {
  bool found = true;
  EXPECT_TRUE(get("v9/MANIFEST", &found).empty());
  EXPECT_FALSE(found);
}

TEST_P(ObjectStoreSuite, PutReplacesAndEmptyObjectsExist) {
  ASSERT_TRUE(store_->put("CLOSED", std::vector<uint8_t>{1, 2, 3}, true).is_ok());
  ASSERT_TRUE(store_->put("CLOSED", std::vector<uint8_t>{}, true).is_ok());
  bool found = false;
  EXPECT_TRUE(get("CLOSED", &found).empty());
  EXPECT_TRUE(found);
}

TEST_P(ObjectStoreSuite, ListGivesTheKeysUnderAPrefixSorted) {
  for (const char* key : {"v10/MANIFEST", "v2/w1-000000.frame", "v2/MANIFEST", "LAYOUT", "v2x"}) {
    ASSERT_TRUE(store_->put(key, std::vector<uint8_t>{9}, false).is_ok());
  }
  EXPECT_EQ(list("v2/"), (std::vector<std::string>{"v2/MANIFEST", "v2/w1-000000.frame"}));
  EXPECT_EQ(list(""), (std::vector<std::string>{"LAYOUT", "v10/MANIFEST", "v2/MANIFEST", "v2/w1-000000.frame", "v2x"}));
  EXPECT_TRUE(list("f").empty());
}

TEST_P(ObjectStoreSuite, RemoveDeletesAndAMissingObjectIsFine) {
  ASSERT_TRUE(store_->put("v3/MANIFEST", std::vector<uint8_t>{1}, true).is_ok());
  ASSERT_TRUE(store_->remove("v3/MANIFEST").is_ok());
  ASSERT_TRUE(store_->remove("v3/MANIFEST").is_ok());
  bool found = true;
  get("v3/MANIFEST", &found);
  EXPECT_FALSE(found);
  EXPECT_TRUE(list("").empty());
}

// Puts `size` bytes under `key`, then reads it with a limit of `limit` bytes (the outcome printed).
Status put_then_get(ObjectStore& store, const std::string& key, size_t size, uint64_t limit, std::vector<uint8_t>* out) {
  EXPECT_TRUE(store.put(key, std::vector<uint8_t>(size, 7), false).is_ok());
  bool found = false;
  const Status st = store.get(key, out, &found, limit);
  std::printf("%s\n", st.to_string().c_str());
  return st;
}

// A get names its limit: an object over it is corrupt (named, with its size), one at it is read.
TEST_P(ObjectStoreSuite, AnObjectOverTheReadersLimitIsCorrupt) {
  std::vector<uint8_t> bytes;
  bool found = false;
  const Status st = put_then_get(*store_, "v4/w0-000001.frame", 1000, 999, &bytes);
  EXPECT_EQ(st.code(), Code::corrupt);
  EXPECT_NE(st.message().find("v4/w0-000001.frame"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("holds 1000 bytes, more than the 999 this read accepts"), std::string::npos)
      << st.message();
  ASSERT_TRUE(store_->get("v4/w0-000001.frame", &bytes, &found, 1000).is_ok());
  EXPECT_TRUE(found && bytes == std::vector<uint8_t>(1000, 7));
}

INSTANTIATE_TEST_SUITE_P(Backends, ObjectStoreSuite, ::testing::Values("file", "s3"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// ---- URLs

// Saves the AWS_* variables a test changes and puts them back after it.
class StoreUrl : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_.push_back(value ? std::optional<std::string>(value) : std::nullopt);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < saved_.size(); ++i) {
      if (saved_[i]) ::setenv(kNames[i], saved_[i]->c_str(), 1);
      else ::unsetenv(kNames[i]);
    }
  }
  static constexpr const char* kNames[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SHARED_CREDENTIALS_FILE"};
  std::vector<std::optional<std::string>> saved_;
};

Status open(const std::string& url) {
  std::unique_ptr<ObjectStore> store;
  return open_store(url, StoreAccess::write, &store);
}

TEST_F(StoreUrl, BadUrlsNameWhatIsWrong) {
  EXPECT_NE(open("/shared/store").message().find("neither file:///DIR nor s3://BUCKET"), std::string::npos);
  EXPECT_NE(open("file://relative/dir").message().find("absolute directory"), std::string::npos);
  EXPECT_NE(open("s3://Bad_Bucket/x").message().find("is not an S3 bucket name"), std::string::npos);
  ::setenv("AWS_ACCESS_KEY_ID", "a", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "b", 1);
  EXPECT_NE(open("s3://bucket/x?part_mb=1").message().find("part_mb=1 is not a number in [5"), std::string::npos);
  EXPECT_NE(open("s3://bucket/x?colour=blue").message().find("unknown option 'colour'"), std::string::npos);
}

TEST_F(StoreUrl, CredentialsComeFromTheEnvironmentOrTheFile) {
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
  EXPECT_NE(open("s3://bucket/x").message().find("no S3 credentials: AWS_ACCESS_KEY_ID"), std::string::npos);
  const std::string file = std::filesystem::temp_directory_path() / ("dcr-credentials-" + unique_name());
  FILE* f = std::fopen(file.c_str(), "w");
  std::fputs("[default]\naws_access_key_id = only-the-id\n[other]\naws_secret_access_key = s\n", f);
  std::fclose(f);
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", file.c_str(), 1);
  EXPECT_NE(open("s3://bucket/x").message().find("no aws_access_key_id and aws_secret_access_key in profile [default]"),
            std::string::npos);
  ::setenv("AWS_ACCESS_KEY_ID", "only", 1);
  EXPECT_NE(open("s3://bucket/x").message().find("set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
            std::string::npos);
  std::filesystem::remove(file);
}

TEST(FileStore, KeysThatLeaveTheDirectoryAreRefused) {
  const std::string dir = std::filesystem::temp_directory_path() / ("dcr-store-" + unique_name());
  std::unique_ptr<ObjectStore> store = file_store(dir);
  for (const char* key : {"../escape", "/abs", "v1/../../x", "", "v1//x", "a.tmp"}) {
    EXPECT_EQ(store->put(key, std::vector<uint8_t>{1}, false).code(), Code::invalid_argument) << key;
  }
  std::filesystem::remove_all(dir);
}

// An object over the reader's limit is refused unread, naming it, its size and the limit.
TEST(FileStore, AnObjectOverTheLimitIsCorrupt) {
  const std::string dir = std::filesystem::temp_directory_path() / ("dcr-store-" + unique_name());
  std::unique_ptr<ObjectStore> store = file_store(dir);
  std::vector<uint8_t> bytes;
  bool found = false;
  const Status st = put_then_get(*store, "v1/w0-000000.frame", 900, 800, &bytes);
  EXPECT_EQ(st.code(), Code::corrupt);
  EXPECT_EQ(st.message(), "object 'v1/w0-000000.frame' in file://" + dir +
                              " holds 900 bytes, more than the 800 this read accepts");
  EXPECT_TRUE(bytes.empty());
  ASSERT_TRUE(store->get("v1/w0-000000.frame", &bytes, &found, 900).is_ok());
  EXPECT_TRUE(found && bytes.size() == 900);
  std::filesystem::remove_all(dir);
}

// A follower lists while the publisher prunes: versions removed during a listing are left out of
// it, never an error (a recursive directory walk used to fail with "No such file or directory").
TEST(FileStore, ListingWhileVersionsAreRemovedIsNotAnError) {
  const std::string dir = std::filesystem::temp_directory_path() / ("dcr-store-" + unique_name());
  std::unique_ptr<ObjectStore> writer = file_store(dir), reader = file_store(dir, StoreAccess::read);
  constexpr int kVersions = 300;
  for (int v = 0; v < kVersions; ++v) {
    for (int f = 0; f < 3; ++f) {
      ASSERT_TRUE(writer->put("v" + std::to_string(v) + "/w0-00000" + std::to_string(f) + ".frame", {1, 2}, false).is_ok());
    }
  }
  ASSERT_TRUE(writer->put("LAYOUT", std::vector<uint8_t>{1}, true).is_ok());
  std::thread pruner([&] {
    for (int v = 0; v < kVersions; ++v) {
      for (int f = 0; f < 3; ++f) writer->remove("v" + std::to_string(v) + "/w0-00000" + std::to_string(f) + ".frame");
    }
  });
  int listings = 0;
  for (size_t left = 1; left > 0; ++listings) {
    std::vector<std::string> keys;
    const Status st = reader->list("", &keys);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    ASSERT_FALSE(keys.empty());
    left = keys.size() - 1;  // LAYOUT stays
  }
  pruner.join();
  EXPECT_GT(listings, 0);
  std::filesystem::remove_all(dir);
}

// Opened for reading: a missing directory lists nothing and is not made; put and remove are refused.
TEST(FileStore, AStoreOpenedForReadingWritesNothing) {
  const std::string dir = std::filesystem::temp_directory_path() / ("dcr-store-" + unique_name());
  std::unique_ptr<ObjectStore> store;
  ASSERT_TRUE(open_store("file://" + dir, StoreAccess::read, &store).is_ok());
  std::vector<std::string> keys;
  EXPECT_TRUE(store->list("", &keys).is_ok());
  EXPECT_TRUE(keys.empty());
  std::vector<uint8_t> bytes;
  bool found = true;
  EXPECT_TRUE(store->get("LAYOUT", &bytes, &found).is_ok());
  EXPECT_FALSE(found);
  const Status put = store->put("LAYOUT", std::vector<uint8_t>{1}, true);
  std::printf("%s\n", put.to_string().c_str());
  EXPECT_EQ(put.code(), Code::invalid_argument);
  EXPECT_EQ(put.message(), "put of 'LAYOUT' refused: the store file://" + dir + " was opened for reading");
  EXPECT_EQ(store->remove("LAYOUT").code(), Code::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace dcr
