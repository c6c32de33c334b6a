// Loading valid suites: fields, defaults merging, includes, the kind registry.
#include "suite/suite.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/sha256.h"
#include "suite/suite_test_util.h"
#include "test_util.h"

namespace h0::suite {
namespace {

class SuiteTest : public SuiteFixture {
 protected:
  std::vector<std::string> ids(const Suite& s) {
    std::vector<std::string> out;
    for (const auto& c : s.checks) out.push_back(c.id);
    return out;
  }
};

TEST_F(SuiteTest, ReadsTheFields) {
  const std::string path = write("ops.yaml", R"(suite: ops-core
description: the operator checks
checks:
  - id: rmsnorm
    kind: op
    op: rmsnorm
    attrs: {eps: 1.0e-6}
    tags: [fast, norm]
  - id: tiny-llama/layer0
    kind: layer
    model: configs/models/tiny-llama
    skip: no golden yet
    xfail: {reason: "known drift"}
)");
  const Suite s = load_suite(path);
  EXPECT_EQ(s.name, "ops-core");
  EXPECT_EQ(s.description, "the operator checks");
  EXPECT_EQ(s.file, path);
  EXPECT_EQ(s.sha256, base::sha256_file(path));
  EXPECT_EQ(s.files, std::vector<std::string>{path});
  ASSERT_EQ(s.checks.size(), 2u);

  const CheckSpec& a = s.checks[0];
  EXPECT_EQ(a.id, "rmsnorm");
  EXPECT_EQ(a.kind, "op");
  EXPECT_EQ(a.file, path);
  EXPECT_EQ(a.where.str(), path + ":4:5");
  EXPECT_EQ(a.node["op"].as<std::string>(), "rmsnorm");
  EXPECT_EQ(a.node["attrs"]["eps"].as<double>(), 1.0e-6);
  EXPECT_EQ(a.tags, (std::vector<std::string>{"fast", "norm"}));
  EXPECT_EQ(a.skip_reason, "");
  EXPECT_EQ(a.xfail_reason, "");
  EXPECT_TRUE(a.matrix.empty());

  const CheckSpec& b = s.checks[1];
  EXPECT_EQ(b.id, "tiny-llama/layer0");
  EXPECT_EQ(b.kind, "layer");
  EXPECT_EQ(b.skip_reason, "no golden yet");
  EXPECT_EQ(b.xfail_reason, "known drift");
  EXPECT_TRUE(b.tags.empty());
}

TEST_F(SuiteTest, KeepsTheMatrixInTheOrderWritten) {
  const std::string path = write("m.yaml", R"(suite: m
checks:
  - id: rmsnorm
    kind: op
    matrix: {shape: [[1, 64], [7, 4096]], dtype: [f32, bf16, f16]}
)");
  const Suite s = load_suite(path);
  const auto& matrix = s.checks[0].matrix;
  ASSERT_EQ(matrix.size(), 2u);
  EXPECT_EQ(matrix[0].first, "shape");
  ASSERT_EQ(matrix[0].second.size(), 2u);
  EXPECT_EQ(matrix[0].second[1][1].as<int>(), 4096);
  EXPECT_EQ(location_of(path, matrix[0].second[1]).str(), path + ":5:31");
  EXPECT_EQ(matrix[1].first, "dtype");
  ASSERT_EQ(matrix[1].second.size(), 3u);
  EXPECT_EQ(matrix[1].second[2].as<std::string>(), "f16");
}

TEST_F(SuiteTest, DefaultsFillMissingFieldsAndMergeMappingsOneLevelDeep) {
  const std::string path = write("d.yaml", R"(suite: d
defaults:
  golden: golden/ops/all.safetensors
  tolerance: {preset: auto, cosine_min: 0.999}
  attrs: {eps: 1.0e-5, theta: 10000}
  model: configs/models/tiny-llama
  tags: [nightly]
checks:
  - id: a
    kind: op
    attrs: {eps: 1.0e-6}
    tolerance: {cosine_min: 0.9999, max_abs_max: 0.01}
  - id: b
    kind: op
    golden: golden/ops/b.safetensors
    tags: [fast]
  - id: c
    kind: layer
)");
  const Suite s = load_suite(path);
  ASSERT_EQ(s.checks.size(), 3u);

  const YAML::Node& a = s.checks[0].node;
  EXPECT_EQ(a["golden"].as<std::string>(), "golden/ops/all.safetensors");
  EXPECT_EQ(a["attrs"]["eps"].as<double>(), 1.0e-6);  // the check's key wins
  EXPECT_EQ(a["attrs"]["theta"].as<int>(), 10000);    // the default fills the rest
  EXPECT_EQ(a["tolerance"]["preset"].as<std::string>(), "auto");
  EXPECT_EQ(a["tolerance"]["cosine_min"].as<double>(), 0.9999);
  EXPECT_EQ(a["tolerance"]["max_abs_max"].as<double>(), 0.01);
  EXPECT_FALSE(a["model"].IsDefined());  // not a field of kind op
  EXPECT_EQ(s.checks[0].tags, std::vector<std::string>{"nightly"});
  // A value taken from defaults keeps its own position.
  EXPECT_EQ(location_of(path, a["golden"]).str(), path + ":3:11");
  EXPECT_EQ(location_of(path, a["tolerance"]["preset"]).str(), path + ":4:23");

  const YAML::Node& b = s.checks[1].node;
  EXPECT_EQ(b["golden"].as<std::string>(), "golden/ops/b.safetensors");
  EXPECT_EQ(b["attrs"]["eps"].as<double>(), 1.0e-5);
  EXPECT_EQ(s.checks[1].tags, std::vector<std::string>{"fast"});  // sequences are not merged

  const YAML::Node& c = s.checks[2].node;
  EXPECT_EQ(c["model"].as<std::string>(), "configs/models/tiny-llama");
  EXPECT_EQ(c["golden"].as<std::string>(), "golden/ops/all.safetensors");
  EXPECT_FALSE(c["attrs"].IsDefined());  // not a field of kind layer
  EXPECT_EQ(c["tolerance"]["preset"].as<std::string>(), "auto");
}

TEST_F(SuiteTest, DefaultsApplyOnlyToTheirOwnFile) {
  write("inc.yaml", R"(suite: inc
checks:
  - {id: inner, kind: op}
)");
  const std::string path = write("top.yaml", R"(suite: top
include: [inc.yaml]
defaults: {golden: top.safetensors}
checks:
  - {id: outer, kind: op}
)");
  const Suite s = load_suite(path);
  ASSERT_EQ(s.checks.size(), 2u);
  EXPECT_FALSE(s.checks[0].node["golden"].IsDefined());
  EXPECT_EQ(s.checks[1].node["golden"].as<std::string>(), "top.safetensors");
}

TEST_F(SuiteTest, IncludedChecksComeFirstInIncludeOrder) {
  write("sub/c.yaml", "suite: c\nchecks: [{id: c1, kind: op}]\n");
  write("sub/b.yaml",
        "suite: b\ninclude: [c.yaml]\nchecks: [{id: b1, kind: op}, {id: b2, kind: op}]\n");
  write("a.yaml", "suite: a\nchecks: [{id: a1, kind: layer}]\n");
  const std::string top = write("top.yaml", R"(suite: day0
include:
  - sub/b.yaml
  - a.yaml
checks:
  - {id: t1, kind: op}
)");
  const Suite s = load_suite(top);
  EXPECT_EQ(s.name, "day0");
  EXPECT_EQ(ids(s), (std::vector<std::string>{"c1", "b1", "b2", "a1", "t1"}));
  EXPECT_EQ(s.files, (std::vector<std::string>{top, dir_.file("sub/b.yaml"),
                                               dir_.file("sub/c.yaml"), dir_.file("a.yaml")}));
  EXPECT_EQ(s.checks[0].file, dir_.file("sub/c.yaml"));
  EXPECT_EQ(s.checks[0].where.str(), dir_.file("sub/c.yaml") + ":2:10");
  EXPECT_EQ(s.sha256, base::sha256_file(top));
}

TEST_F(SuiteTest, AFileIncludedTwiceIsReadOnce) {
  write("common.yaml", "suite: common\nchecks: [{id: shared, kind: op}]\n");
  write("x.yaml", "suite: x\ninclude: [common.yaml]\nchecks: [{id: x1, kind: op}]\n");
  write("y.yaml", "suite: y\ninclude: [./common.yaml]\nchecks: [{id: y1, kind: op}]\n");
  const std::string top = write("top.yaml", "suite: top\ninclude: [x.yaml, y.yaml]\n");
  const Suite s = load_suite(top);
  EXPECT_EQ(ids(s), (std::vector<std::string>{"shared", "x1", "y1"}));
  EXPECT_EQ(s.files.size(), 4u);
}

TEST_F(SuiteTest, ChecksMayBeEmptyWhenThereAreIncludes) {
  write("a.yaml", "suite: a\nchecks: [{id: a1, kind: op}]\n");
  const Suite s = load_suite(write("top.yaml", "suite: top\ninclude: [a.yaml]\nchecks: []\n"));
  EXPECT_EQ(ids(s), std::vector<std::string>{"a1"});
}

TEST_F(SuiteTest, RegisteringAKindAgainReplacesIt) {
  const size_t n = kinds().size();
  register_kind({"layer", {"probe"}});
  EXPECT_EQ(kinds().size(), n);
  EXPECT_EQ(kinds()[1].kind, "layer");
  EXPECT_EQ(kinds()[1].fields, std::vector<std::string>{"probe"});
  const std::string path = write("k.yaml", "suite: k\nchecks: [{id: k, kind: layer, probe: 1}]\n");
  EXPECT_EQ(load_suite(path).checks[0].node["probe"].as<int>(), 1);
  register_test_kinds();  // restore the schema the other tests expect
}

TEST(Location, Formats) {
  EXPECT_EQ((Location{"a.yaml", 12, 5}).str(), "a.yaml:12:5");
  EXPECT_EQ((Location{"a.yaml"}).str(), "a.yaml");
  EXPECT_EQ((Location{"", 3, 7}).str(), "3:7");
  const YAML::Node doc = YAML::Load("a:\n  b: [1, 2]\n");
  EXPECT_EQ(location_of("f", doc["a"]["b"][1]).str(), "f:2:10");
  EXPECT_EQ(location_of("f", doc["missing"]).str(), "f");
}

}  // namespace
}  // namespace h0::suite
