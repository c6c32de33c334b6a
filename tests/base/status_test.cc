// The one status vocabulary (base/status.h): names round-trip, and the rules every part reads.
#include "base/status.h"

#include <gtest/gtest.h>

#include <string>

namespace h0 {
namespace {

TEST(Status, NamesRoundTripAndNeverChange) {
  const char* names[] = {"pass", "fail", "error", "skip", "crash", "timeout", "xfail", "xpass"};
  ASSERT_EQ(all_statuses().size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_STREQ(status_name(all_statuses()[i]), names[i]);
    Status s;
    ASSERT_TRUE(parse_status(names[i], &s));
    EXPECT_EQ(s, all_statuses()[i]);
  }
  Status s;
  EXPECT_FALSE(parse_status("passed", &s));
}

TEST(Status, FailingGoodAndNeither) {
  for (const char* f : {"fail", "error", "crash", "timeout"}) {
    EXPECT_TRUE(is_failing(std::string(f))) << f;
    EXPECT_FALSE(is_good(std::string(f))) << f;
  }
  for (const char* g : {"pass", "xfail", "xpass"}) {  // xpass: good news, not a failure
    EXPECT_FALSE(is_failing(std::string(g))) << g;
    EXPECT_TRUE(is_good(std::string(g))) << g;
  }
  EXPECT_FALSE(is_failing(std::string("skip")));  // nothing compared: neither
  EXPECT_FALSE(is_good(std::string("skip")));
  EXPECT_TRUE(is_failing(std::string("from-the-future")));  // never a silent pass
  EXPECT_FALSE(is_good(std::string("from-the-future")));
  EXPECT_TRUE(is_failing(Status::kCrash));
  EXPECT_TRUE(is_good(Status::kXpass));
}

TEST(Status, OnlyAFinishedRunIsComplete) {
  EXPECT_TRUE(is_complete_run("pass"));
  EXPECT_TRUE(is_complete_run("fail"));
  EXPECT_FALSE(is_complete_run("running"));
  EXPECT_FALSE(is_complete_run("incomplete"));
}

}  // namespace
}  // namespace h0
