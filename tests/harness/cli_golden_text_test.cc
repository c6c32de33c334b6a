// What `harness run` and `harness day0` write for a run — its JSON and its JUnit — held as
// golden text (tests/data/golden_text/), so a change to how a run reaches its writers (the run
// sink) cannot change a byte of them unnoticed; and the store holds exactly that run, written once.
//
// What varies between two runs of the same thing is normalized before comparing: the run's
// identity (id, uuid, times, host), the harness's own build (version, commit, compiler), paths of
// temporary folders and of this checkout, and every number (durations, timings, ports). What is
// left is the shape: every case, in order, with its check, kind, status, message words, metric
// names, detail keys, JUnit elements and properties.
//
// H0_UPDATE_GOLDEN_TEXT=1 rewrites the golden files (after a change meant to alter the output).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "cli_util.h"
#include "store/sqlite_store.h"

namespace h0 {
namespace {

using test::run_harness;
using Json = nlohmann::json;

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Paths and numbers out of a text: the temporary folder, the checkout, any other /tmp path, then
// every number (an id such as "stage/01-config" becomes "stage/#-config" on both sides alike).
std::string normalized_text(std::string s, const std::string& tmp) {
  const auto replace_all = [&](const std::string& from, const std::string& to) {
    if (from.empty()) return;
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
      s.replace(at, from.size(), to);
  };
  replace_all(std::filesystem::weakly_canonical(tmp).string(), "<tmp>");
  replace_all(tmp, "<tmp>");
  replace_all(std::filesystem::weakly_canonical(test::source_path("")).string(), "<src>");
  s = std::regex_replace(s, std::regex("/tmp/[^\"'<>\\s,;)]+"), "<tmp>");
  s = std::regex_replace(s, std::regex("top op [^ ]+"), "top op *");  // ranked by time
  s = std::regex_replace(s, std::regex("-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?"), "#");
  // The serving batch check polls the engine's running-requests gauge while the batch runs; on a
  // loaded machine a short batch can fall between two polls (serving_check.cc says so), and then
  // its message names only the streamed tokens' count: which of the two it names is timing.
  s = std::regex_replace(s, std::regex("# by harness_engine_requests_running, "), "");
  // The machine and the harness's own build, as the JUnit properties name them.
  s = std::regex_replace(
      s, std::regex("(<property name=\"stack\\.(harness|backend)\\.[a-z_]+\" value=\")[^\"]*\""),
      "$1*\"");
  s = std::regex_replace(
      s, std::regex("(<property name=\"(run\\.uuid|fingerprint)\" value=\")[^\"]*\""), "$1*\"");
  s = std::regex_replace(s, std::regex("(timestamp|hostname)=\"[^\"]*\""), "$1=\"*\"");
  return s;
}

Json normalized_json(const Json& j, const std::string& tmp, bool every_element = false) {
  if (j.is_number()) return "#";
  if (j.is_string()) return normalized_text(j.get<std::string>(), tmp);
  if (j.is_array()) {  // but the run's cases, an array's first element stands for the rest
    const size_t keep = every_element ? j.size() : 1;
    Json out = Json::array();
    for (size_t i = 0; i < j.size() && i < keep; ++i) out.push_back(normalized_json(j[i], tmp));
    if (j.size() > keep) out.push_back("...");
    return out;
  }
  if (!j.is_object()) return j;
  Json out = Json::object();
  for (const auto& [key, value] : j.items()) {
    // The run's identity, the machine's description (versions), and what is ranked by time.
    const bool identity = key == "uuid" || key == "started_at" || key == "finished_at" ||
                          key == "host" || key == "fingerprint" || key == "versions" ||
                          key == "top_ops" || (key == "name" && j.value("phase", "") == "op");
    out[normalized_text(key, tmp)] =
        identity ? Json("*") : normalized_json(value, tmp, key == "cases");
  }
  return out;
}

// One line per case, so a difference names its case.
std::string json_lines(const Json& run) {
  Json head = run;
  head.erase("cases");
  std::string out = head.dump() + "\n";
  for (const Json& c : run["cases"]) out += c.dump() + "\n";
  return out;
}

// Compares `actual` with the golden file (or rewrites it under H0_UPDATE_GOLDEN_TEXT).
void expect_golden(const std::string& actual, const std::string& name) {
  const std::string path = test::source_path("tests/data/golden_text/" + name);
  if (std::getenv("H0_UPDATE_GOLDEN_TEXT") != nullptr) {
    std::ofstream(path) << actual;
    return;
  }
  const std::string expected = read(path);
  ASSERT_FALSE(expected.empty()) << path << " is missing (H0_UPDATE_GOLDEN_TEXT=1 writes it)";
  if (expected == actual) return;
  size_t at = 0;  // the first difference, with some context
  while (at < expected.size() && at < actual.size() && expected[at] == actual[at]) ++at;
  const size_t from = at > 200 ? at - 200 : 0;
  ADD_FAILURE() << name << " differs from the golden text at byte " << at << ":\n--- expected\n"
                << expected.substr(from, 400) << "\n--- actual\n"
                << actual.substr(from, 400);
}

// The run the JSON names is the store's one run, with the same identity and results.
void expect_stored_once(const std::string& db_path, const Json& run_json) {
  auto db = store::SqliteStore::open(db_path);
  const auto runs = db->list_runs();
  ASSERT_EQ(runs.size(), 1u);
  const auto stored = db->load_run(runs[0].id);
  ASSERT_TRUE(stored.has_value());
  const Json& run = run_json["run"];
  EXPECT_EQ(run["id"], stored->id);
  EXPECT_EQ(run["uuid"], stored->uuid);
  EXPECT_EQ(run["started_at"], stored->started_at);
  EXPECT_EQ(run["finished_at"], stored->finished_at);
  EXPECT_EQ(run["status"], stored->status);
  EXPECT_EQ(run_json["stack"]["fingerprint"], stored->stack.fingerprint);
  ASSERT_EQ(run_json["cases"].size(), stored->results.size());
  for (size_t i = 0; i < stored->results.size(); ++i) {
    EXPECT_EQ(run_json["cases"][i]["id"], stored->results[i].case_id);
    EXPECT_EQ(run_json["cases"][i]["status"], stored->results[i].status);
    EXPECT_EQ(run_json["cases"][i]["message"], stored->results[i].message);
  }
}

// A suite with every status a run can hold but crash and timeout: pass (a plan, an op), fail
// (an op against an impossible bound), skip, xfail and xpass.
constexpr const char* kSuite = R"(suite: golden-text
description: every status of a run
checks:
  - id: plan/llama-8b
    kind: plan
    model: tests/data/configs/llama-3.1-8b.json
    plan: {tp: 1}
    weight_dtype: bf16
    device_memory: 80GiB
    max_model_len: 8192
    expect: {fits: true}
  - id: rmsnorm
    kind: op
    op: rmsnorm
    golden: reference
    inputs: {seed: 7}
    matrix: {dtype: [f32, bf16], shape: [[4, 64]]}
  - id: silu/impossible
    kind: op
    op: silu
    golden: reference
    dtype: bf16
    shape: [4, 64]
    inputs: {seed: 7, x: {normal: {mean: 0, std: 30}}}
    tolerance: {atol: 0, rtol: 0, max_abs_err_max: 0}
  - id: silu/skipped
    kind: op
    op: silu
    golden: reference
    dtype: f32
    shape: [4, 64]
    skip: not on this platform
  - id: silu/expected-to-fail
    kind: op
    op: silu
    golden: reference
    dtype: bf16
    shape: [4, 64]
    inputs: {seed: 7, x: {normal: {mean: 0, std: 30}}}
    tolerance: {atol: 0, rtol: 0, max_abs_err_max: 0}
    xfail: a known bound
  - id: silu/stale-xfail
    kind: op
    op: silu
    golden: reference
    dtype: f32
    shape: [4, 64]
    xfail: fixed since
)";

TEST(GoldenText, RunWritesTheSameJsonAndJunit) {
  test::TempDir dir;
  std::ofstream(dir.file("suite.yaml")) << kSuite;
  const auto r = run_harness("run " + dir.file("suite.yaml") + " --db " + dir.file("r.db") +
                             " --json " + dir.file("run.json") + " --junit " + dir.file("run.xml") +
                             " --platform configs/platforms/reference.yaml");
  EXPECT_EQ(r.code, 1) << r.out << r.err;  // silu/impossible fails
  const Json run = Json::parse(read(dir.file("run.json")));
  expect_golden(json_lines(normalized_json(run, dir.path())), "run.json");
  expect_golden(normalized_text(read(dir.file("run.xml")), dir.path()), "run.xml");
  expect_stored_once(dir.file("r.db"), run);
}

// A model without shipped goldens (tiny-llama under another name), so every generated case of
// day0 runs: op cases at its shapes, layer and model cases against --golden, the e2e cases, and
// the accuracy stage.
TEST(GoldenText, Day0WritesTheSameJsonAndJunit) {
  test::TempDir dir;
  test::copy_tiny_llama_without_shipped_goldens(dir);
  std::filesystem::copy_file(test::source_path("golden/eval/tiny-llama/format.json"),
                             dir.file("goldens/format.json"));
  const auto r = run_harness("day0 --model " + dir.file("my-llama") + " --golden " +
                             dir.file("goldens") + " --eval suites/tasks/format.jsonl --db " +
                             dir.file("d.db") + " --out " + dir.file("out") + " --keep-going");
  EXPECT_EQ(r.code, 1) << r.out << r.err;  // the accuracy stage cannot decide on 98 items
  const Json run = Json::parse(read(dir.file("out/day0.json")));
  expect_golden(json_lines(normalized_json(run, dir.path())), "day0.json");
  expect_golden(normalized_text(read(dir.file("out/day0.xml")), dir.path()), "day0.xml");
  expect_stored_once(dir.file("d.db"), run);
}

}  // namespace
}  // namespace h0
