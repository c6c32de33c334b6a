// harness/nightly: the first night has nothing to diff against; a night where the platform's
// rmsnorm went wrong (the faulty plugin) is a regression (exit 1) with its diff, JUnit and the
// dashboard written; bad arguments are exit 2.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "harness/cli_util.h"

namespace h0 {
namespace {

struct Out {
  int code = -1;
  std::string text;  // stdout and stderr
};

Out nightly(const std::string& args, const std::string& env = "") {
  const test::Result r = test::run_shell(env + " HARNESS_BIN=" + H0_HARNESS_BIN +
                                         " harness/nightly " + args + " 2>&1");
  return {r.code, r.out};
}

TEST(Nightly, ARegressionAgainstThePreviousNightFailsTheJob) {
  test::TempDir dir;
  std::ofstream(dir.file("suite.yaml"))
      << "suite: nightly\nchecks:\n  - id: rmsnorm\n    kind: op\n    op: rmsnorm\n"
      << "    golden: reference\n    attrs: {eps: 1.0e-5}\n    matrix: {dtype: [f32], shape: [[7, "
         "4096]]}\n";
  std::ofstream(dir.file("good.yaml")) << "platform: box\nbackend: reference\n";
  std::ofstream(dir.file("bad.yaml"))
      << "platform: box\nbackend: {lib: " << H0_FAULTY_PLUGIN
      << ", options: {op: rmsnorm, fault: scale, magnitude: 0.05}}\n";
  const std::string common = "--db " + dir.file("r.db") + " --suite " + dir.file("suite.yaml") +
                             " --out " + dir.file("out");
  Out o = nightly(common + " " + dir.file("good.yaml"), "H0_LABELS='stack=v1 driver=1'");
  EXPECT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("nothing to diff against"), std::string::npos) << o.text;
  o = nightly(common + " " + dir.file("good.yaml"), "H0_LABELS='stack=v2'");
  EXPECT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("0 regressions"), std::string::npos) << o.text;
  o = nightly(common + " " + dir.file("bad.yaml"), "H0_LABELS='stack=v3'");
  EXPECT_EQ(o.code, 1) << o.text;
  EXPECT_NE(o.text.find("REGRESSION on box"), std::string::npos) << o.text;
  EXPECT_NE(test::read_file(dir.file("out/diff/box.txt")).find("1 regression"), std::string::npos);
  EXPECT_NE(test::read_file(dir.file("out/junit/box.xml")).find("<failure"), std::string::npos);
  EXPECT_NE(test::read_file(dir.file("out/site/index.html")).find("3 runs"), std::string::npos);
  // Labels from the environment reach the store.
  EXPECT_NE(test::read_file(dir.file("out/diff/box.txt")).find("stack=v3"), std::string::npos);
}

TEST(Nightly, BadArgumentsAreExitTwo) {
  EXPECT_EQ(nightly("").code, 2);
  EXPECT_EQ(nightly("no/such/platform.yaml").code, 2);
  EXPECT_EQ(nightly("--bogus configs/platforms/cpu.yaml").code, 2);
  const Out help = nightly("--help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.text.find("PLATFORM.yaml"), std::string::npos);
}

}  // namespace
}  // namespace h0
