// The run sink: one record, built once by the RunRecorder, heard by every listener in order; the
// store then holds that record field for field, so JSON and JUnit written from it equal what a
// reader of the store would write.
#include "run/listener.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "report/json_writer.h"
#include "report/junit_writer.h"
#include "test_util.h"

namespace h0::run {
namespace {

store::RunStart a_start() {
  store::RunStart s;
  s.suite = "ops";
  s.suite_file = "suites/ops.yaml";
  s.platform = "cpu";
  s.backend = "host";
  s.versions_json = R"({"backend":{"op_library":"test"}})";
  s.labels = {{"stack", "a"}};
  return s;
}

CaseOutcome an_outcome(const std::string& id, Status status) {
  CaseOutcome c{id, "check/" + id, "op", {}, {}};
  c.result.status = status;
  c.result.message = "said by " + id;
  c.result.duration_s = 0.25;
  c.result.metrics = {{"max_abs_err", 1e-3}, {"cosine", 0.999}};
  c.result.details = {{"worst", {{"index", 3}}}};
  return c;
}

// Writes down what it hears.
struct Log : RunListener {
  std::vector<std::string> heard;
  void run_started(store::RunData& run, size_t total) override {
    heard.push_back("start " + std::to_string(run.results.size()) + "/" + std::to_string(total));
  }
  void case_finished(const store::RunData& run, const store::ResultData& r, size_t) override {
    heard.push_back("case " + r.case_id + " " + r.status + " #" +
                    std::to_string(run.results.size()));
  }
  void run_finished(const store::RunData& run) override {
    heard.push_back("finish " + run.status + (run.finished_at.empty() ? " unfinished" : ""));
  }
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(RunRecorder, EveryListenerHearsTheRunInOrder) {
  Log first, second;
  RunRecorder recorder({&first, &second});
  recorder.start(a_start(), 3);
  recorder.add(an_outcome("a", Status::kPass));
  recorder.add(an_outcome("b", Status::kXpass));
  recorder.finish();
  const std::vector<std::string> expected = {"start 0/3", "case a pass #1", "case b xpass #2",
                                             "finish pass"};
  EXPECT_EQ(first.heard, expected);
  EXPECT_EQ(second.heard, expected);
  EXPECT_EQ(recorder.run().results.size(), 2u);
}

TEST(RunRecorder, AFailingCaseFailsTheRun) {
  for (Status s : {Status::kFail, Status::kError, Status::kCrash, Status::kTimeout}) {
    RunRecorder recorder({});
    recorder.start(a_start(), 2);
    recorder.add(an_outcome("a", Status::kPass));
    recorder.add(an_outcome("b", s));
    recorder.finish();
    EXPECT_EQ(recorder.run().status, "fail") << status_name(s);
  }
  RunRecorder recorder({});
  recorder.start(a_start(), 2);
  recorder.add(an_outcome("a", Status::kSkip));
  recorder.add(an_outcome("b", Status::kXfail));
  recorder.finish();
  EXPECT_EQ(recorder.run().status, "pass");
}

// What the files say is what the store holds: the JSON and JUnit written from the recorder's
// record equal those written from the run loaded back, identity and times included.
TEST(StoreListener, TheStoreHoldsTheRecordTheOtherListenersWrote) {
  test::TempDir dir;
  StoreListener db(dir.file("r.db"));
  FileListener json(dir.file("run.json"), &report::write_json);
  FileListener junit(dir.file("run.xml"), &report::write_junit);
  RunRecorder recorder({&db, &json, &junit});
  EXPECT_EQ(db.db(), nullptr);  // opened when the run starts
  recorder.start(a_start(), 3, "2026-12-05T10:00:00.000Z");
  ASSERT_NE(db.db(), nullptr);
  EXPECT_GT(db.run_id(), 0);
  recorder.add(an_outcome("a", Status::kPass));
  recorder.add(an_outcome("b", Status::kFail));
  recorder.add(an_outcome("c", Status::kXpass));
  recorder.finish();

  const auto stored = db.db()->load_run(db.run_id());
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->uuid, recorder.run().uuid);
  EXPECT_FALSE(stored->uuid.empty());
  EXPECT_EQ(stored->started_at, "2026-12-05T10:00:00.000Z");
  EXPECT_EQ(stored->finished_at, recorder.run().finished_at);
  EXPECT_EQ(stored->status, "fail");
  EXPECT_EQ(
      read(dir.file("run.json")),
      report::run_json(*stored).dump(1, ' ', false, nlohmann::json::error_handler_t::replace) +
          "\n");
  EXPECT_EQ(read(dir.file("run.xml")), report::junit_xml(*stored));
  EXPECT_EQ(db.db()->list_runs().size(), 1u);
}

TEST(TerminalListener, QuietPrintsTheFailingCasesAndTheSummary) {
  test::TempDir dir;
  std::FILE* out = std::fopen(dir.file("out").c_str(), "w");
  {
    TerminalListener terminal(out, /*quiet=*/true, /*color=*/false);
    RunRecorder recorder({&terminal});
    recorder.start(a_start(), 2);
    recorder.add(an_outcome("good", Status::kPass));
    recorder.add(an_outcome("bad", Status::kFail));
    recorder.finish();
  }
  std::fclose(out);
  const std::string text = read(dir.file("out"));
  EXPECT_EQ(text.find("good"), std::string::npos) << text;
  EXPECT_NE(text.find("[2/2] FAIL    bad"), std::string::npos) << text;
  EXPECT_NE(text.find("2 cases: 1 pass, 1 fail"), std::string::npos) << text;
}

}  // namespace
}  // namespace h0::run
