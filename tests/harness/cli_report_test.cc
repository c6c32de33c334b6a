// `harness report` end to end, checked in a real headless Chromium. The store holds real
// `harness run`s of a few ops-suite cases on three stacks of the faulty plugin (v2 and v3 scale
// matmul's output: a regression at v2), a run written through the store API whose check id,
// message and stack label carry script-injection payloads, and a Day-0 run. Each page's DOM
// (--dump-dom) must show: no JavaScript error or CSP violation (assets/guard.js counts them on
// <html data-js-errors>), a completed render, the red and outlined matrix cell, charts with data
// points, and the payloads as text. Without /usr/bin/chromium the tests fail (harness/setup
// installs it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "harness/cli_util.h"
#include "report/html_text.h"
#include "store/sqlite_store.h"

namespace h0 {
namespace {

namespace fs = std::filesystem;
using test::run_harness;

constexpr const char* kChromium = "/usr/bin/chromium";
constexpr const char* kFilter =
    "matmul[dtype=f32,shape=1x64x32]:add[dtype=f32*:rmsnorm[dtype=f32,shape=1x64]:softmax[dtype="
    "f32*";
constexpr const char* kMatmul = "matmul[dtype=f32,shape=1x64x32]";
// Each payload, if it ever became markup, would mark <html data-pwned>.
const std::string kScriptPayload =
    "<script>document.documentElement.setAttribute('data-pwned','1')</script>";
const std::string kAttrPayload =
    "\"onmouseover=\"document.documentElement.setAttribute('data-pwned','2')";
const std::string kImgPayload =
    "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','3')\">";

struct Site {
  test::TempDir dir;
  std::string setup_error;  // why the site could not be built
  nlohmann::json summary;   // `harness report --json`
  std::string out() const { return dir.file("site"); }
};

std::string platform_file(const test::TempDir& dir, const std::string& name,
                          const std::string& options) {
  std::ofstream(dir.file(name)) << "platform: faulty\nbackend: {lib: " << H0_FAULTY_PLUGIN
                                << ", options: " << options << "}\n";
  return dir.file(name);
}

store::ResultData result(const std::string& case_id, const std::string& status,
                         const std::string& message) {
  store::ResultData r;
  r.case_id = r.check_id = case_id;
  r.kind = "op";
  r.status = status;
  r.message = message;
  r.metrics = {{"max_abs_err", status == "pass" ? 1e-7 : 0.5}};
  return r;
}

// A passing result of check `k` timed at `median_ns` in its steady phase (with `samples_ns`).
store::ResultData timed_result(double median_ns, std::vector<double> samples_ns = {}) {
  store::ResultData r = result("k", "pass", "");
  store::ProfileData p;
  p.phase = "steady";
  p.name = "k";
  p.count = samples_ns.empty() ? 1 : int64_t(samples_ns.size());
  p.median_ns = median_ns;
  p.samples_ns = std::move(samples_ns);
  r.profiles = {p};
  return r;
}

void write_run(store::SqliteStore& db, const std::string& suite, const std::string& platform,
               const std::map<std::string, std::string>& labels,
               const std::vector<store::ResultData>& results) {
  store::RunStart start;
  start.suite = suite;
  start.platform = platform;
  start.backend = "api";
  start.versions_json = nlohmann::json(labels).dump();
  start.labels = labels;
  const int64_t id = db.begin_run(start);
  for (const auto& r : results) db.add_result(id, r);
  db.finish_run(id, "fail");
}

// Three stacks through `harness run`, then the payload and Day-0 runs through the store API.
void build_site(Site* site) {
  const std::string db = site->dir.file("results.db");
  const std::string good = platform_file(site->dir, "good.yaml", "{fault: none}");
  const std::string bad = platform_file(site->dir, "bad.yaml",
                                        "{faults: [{op: matmul, fault: scale, magnitude: 0.01}]}");
  const std::vector<std::pair<std::string, std::string>> stacks = {
      {"v1", good}, {"v2", bad}, {"v3", bad}};
  for (const auto& [label, platform] : stacks) {
    const auto r =
        run_harness("run suites/ops.yaml -q --filter '" + std::string(kFilter) +
                    "' --label stack=" + label + " --platform " + platform + " --db " + db);
    if (r.code != (label == "v1" ? 0 : 1))
      site->setup_error += "harness run " + label + ": " + r.out + r.err;
  }
  {
    auto store = store::SqliteStore::open(db);
    write_run(*store, "ops", "xss-platform", {{"stack", kScriptPayload}},
              {result(kScriptPayload + kAttrPayload, "fail", kImgPayload + kScriptPayload)});
    write_run(*store, "day0", "day0-platform", {{"stack", "d1"}},
              {result("day0-op-a", "pass", ""), result("day0-op-b", "fail", "wrong")});
  }
  const auto r = run_harness("report --db " + db + " --out " + site->out() + " --json");
  if (r.code != 0) {
    site->setup_error += "harness report: " + r.out + r.err;
    return;
  }
  site->summary = nlohmann::json::parse(r.out);
}

// Built once per test process; its directory goes at exit.
Site& site() {
  static Site s;
  static const bool built = (build_site(&s), true);
  (void)built;
  return s;
}

// The DOM of `page` (under the site) after its scripts ran, from headless Chromium.
// Each call has its own profile directory, so tests running at once do not share a browser.
std::string dump_dom(const std::string& page) {
  const test::TempDir profile;
  const std::string cmd =
      "timeout 120 " + std::string(kChromium) +
      " --headless --no-sandbox --disable-gpu --user-data-dir=" + profile.path() +
      " --virtual-time-budget=5000 --dump-dom 'file://" + site().out() + "/" + page +
      "' 2>/dev/null";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

std::string attribute(const std::string& dom, const std::string& name) {
  std::smatch m;
  return std::regex_search(dom, m, std::regex(" " + name + "=\"([^\"]*)\"")) ? m[1].str()
                                                                             : "(absent)";
}

// A page that rendered completely, with no JavaScript error, no CSP violation, no injection.
void expect_clean_render(const std::string& dom, const std::string& page) {
  ASSERT_FALSE(dom.empty()) << page << ": chromium printed nothing";
  EXPECT_EQ(attribute(dom, "data-js-errors"), "0")
      << page << ": " << attribute(dom, "data-js-error-log");
  EXPECT_EQ(attribute(dom, "data-rendered"), "1") << page;
  EXPECT_EQ(dom.find("data-pwned=\""), std::string::npos) << page << ": a payload ran";
}

// `text` as Chromium serializes a text node: & < > escaped, quotes as they are.
std::string as_text(const std::string& text) {
  std::string out;
  for (const char c : text)
    out += c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;" : std::string(1, c);
  return out;
}

// The cells of the matrix row of `case_id`: "status" or "status+regression", column by column.
std::vector<std::string> matrix_row(const std::string& dom, const std::string& case_id) {
  const size_t start = dom.find("<tr data-case=\"" + report::html_escape(case_id) + "\"");
  if (start == std::string::npos) return {};
  const std::string row = dom.substr(start, dom.find("</tr>", start) - start);
  std::vector<std::string> cells;
  const std::regex cell("<td class=\"[^\"]*\"( data-status=\"(\\w+)\")?( data-regression=\"1\")?");
  for (std::sregex_iterator it(row.begin(), row.end(), cell), end; it != end; ++it) {
    cells.push_back((*it)[2].str() + ((*it)[3].matched ? "+regression" : ""));
  }
  return cells;
}

class CliReport : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kChromium))
        << kChromium << " is missing: run harness/setup (Debian package chromium)";
    ASSERT_EQ(site().setup_error, "");
  }
};

TEST_F(CliReport, SummaryCountsEveryPage) {
  const auto& j = site().summary;
  EXPECT_EQ(j["runs"], 5);
  EXPECT_EQ(j["checks"], 7);  // 4 ops cases, the payload, 2 Day-0 cases
  EXPECT_EQ(j["pages"], 1 + 5 + 7);
  EXPECT_EQ(j["charts"], true);
  EXPECT_GT(j["bytes"].get<int64_t>(), 0);
  EXPECT_TRUE(fs::exists(site().out() + "/index.html"));
  EXPECT_TRUE(fs::exists(site().out() + "/assets/chart.min.js"));
}

TEST_F(CliReport, MatrixHasTheRegressionCell) {
  const std::string dom = dump_dom("index.html");
  expect_clean_render(dom, "index.html");
  // Columns: v1, v2, v3 of platform faulty, then the payload's and the Day-0 stacks.
  const std::vector<std::string> matmul = {"pass", "fail+regression", "fail", "", ""};
  EXPECT_EQ(matrix_row(dom, kMatmul), matmul);
  const std::vector<std::string> add = {"pass", "pass", "pass", "", ""};
  EXPECT_EQ(matrix_row(dom, "add[dtype=f32,shape=7x4096]"), add);
  size_t regressions = 0;
  for (size_t at = 0; (at = dom.find("data-regression=\"1\"", at)) != std::string::npos; ++at)
    ++regressions;
  EXPECT_EQ(regressions, 1u);
  EXPECT_NE(dom.find("max_abs_err = 0.04"), std::string::npos)
      << "a cell's hover text names the key metric";
}

TEST_F(CliReport, IndexShowsTheDayZeroChecklist) {
  const std::string dom = dump_dom("index.html");
  EXPECT_NE(dom.find("<section id=\"day0\""), std::string::npos);
  EXPECT_NE(dom.find("data-stage=\"op\"><span class=\"st st-fail\">"), std::string::npos);
  EXPECT_NE(dom.find("data-stage=\"plan\"><span class=\"st st-not run\">"), std::string::npos);
}

TEST_F(CliReport, DayZeroChecklistLinksItsRunFromEveryPage) {
  std::string page;
  for (const auto& e : fs::directory_iterator(site().out() + "/runs")) {
    std::ifstream in(e.path());
    const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (html.find("day0-platform") != std::string::npos)
      page = "runs/" + e.path().filename().string();
  }
  ASSERT_FALSE(page.empty());
  // Under runs/ the site root is "../": the checklist links ../runs/run-N.html, not runs/runs/.
  const auto checklist_link = [&](const std::string& file) {
    std::ifstream in(site().out() + "/" + file);
    const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t at = html.find("<section id=\"day0\"");
    if (at == std::string::npos) return std::string();
    const size_t href = html.find("href=\"", at);
    return html.substr(href + 6, html.find('"', href + 6) - href - 6);
  };
  EXPECT_EQ(checklist_link(page), "../" + page);
  EXPECT_EQ(checklist_link("index.html"), page);
}

TEST_F(CliReport, CheckPageChartsHaveDataPoints) {
  const std::string page = "checks/" + report::file_stem(kMatmul) + ".html";
  const std::string dom = dump_dom(page);
  expect_clean_render(dom, page);
  EXPECT_NE(dom.find("<canvas id=\"chart-key\" data-points=\"3\""), std::string::npos);
  EXPECT_NE(dom.find("<canvas id=\"chart-latency\" data-points=\"3\""), std::string::npos);
  EXPECT_NE(dom.find("worst index"), std::string::npos) << "the last failure's evidence";
  EXPECT_NE(dom.find("<table class=\"grid per-stack\">"), std::string::npos);
}

TEST_F(CliReport, RunPageShowsItsDiffAndCases) {
  std::string page;
  for (const auto& e : fs::directory_iterator(site().out() + "/runs")) {
    std::ifstream in(e.path());
    const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (html.find("stack v2,") != std::string::npos) page = "runs/" + e.path().filename().string();
  }
  ASSERT_FALSE(page.empty());
  const std::string dom = dump_dom(page);
  expect_clean_render(dom, page);
  EXPECT_NE(dom.find("<b class=\"diff-regressions\">1</b>"), std::string::npos);
  EXPECT_NE(dom.find("<p id=\"case-count\" class=\"muted\">4 cases</p>"), std::string::npos);
}

TEST_F(CliReport, PayloadsFromTheStoreAppearAsText) {
  const std::string check = "checks/" + report::file_stem(kScriptPayload + kAttrPayload) + ".html";
  std::string run_page;
  for (const auto& e : fs::directory_iterator(site().out() + "/runs")) {
    std::ifstream in(e.path());
    const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (html.find("xss-platform") != std::string::npos)
      run_page = "runs/" + e.path().filename().string();
  }
  for (const std::string& page : {std::string("index.html"), run_page, check}) {
    const std::string dom = dump_dom(page);
    expect_clean_render(dom, page);
    EXPECT_NE(dom.find(as_text(kScriptPayload + kAttrPayload)), std::string::npos)
        << page << ": the check id as text";
    if (page != "index.html") {
      EXPECT_NE(dom.find(as_text(kImgPayload)), std::string::npos)
          << page << ": the message as text";
    }
    EXPECT_EQ(dom.find("<script>document"), std::string::npos)
        << page << ": a payload became an element";
    EXPECT_EQ(dom.find("<img src=x"), std::string::npos) << page << ": a payload became an element";
    EXPECT_EQ(dom.find(" onmouseover="), std::string::npos)
        << page << ": a payload became an attribute";
  }
}

TEST(CliReportErrors, MissingStoreAndBadSinceAreInputErrors) {
  test::TempDir dir;
  auto r = run_harness("report --db " + dir.file("none.db") + " --out " + dir.file("site"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("none.db: no results store here"), std::string::npos) << r.err;
  store::SqliteStore::open(dir.file("empty.db"));
  r = run_harness("report --db " + dir.file("empty.db") + " --out " + dir.file("site") +
                  " --since 3x");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--since: expected a duration"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace h0

namespace h0 {
namespace {

// The index leads with what is wrong: the regression (matmul at v2, against v1) first, with what
// flagged it, then the checks that fail as they failed before; the matrix rows carry whether
// they are failing or regressed, for its "failing or regressed only" switch.
TEST_F(CliReport, WhatIsWrongLeadsTheIndex) {
  const std::string index = test::read_file(site().out() + "/index.html");
  const size_t wrong = index.find("<section id=\"wrong\">");
  ASSERT_NE(wrong, std::string::npos);
  EXPECT_LT(wrong, index.find("<section id=\"overview\">"));
  EXPECT_LT(wrong, index.find("<section id=\"matrix-section\">"));
  const std::string section = index.substr(wrong, index.find("</section>", wrong) - wrong);
  const size_t regression = section.find("status pass -&gt; fail vs run #1");
  ASSERT_NE(regression, std::string::npos) << section;
  EXPECT_NE(section.find(report::html_escape(kMatmul), regression - 400), std::string::npos);
  const size_t failing = section.find("<td>failing");
  ASSERT_NE(failing, std::string::npos) << section;
  EXPECT_LT(regression, failing) << "regressions are listed first";
  EXPECT_NE(section.find("1 regressed, "), std::string::npos) << section;
  // The fixture's stacks are the faulty plugin's: a fault injector, and the page says so.
  EXPECT_NE(section.find("faulty <span class=\"badge injector\""), std::string::npos) << section;
  EXPECT_NE(index.find("fault injector</span>", index.find("<section id=\"overview\">")),
            std::string::npos);
  EXPECT_NE(index.find("id=\"matrix-bad\""), std::string::npos);
  const std::string dom = dump_dom("index.html");
  expect_clean_render(dom, "index.html");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      dom, m,
      std::regex("<tr data-case=\"" +
                 std::regex_replace(std::string(kMatmul), std::regex("[\\[\\]]"), "\\$&") +
                 "\"[^>]*data-bad=\"(\\d)\"")));
  EXPECT_EQ(m[1].str(), "1");
  ASSERT_TRUE(std::regex_search(
      dom, m,
      std::regex("<tr data-case=\"add\\[dtype=f32,shape=7x4096\\]\"[^>]*data-bad=\"(\\d)\"")));
  EXPECT_EQ(m[1].str(), "0");
}

// --compare-platform: a run on another platform (no previous run of its own) is diffed against
// the reference platform's latest run of the same suite; its regressions lead the index.
TEST(CliReportCompare, AnotherPlatformIsComparedWithTheReferencePlatform) {
  test::TempDir dir;
  const std::string db = dir.file("r.db");
  {
    auto store = store::SqliteStore::open(db);
    write_run(*store, "ops", "gpu-ref", {{"stack", "cuda-13"}},
              {result("a", "pass", ""), result("b", "pass", "")});
    write_run(*store, "ops", "npu", {{"stack", "cann-8"}},
              {result("a", "pass", ""), result("b", "fail", "off by 0.5")});
  }
  auto r = run_harness("report --db " + db + " --out " + dir.file("site") +
                       " --compare-platform gpu-ref");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string index = test::read_file(dir.file("site/index.html"));
  EXPECT_NE(index.find("<th>regressions vs gpu-ref"), std::string::npos);
  EXPECT_NE(index.find("status pass -&gt; fail vs gpu-ref run #1"), std::string::npos) << index;
  EXPECT_NE(index.find("1 regressed, 0 failing as before"), std::string::npos) << index;
  EXPECT_NE(index.find("no previous run"), std::string::npos);  // npu's own history is empty
  r = run_harness("report --db " + db + " --out " + dir.file("plain"));
  const std::string plain = test::read_file(dir.file("plain/index.html"));
  EXPECT_EQ(plain.find("vs gpu-ref"), std::string::npos);
  EXPECT_NE(plain.find("0 regressed, 1 failing as before, in the latest"), std::string::npos)
      << plain;
  EXPECT_EQ(plain.find("fault injector"), std::string::npos);  // npu's failure is its own
}

}  // namespace
}  // namespace h0

namespace h0 {
namespace {

// A check whose timing history stepped up 30% five runs ago (and stayed): the change point is
// listed with what is wrong for the platform's latest run, though every run passed.
TEST(CliReportCompare, ATimingChangePointIsListedWithWhatIsWrong) {
  test::TempDir dir;
  const std::string db = dir.file("r.db");
  {
    auto store = store::SqliteStore::open(db);
    for (int i = 1; i <= 19; ++i) {
      write_run(*store, "ops", "box", {{"stack", i >= 15 ? "v2" : "v1"}},
                {timed_result((i >= 15 ? 1.3e6 : 1e6) * (1 + 0.002 * (i % 5)))});
    }
  }
  const auto r = run_harness("report --db " + db + " --out " + dir.file("site"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string index = test::read_file(dir.file("site/index.html"));
  EXPECT_NE(index.find("timing change point at run #15: +30."), std::string::npos) << index;
  EXPECT_NE(index.find("1 regressed, 0 failing as before"), std::string::npos) << index;
}

}  // namespace
}  // namespace h0

namespace h0 {
namespace {

// Two runs of one stack minutes apart, the second on a loaded machine (every sample 60% slower):
// one run a side, Mann-Whitney calls it a regression (harness diff lists it), but "What is wrong"
// flags timing only by the nightly's rules (repeated runs, change points), so it lists nothing.
TEST(CliReportCompare, OnePairOfSameStackRunsIsNoTimingRegression) {
  test::TempDir dir;
  const std::string db = dir.file("r.db");
  {
    auto store = store::SqliteStore::open(db);
    for (const double scale : {1.0, 1.6}) {
      std::vector<double> samples;
      for (int i = 0; i < 30; ++i) samples.push_back(scale * (1e6 + 1e3 * (i % 7)));
      write_run(*store, "day0", "box", {{"stack", "v1"}},
                {timed_result(scale * 1.003e6, std::move(samples))});
    }
  }
  const auto diff = run_harness("diff --db " + db + " --base 1 --head 2 --json");
  ASSERT_NE(diff.out.find("\"mann-whitney\""), std::string::npos) << diff.out << diff.err;
  ASSERT_NE(diff.out.find("\"regression\""), std::string::npos) << diff.out;
  const auto r = run_harness("report --db " + db + " --out " + dir.file("site"));
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string index = test::read_file(dir.file("site/index.html"));
  const size_t wrong = index.find("<section id=\"wrong\">");
  ASSERT_NE(wrong, std::string::npos);
  const std::string section = index.substr(wrong, index.find("</section>", wrong) - wrong);
  EXPECT_EQ(section.find("timing"), std::string::npos) << section;
  EXPECT_NE(section.find("Nothing: no check fails or regressed"), std::string::npos) << section;
}

}  // namespace
}  // namespace h0
