// The C API (include/dcr/dcr.h) on threads, without mpirun: a trainer, a relay and a rollout of one
// in-process group publish three versions through opaque handles, and bad calls return a code with
// a message naming what is wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dcr/dcr.h"

namespace {

constexpr int64_t kRows = 128, kCols = 32;

dcr_spec* make_spec() {
  dcr_spec* spec = nullptr;
  EXPECT_EQ(dcr_spec_new(&spec), DCR_OK);
  EXPECT_EQ(dcr_spec_set(spec, "trainers", "1"), DCR_OK);
  EXPECT_EQ(dcr_spec_set(spec, "relays", "1"), DCR_OK);
  EXPECT_EQ(dcr_spec_set(spec, "rollout-tp", "1"), DCR_OK);
  EXPECT_EQ(dcr_spec_set(spec, "timeout", "5"), DCR_OK);
  const int64_t shape[2] = {kRows, kCols};
  EXPECT_EQ(dcr_spec_add_tensor(spec, "w", "f32", 2, shape), DCR_OK);
  return spec;
}

TEST(CApi, BadCallsReturnACodeAndAMessage) {
  dcr_spec* spec = make_spec();
  EXPECT_EQ(dcr_spec_set(spec, "trainers", "two"), DCR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dcr_last_error()).find("'two' is not an integer"), std::string::npos) << dcr_last_error();
  EXPECT_EQ(dcr_spec_set(spec, "no-such-option", "1"), DCR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dcr_last_error()).find("unknown option 'no-such-option'"), std::string::npos);
  const int64_t shape[1] = {4};
  EXPECT_EQ(dcr_spec_add_tensor(spec, "x", "float128", 1, shape), DCR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(dcr_last_error()).find("tensor 'x'"), std::string::npos) << dcr_last_error();
  EXPECT_EQ(dcr_spec_set_model_config(spec, "{not json"), DCR_INVALID_ARGUMENT);
  dcr_comm* comm[1] = {nullptr};
  ASSERT_EQ(dcr_comm_threads(1, comm), DCR_OK);
  dcr_endpoint* endpoint = nullptr;
  EXPECT_EQ(dcr_rollout_new(spec, comm[0], &endpoint), DCR_INVALID_ARGUMENT);  // one rank cannot hold the job
  EXPECT_NE(std::string(dcr_last_error()).find("needs 1 trainers + 1 relays + at least one rollout"), std::string::npos) << dcr_last_error();
  EXPECT_EQ(dcr_relay_serve(nullptr), DCR_INVALID_ARGUMENT);
  dcr_comm_free(comm[0]);
  dcr_spec_free(spec);
}

TEST(CApi, ThreeVersionsThroughOpaqueHandles) {
  dcr_spec* spec = make_spec();
  dcr_comm* comm[3] = {};
  ASSERT_EQ(dcr_comm_threads(3, comm), DCR_OK);
  std::vector<float> trained(kRows * kCols, 1.0f), served(kRows * kCols, 0.0f);
  std::vector<int> codes;
  std::vector<uint64_t> received;
  std::thread trainer([&] {
    dcr_endpoint* e = nullptr;
    ASSERT_EQ(dcr_trainer_new(spec, comm[0], &e), DCR_OK) << dcr_last_error();
    size_t count = 0;
    ASSERT_EQ(dcr_endpoint_buffer_count(e, &count), DCR_OK);
    ASSERT_EQ(count, 1u);
    for (uint64_t v = 1; v <= 3; ++v) {
      for (size_t i = v; i < trained.size(); i += 31) trained[i] += 0.5f;
      const dcr_buffer buffer{trained.data(), trained.size() * 4, "f32", DCR_HOST};
      codes.push_back(dcr_trainer_publish(e, v, &buffer, 1));
    }
    const dcr_buffer wrong{trained.data(), trained.size() * 4, "bf16", DCR_HOST};
    codes.push_back(dcr_trainer_publish(e, 4, &wrong, 1));
    EXPECT_NE(std::string(dcr_last_error()).find("is bf16, the layout holds f32"), std::string::npos) << dcr_last_error();
    EXPECT_EQ(dcr_endpoint_committed(e), 3u);
    EXPECT_EQ(dcr_trainer_close(e), DCR_OK);
    dcr_endpoint_free(e);
  });
  std::thread relay([&] {
    dcr_endpoint* e = nullptr;
    ASSERT_EQ(dcr_relay_new(spec, comm[1], &e), DCR_OK) << dcr_last_error();
    EXPECT_EQ(dcr_relay_serve(e), DCR_OK);
    dcr_endpoint_free(e);
  });
  std::thread rollout([&] {
    dcr_endpoint* e = nullptr;
    ASSERT_EQ(dcr_rollout_new(spec, comm[2], &e), DCR_OK) << dcr_last_error();
    const char *name = nullptr, *dtype = nullptr;
    uint64_t bytes = 0;
    int ndim = 0;
    const int64_t* shape = nullptr;
    ASSERT_EQ(dcr_endpoint_buffer(e, 0, &name, &dtype, &bytes, &ndim, &shape), DCR_OK);
    EXPECT_STREQ(dtype, "f32");
    EXPECT_EQ(bytes, served.size() * 4);
    const dcr_buffer buffer{served.data(), served.size() * 4, "f32", DCR_HOST};
    ASSERT_EQ(dcr_rollout_attach(e, &buffer, 1), DCR_OK);
    for (;;) {
      uint64_t version = 0;
      const int rc = dcr_rollout_receive(e, &version);
      if (rc == DCR_CLOSED) break;
      if (rc == DCR_OK) received.push_back(version);
    }
    dcr_endpoint_free(e);
  });
  trainer.join();
  relay.join();
  rollout.join();
  EXPECT_EQ(codes, (std::vector<int>{DCR_OK, DCR_OK, DCR_OK, DCR_INVALID_ARGUMENT}));
  EXPECT_EQ(received, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(std::memcmp(served.data(), trained.data(), served.size() * 4), 0);  // in place, bit-exact
  for (dcr_comm* c : comm) dcr_comm_free(c);
  dcr_spec_free(spec);
}

// apply=staged through the C API: dcr_rollout_stage leaves the buffers as they were (a copy taken
// before it equals them after), dcr_rollout_apply applies and commits, and the step's figures come
// back from dcr_endpoint_last_pause; apply with nothing staged is refused.
TEST(CApi, StagedVersionsReachTheBuffersOnlyAtApply) {
  dcr_spec* spec = make_spec();
  ASSERT_EQ(dcr_spec_set(spec, "apply", "staged"), DCR_OK);
  dcr_comm* comm[3] = {};
  ASSERT_EQ(dcr_comm_threads(3, comm), DCR_OK);
  std::vector<float> trained(kRows * kCols, 1.0f), served(kRows * kCols, 0.0f);
  std::vector<bool> untouched;
  std::vector<uint64_t> staged_bytes;
  std::thread trainer([&] {
    dcr_endpoint* e = nullptr;
    ASSERT_EQ(dcr_trainer_new(spec, comm[0], &e), DCR_OK) << dcr_last_error();
    for (uint64_t v = 1; v <= 3; ++v) {
      for (size_t i = v; i < trained.size(); i += 31) trained[i] += 0.5f;
      const dcr_buffer buffer{trained.data(), trained.size() * 4, "f32", DCR_HOST};
      EXPECT_EQ(dcr_trainer_publish(e, v, &buffer, 1), DCR_OK) << dcr_last_error();
    }
    EXPECT_EQ(dcr_trainer_close(e), DCR_OK);
    dcr_endpoint_free(e);
  });
  std::thread relay([&] {
    dcr_endpoint* e = nullptr;
    ASSERT_EQ(dcr_relay_new(spec, comm[1], &e), DCR_OK) << dcr_last_error();
    EXPECT_EQ(dcr_relay_serve(e), DCR_OK);
    dcr_endpoint_free(e);
  });
  std::thread rollout([&] {
    dcr_endpoint* e = nullptr;
    ASSERT_EQ(dcr_rollout_new(spec, comm[2], &e), DCR_OK) << dcr_last_error();
    const dcr_buffer buffer{served.data(), served.size() * 4, "f32", DCR_HOST};
    ASSERT_EQ(dcr_rollout_attach(e, &buffer, 1), DCR_OK);
    uint64_t version = 0;
    EXPECT_EQ(dcr_rollout_apply(e, &version), DCR_INVALID_ARGUMENT);  // nothing staged yet
    for (;;) {
      const std::vector<float> before = served;
      if (dcr_rollout_stage(e, &version) == DCR_CLOSED) break;
      untouched.push_back(version == 1 || std::memcmp(before.data(), served.data(), served.size() * 4) == 0);
      ASSERT_EQ(dcr_rollout_apply(e, &version), DCR_OK) << dcr_last_error();
      double staging = 0, pause = 0;
      uint64_t bytes = 0;
      ASSERT_EQ(dcr_endpoint_last_pause(e, &staging, &pause, &bytes), DCR_OK);
      staged_bytes.push_back(bytes);
    }
    dcr_endpoint_free(e);
  });
  trainer.join();
  relay.join();
  rollout.join();
  EXPECT_EQ(untouched, (std::vector<bool>{true, true, true}));
  ASSERT_EQ(staged_bytes.size(), 3u);
  EXPECT_EQ(staged_bytes[0], 0u);  // the first version streams
  EXPECT_GT(staged_bytes[1], 0u);
  EXPECT_EQ(std::memcmp(served.data(), trained.data(), served.size() * 4), 0);
  for (dcr_comm* c : comm) dcr_comm_free(c);
  dcr_spec_free(spec);
}

}  // namespace
