// A suite a program builds (suite_of_checks, yaml_of): validated as a file's, and every JSON value
// reads back as itself through yaml_to_json, the way the checks read their fields.
#include <gtest/gtest.h>

#include "base/error.h"
#include "suite/platform.h"
#include "suite/suite.h"

namespace h0::suite {
namespace {

void register_test_kind() { register_kind({"probe", {"value", "path"}}); }

TEST(BuiltSuite, JsonValuesReadBackAsThemselves) {
  const nlohmann::json values = {{"int", 16},
                                 {"negative", -3},
                                 {"float", 1e-6},
                                 {"exact", 0.1},
                                 {"true", true},
                                 {"text", "bf16"},
                                 {"looks_true", "true"},
                                 {"looks_number", "1.5"},
                                 {"looks_null", "null"},
                                 {"nan_text", ".nan"},
                                 {"null", nullptr},
                                 {"list", {1, "two", 3.5}},
                                 {"map", {{"arange", {{"start", 0}, {"step", 1}}}}}};
  EXPECT_EQ(yaml_to_json("", yaml_of(values)), values);
}

TEST(BuiltSuite, ChecksAreValidatedAsAFilesAre) {
  register_test_kind();
  const Suite s = suite_of_checks(
      "built", "day0 test cases",
      {yaml_of({{"id", "a/x"}, {"kind", "probe"}, {"value", 3}}),
       yaml_of({{"id", "a/y"}, {"kind", "probe"}, {"matrix", {{"layer", {0, 1}}}}})});
  ASSERT_EQ(s.checks.size(), 2u);
  EXPECT_EQ(s.name, "built");
  EXPECT_EQ(s.file, "day0 test cases");
  EXPECT_EQ(s.checks[1].matrix.size(), 1u);
  EXPECT_EQ(s.sha256.size(), 64u);
  try {
    suite_of_checks("built", "day0 test cases",
                    {yaml_of({{"id", "a/x"}, {"kind", "probe"}, {"colour", 3}})});
    FAIL() << "an unknown field was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("day0 test cases"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown field 'colour'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(suite_of_checks("built", "o",
                               {yaml_of({{"id", "a"}, {"kind", "probe"}}),
                                yaml_of({{"id", "a"}, {"kind", "probe"}})}),
               InputError);  // a duplicate id
}

}  // namespace
}  // namespace h0::suite
