// The `dcr refit` configuration: what the two-job path needs (--store, a promise) and refuses.
#include <gtest/gtest.h>

#include "src/job/config.h"

namespace dcr {
namespace {

TEST(Plan, TwoJobRolesRefuseWhatCannotWork) {
  RefitConfig c;
  c.trainers = 2;
  c.relays = 1;
  c.rollout_tp = 2;
  c.role = JobRole::publish;
  auto message = [&c] { return check_refit_config(c).message(); };
  EXPECT_NE(message().find("needs --store URL"), std::string::npos);
  c.store = "s3://bucket/run";
  c.serve_tp = {4};
  c.serve_ep = {8};
  EXPECT_NE(message().find("no --serve-ep degree divides a --serve-tp degree"), std::string::npos) << message();
  const Status listed = options::set_by_name(refit_config_table(), "serve-tp", "1,2,", &c);
  EXPECT_NE(listed.message().find("ends with a comma"), std::string::npos) << listed.message();
  ASSERT_TRUE(options::set_by_name(refit_config_table(), "serve-tp", "1,2,4,8", &c).is_ok());
  EXPECT_EQ(c.serve_tp, (std::vector<int>{1, 2, 4, 8}));
  c.serve_ep.clear();
  c.state_dir = "/tmp/state";
  EXPECT_NE(message().find("keeps its progress in the store"), std::string::npos);
  c.state_dir.clear();
  c.spool_dir = "/tmp/spool";
  EXPECT_NE(message().find("--spool-dir is the one-job spool"), std::string::npos);
  c.spool_dir.clear();
  const Status relay = options::set_by_name(refit_config_table(), "role", "relay", &c);
  EXPECT_NE(relay.message().find("--role 'relay' is not all, publish or follow"), std::string::npos) << relay.message();
  c.role = JobRole::follow;
  EXPECT_TRUE(check_refit_config(c).is_ok());
}

}  // namespace
}  // namespace dcr
