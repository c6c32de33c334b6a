// Matrix expansion: order, case ids, value formatting, uniqueness.
#include "suite/matrix.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "base/error.h"
#include "suite/suite_test_util.h"
#include "test_util.h"

namespace h0::suite {
namespace {

class MatrixTest : public SuiteFixture {
 protected:
  // Loads a suite file holding `text`.
  Suite load(const std::string& text) {
    std::ofstream(dir_.file("s.yaml")) << text;
    return load_suite(dir_.file("s.yaml"));
  }

  // The message expanding the suite in `text` fails with, the file's path cut to "s.yaml".
  std::string error_of(const std::string& text) {
    const Suite suite = load(text);
    try {
      expand(suite);
    } catch (const InputError& e) {
      return relative(e.what());
    }
    return "";
  }
};

std::vector<std::string> ids(const std::vector<Case>& cases) {
  std::vector<std::string> out;
  for (const auto& c : cases) out.push_back(c.id);
  return out;
}

TEST_F(MatrixTest, FirstParameterVariesSlowest) {
  const Suite s = load(R"(suite: s
checks:
  - id: plain
    kind: op
  - id: rmsnorm
    kind: op
    matrix: {dtype: [f32, bf16], shape: [[1, 64], [7, 4096]]}
)");
  const std::vector<Case> cases = expand(s);
  EXPECT_EQ(ids(cases), (std::vector<std::string>{
                            "plain",
                            "rmsnorm[dtype=f32,shape=1x64]",
                            "rmsnorm[dtype=f32,shape=7x4096]",
                            "rmsnorm[dtype=bf16,shape=1x64]",
                            "rmsnorm[dtype=bf16,shape=7x4096]",
                        }));
  EXPECT_EQ(cases[0].check, &s.checks[0]);
  EXPECT_TRUE(cases[0].params.empty());
  const Case& last = cases[4];
  EXPECT_EQ(last.check, &s.checks[1]);
  ASSERT_EQ(last.params.size(), 2u);
  EXPECT_EQ(last.params[0].first, "dtype");
  EXPECT_EQ(last.params[0].second.as<std::string>(), "bf16");
  EXPECT_EQ(last.params[1].first, "shape");
  EXPECT_EQ(last.params[1].second[0].as<int>(), 7);
  EXPECT_EQ(last.params[1].second[1].as<int>(), 4096);
}

TEST_F(MatrixTest, ThreeParametersMakeTheFullProduct) {
  const Suite s = load(R"(suite: s
checks:
  - id: x
    kind: op
    matrix:
      a: [1, 2]
      b: [p, q, r]
      c: [true]
)");
  EXPECT_EQ(ids(expand(s)), (std::vector<std::string>{"x[a=1,b=p,c=true]", "x[a=1,b=q,c=true]",
                                                      "x[a=1,b=r,c=true]", "x[a=2,b=p,c=true]",
                                                      "x[a=2,b=q,c=true]", "x[a=2,b=r,c=true]"}));
}

TEST_F(MatrixTest, AnEmptyMatrixIsOneCase) {
  EXPECT_EQ(ids(expand(load("suite: s\nchecks: [{id: x, kind: op, matrix: {}}]\n"))),
            std::vector<std::string>{"x"});
}

TEST(FormatValue, ScalarsAsWritten) {
  const YAML::Node v = YAML::Load("[1.0e-6, 0x10, \"bf16\", 'a b', ~, 007]");
  EXPECT_EQ(format_value(v[0]), "1.0e-6");
  EXPECT_EQ(format_value(v[1]), "0x10");
  EXPECT_EQ(format_value(v[2]), "bf16");
  EXPECT_EQ(format_value(v[3]), "a b");
  EXPECT_EQ(format_value(v[4]), "null");
  EXPECT_EQ(format_value(v[5]), "007");
}

TEST(FormatValue, SequencesAndMappings) {
  EXPECT_EQ(format_value(YAML::Load("[7, 4096]")), "7x4096");
  EXPECT_EQ(format_value(YAML::Load("[4096]")), "4096");
  EXPECT_EQ(format_value(YAML::Load("[]")), "");
  EXPECT_EQ(format_value(YAML::Load("[[1, 2], [3]]")), "1x2_3");
  EXPECT_EQ(format_value(YAML::Load("{T: 7, D: 4096}")), "T=7;D=4096");
  EXPECT_EQ(format_value(YAML::Load("{shape: [7, 64], dtype: bf16}")), "shape=7x64;dtype=bf16");
  EXPECT_EQ(format_value(YAML::Load("[{a: 1}, {a: 2}]")), "a=1_a=2");
}

TEST_F(MatrixTest, ValuesThatFormatTheSameAreAnError) {
  EXPECT_EQ(error_of("suite: s\nchecks:\n  - id: x\n    kind: op\n    matrix: {v: [1, \"1\"]}\n"),
            "s.yaml:5:21: matrix value '1' of parameter 'v' gives the same case id as the value "
            "at s.yaml:5:18 (case ids must be unique)");
  EXPECT_EQ(error_of("suite: s\nchecks:\n  - id: x\n    kind: op\n"
                     "    matrix: {shape: [[1, 2], [1x2]]}\n"),
            "s.yaml:5:30: matrix value '1x2' of parameter 'shape' gives the same case id as the "
            "value at s.yaml:5:22 (case ids must be unique)");
}

}  // namespace
}  // namespace h0::suite
