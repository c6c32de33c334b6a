// The JSON report of a fixed run, compared byte for byte with tests/data/report/run.json.
// After an intended change of the format, regenerate the file with
//   H0_UPDATE_GOLDEN=1 ./json_writer_test ... (or the test binary that holds it)
// and review the diff.
#include "report/json_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "base/error.h"
#include "test_util.h"

namespace h0::report {
namespace {

const char* kGolden = "tests/data/report/run.json";

store::RunData fixed_run() {
  store::RunData run;
  run.id = 42;
  run.uuid = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";
  run.suite = "ops";
  run.suite_file = "suites/ops.yaml";
  run.suite_sha256 = "5e1f0c9a";
  run.platform = "cpu";
  run.platform_file = "configs/platforms/cpu.yaml";
  run.platform_sha256 = "9a8b7c6d";
  run.platform_content = "name: cpu\nbackend: cpu\n";  // not in the JSON: the file's hash is
  run.host = "node-1";
  run.mesh = "1x1";
  run.started_at = "2024-05-01T12:00:00Z";
  run.finished_at = "2024-05-01T12:00:13Z";
  run.status = "fail";
  run.labels = {{"ci", "nightly"}, {"driver", "535.104"}};
  run.stack.id = 3;
  run.stack.fingerprint = "c0ffee";
  run.stack.backend = "cpu";
  run.stack.versions_json =
      R"({"backend":{"device":"host","op_library":"OpenBLAS 0.3.21"},"harness":{"version":"0.1.0"}})";

  store::ResultData pass;
  pass.id = 1;
  pass.case_id = "rmsnorm[dtype=f32,shape=7x4096]";
  pass.check_id = "rmsnorm";
  pass.kind = "op";
  pass.params_json = R"({"dtype":"f32","shape":[7,4096]})";
  pass.status = "pass";
  pass.duration_s = 0.25;
  pass.metrics = {{"max_abs_err", 2.384185791015625e-07}, {"cosine", 1.0}, {"median_ms", 0.125}};
  store::ProfileData steady;
  steady.phase = "steady";
  steady.name = "rmsnorm[7x4096]";
  steady.count = 3;
  steady.total_ns = 375000;
  steady.min_ns = 120000;
  steady.median_ns = 125000;
  steady.p99_ns = 130000;
  steady.mean_ns = 125000;
  steady.stddev_ns = 5000;
  steady.bytes = 229376;
  steady.flops = 143360;
  steady.samples_ns = {120000, 125000, 130000};  // not in the JSON
  pass.profiles = {steady};
  pass.details_json = R"({"route":"native"})";
  run.results.push_back(pass);

  store::ResultData fail;
  fail.id = 2;
  fail.case_id = "rope[dtype=bf16]";
  fail.check_id = "rope";
  fail.kind = "op";
  fail.params_json = R"({"dtype":"bf16"})";
  fail.status = "fail";
  fail.duration_s = 0.5;
  fail.message = "max_abs_err 0.5 > atol 0.016 at [3, 2, 17]";
  fail.metrics = {{"max_abs_err", 0.5},
                  {"cosine", std::numeric_limits<double>::quiet_NaN()},
                  {"max_ulp", std::numeric_limits<double>::infinity()}};
  fail.details_json =
      R"({"outputs":[{"name":"y","atol":0.016,"rtol":0.016,"failures":["max_abs_err 0.5 > atol 0.016"]}]})";
  run.results.push_back(fail);

  store::ResultData crash;
  crash.id = 3;
  crash.case_id = "attention[causal=1] \"quoted\"";
  crash.check_id = "attention";
  crash.kind = "op";
  crash.status = "crash";
  crash.message = "worker died: SIGSEGV\nbacktrace \x01 unavailable";
  crash.details_json = "not json {";
  run.results.push_back(crash);
  return run;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "line N: expected `...`, got `...`" for the first line where `a` and `b` differ.
std::string first_difference(const std::string& expected, const std::string& actual) {
  std::istringstream e(expected), a(actual);
  std::string le, la;
  for (int line = 1;; ++line) {
    const bool more_e = static_cast<bool>(std::getline(e, le));
    const bool more_a = static_cast<bool>(std::getline(a, la));
    if (!more_e && !more_a) return "no line differs (a final newline?)";
    if (!more_e || !more_a || le != la) {
      return "line " + std::to_string(line) + ": expected `" + (more_e ? le : "<end>") +
             "`, got `" + (more_a ? la : "<end>") + "`";
    }
  }
}

TEST(JsonWriterTest, MatchesTheGoldenFile) {
  test::TempDir dir;
  const std::string out = dir.file("run.json");
  write_json(out, fixed_run());
  const std::string actual = read_file(out);
  const std::string golden = test::source_path(kGolden);
  if (std::getenv("H0_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden, std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << golden;
  }
  ASSERT_TRUE(std::filesystem::exists(golden))
      << golden << " is missing; H0_UPDATE_GOLDEN=1 writes it";
  const std::string expected = read_file(golden);
  if (actual != expected) {
    const std::string kept =
        (std::filesystem::temp_directory_path() / "h0-run.json.actual").string();
    std::ofstream(kept, std::ios::binary) << actual;
    ADD_FAILURE() << "the JSON report differs from " << kGolden << ": "
                  << first_difference(expected, actual) << "\n  see: diff -u " << golden << " "
                  << kept << "\n  if the change is intended: H0_UPDATE_GOLDEN=1 and rerun";
  }
}

TEST(JsonWriterTest, LeavesOutRawSamplesAndPlatformContent) {
  const std::string text = run_json(fixed_run()).dump();
  EXPECT_EQ(text.find("samples"), std::string::npos);
  EXPECT_EQ(text.find("name: cpu"), std::string::npos);
}

TEST(JsonWriterTest, FieldsAndValues) {
  const nlohmann::json j = run_json(fixed_run());
  EXPECT_EQ(j["counts"], nlohmann::json({{"pass", 1}, {"fail", 1}, {"crash", 1}}));
  EXPECT_EQ(j["stack"]["versions"]["backend"]["op_library"], "OpenBLAS 0.3.21");
  EXPECT_EQ(j["cases"][0]["params"]["shape"], nlohmann::json({7, 4096}));
  EXPECT_EQ(j["cases"][1]["metrics"]["cosine"], "nan");
  EXPECT_EQ(j["cases"][1]["metrics"]["max_ulp"], "inf");
  EXPECT_EQ(j["cases"][2]["details"], "not json {");  // kept as text
  EXPECT_EQ(j["cases"][2]["params"], nlohmann::json::object());
  EXPECT_EQ(j["run"]["labels"]["driver"], "535.104");
}

TEST(JsonWriterTest, InvalidUtf8IsReplacedNotFatal) {
  store::RunData run = fixed_run();
  run.results[0].message = "bad \xff byte";
  test::TempDir dir;
  write_json(dir.file("run.json"), run);
  EXPECT_NE(read_file(dir.file("run.json")).find("bad \xef\xbf\xbd byte"), std::string::npos);
}

TEST(JsonWriterTest, UnwritablePathIsAnInputError) {
  test::TempDir dir;
  std::filesystem::create_directory(dir.file("taken"));
  EXPECT_THROW(write_json(dir.file("taken"), fixed_run()), InputError);  // a directory
  EXPECT_TRUE(std::filesystem::is_directory(dir.file("taken")));
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries, (void)e;
  EXPECT_EQ(entries, 1) << "a temporary file was left behind";
}

}  // namespace
}  // namespace h0::report
