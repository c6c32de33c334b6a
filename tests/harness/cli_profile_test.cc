// `harness profile import`: an engine's own trace (the PyTorch profiler's, made by
// golden/tools/gen_profile_trace.py from two separate runs on one machine) stored as a run, and
// `harness diff` of such runs: the same stack diffs clean; one kernel made 1.3x slower is named,
// and only it; a kernel replaced by another is named as appeared and vanished.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "harness/cli_util.h"
#include "test_gunzip.h"

namespace h0::test {
namespace {

using nlohmann::json;

const std::string kRun1 = "tests/data/traces/torch_cpu_tiny_mistral_run1.json.gz";
const std::string kRun2 = "tests/data/traces/torch_cpu_tiny_mistral_run2.json.gz";

json read_trace(const std::string& path) { return json::parse(test::gunzip(source_path(path))); }

// `t` as if every call of `kernel` had taken `factor` times as long: its duration grows by d, the
// calls and the step around it by d too, and what follows it on its thread starts d later.
json slowed(json t, const std::string& kernel, double factor) {
  std::map<std::string, std::vector<json*>> threads;
  for (json& e : t["traceEvents"]) {
    if (e.value("ph", "") == "X") threads[e["pid"].dump() + "/" + e["tid"].dump()].push_back(&e);
  }
  for (auto& [key, events] : threads) {
    std::stable_sort(events.begin(), events.end(), [](const json* a, const json* b) {
      const double ta = (*a)["ts"], tb = (*b)["ts"];
      return ta != tb ? ta < tb : (*a)["dur"].get<double>() > (*b)["dur"].get<double>();
    });
    std::vector<json*> open;
    double shift = 0;
    for (json* e : events) {
      (*e)["ts"] = (*e)["ts"].get<double>() + shift;
      const double ts = (*e)["ts"];
      while (!open.empty() &&
             (*open.back())["ts"].get<double>() + (*open.back())["dur"].get<double>() <= ts)
        open.pop_back();
      if ((*e)["name"] == kernel) {
        const double d = (factor - 1) * (*e)["dur"].get<double>();
        (*e)["dur"] = (*e)["dur"].get<double>() + d;
        for (json* o : open) (*o)["dur"] = (*o)["dur"].get<double>() + d;
        shift += d;
      }
      open.push_back(e);
    }
  }
  return t;
}

json renamed(json t, const std::string& from, const std::string& to) {
  for (json& e : t["traceEvents"])
    if (e.value("name", "") == from) e["name"] = to;
  return t;
}

std::string write_json(const TempDir& dir, const std::string& name, const json& t) {
  std::ofstream(dir.file(name)) << t.dump();
  return dir.file(name);
}

int64_t import(const TempDir& dir, const std::string& trace, const std::string& labels) {
  const auto r =
      run_harness("profile import " + trace + " --json --db " + dir.file("r.db") + " " + labels);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  return json::parse(r.out)["run"].get<int64_t>();
}

json diff(const TempDir& dir, int64_t base, int64_t head, int* code) {
  const auto r = run_harness("diff --json --db " + dir.file("r.db") + " --base " +
                             std::to_string(base) + " --head " + std::to_string(head));
  *code = r.code;
  return json::parse(r.out);
}

std::vector<std::string> kernels_with(const json& d, const std::string& verdict) {
  std::vector<std::string> out;
  for (const auto& p : d["performance"])
    if (p["verdict"] == verdict)
      out.push_back(p["phase"].get<std::string>() + " " + p["name"].get<std::string>());
  return out;
}

TEST(CliProfile, ImportStoresTheKernelsPerPhaseAsARun) {
  TempDir dir;
  const auto r = run_harness("profile import " + kRun1 + " --db " + dir.file("r.db") +
                             " --label vllm=0.32.0 --label driver=550.54");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("kernel calls on the host, 13 steps (1 prefill, 12 decode)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("steady/engine-decode:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("aten::mm"), std::string::npos) << r.out;
  const auto h = run_harness("history --json --db " + dir.file("r.db"));
  EXPECT_EQ(h.code, 0) << h.err;
}

// Two profiles of one stack, and the second with one kernel slowed.
struct EnginePair {
  const char* name;
  std::string run1, run2;
  std::string kernel;  // the one slowed 1.3x
};

void PrintTo(const EnginePair& e, std::ostream* os) { *os << e.name << " (" << e.kernel << ")"; }

class CliProfileDiff : public ::testing::TestWithParam<EnginePair> {};

// Two profiles of one stack (two runs of the same engine on this machine): no kernel moved. The
// second with its heaviest matmul 1.3x slower: that kernel is named in the decode phase (the
// prefill steps are too few to test), and nothing else.
TEST_P(CliProfileDiff, NamesTheSlowedKernelAndOnlyIt) {
  const EnginePair& e = GetParam();
  TempDir dir;
  const int64_t a = import(dir, e.run1, "--label stack=a");
  const int64_t b = import(dir, e.run2, "--label stack=a");
  int code = -1;
  const json same = diff(dir, a, b, &code);
  EXPECT_EQ(code, 0) << same.dump(1);
  EXPECT_EQ(kernels_with(same, "regression"), std::vector<std::string>{});
  EXPECT_EQ(kernels_with(same, "improvement"), std::vector<std::string>{});
  EXPECT_GT(same["summary"]["perf_unchanged"].get<int>(), 20);

  const std::string slow = write_json(dir, "slow.json", slowed(read_trace(e.run2), e.kernel, 1.3));
  const int64_t c = import(dir, slow, "--label stack=b");
  const json moved = diff(dir, a, c, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(kernels_with(moved, "regression"),
            (std::vector<std::string>{"steady/engine-decode " + e.kernel}))
      << moved.dump(1);
  EXPECT_EQ(kernels_with(moved, "improvement"), std::vector<std::string>{});
  for (const auto& p : moved["performance"]) {
    if (p["name"] == e.kernel && p["phase"] == "steady/engine-decode") {
      EXPECT_GT(p["change"].get<double>(), 0.15);
      EXPECT_LT(p["change"].get<double>(), 0.45);
    }
  }
  const auto text = run_harness("diff --db " + dir.file("r.db") + " --base " + std::to_string(a) +
                                " --head " + std::to_string(c));
  EXPECT_NE(text.out.find("slower  engine_profile  steady/engine-decode " + e.kernel),
            std::string::npos)
      << text.out;

  // Two runs a side (diff --runs 2: the run the unit, each run calibrated by the engine's own
  // kernels): the same kernel, and only it.
  const std::string slow1 =
      write_json(dir, "slow1.json", slowed(read_trace(e.run1), e.kernel, 1.3));
  const int64_t d = import(dir, slow1, "--label stack=b");
  const auto runs = run_harness("diff --json --runs 2 --db " + dir.file("r.db") + " --base " +
                                std::to_string(b) + " --head " + std::to_string(d));
  const json two = json::parse(runs.out);
  EXPECT_EQ(kernels_with(two, "regression"),
            (std::vector<std::string>{"steady/engine-decode " + e.kernel}))
      << two.dump(1);
  EXPECT_EQ(kernels_with(two, "improvement"), std::vector<std::string>{});
}

// The PyTorch profiler around transformers' forward (gen_profile_trace.py), and vLLM 0.32's CPU
// build serving tiny-llama (f32), profiled through its /start_profile and /stop_profile around 4
// completions of 12 tokens (its steps: execute_context_N(..)_generation_M(..)).
INSTANTIATE_TEST_SUITE_P(
    Engines, CliProfileDiff,
    ::testing::Values(EnginePair{"torch_transformers", kRun1, kRun2, "aten::mm"},
                      EnginePair{"vllm_cpu", "tests/data/traces/vllm_cpu_tiny_llama_run1.json.gz",
                                 "tests/data/traces/vllm_cpu_tiny_llama_run2.json.gz",
                                 "_C::onednn_mm"}),
    [](const ::testing::TestParamInfo<EnginePair>& p) { return std::string(p.param.name); });

// The classic regression: a kernel replaced by another (a fused one by an unfused one): the new
// one appeared — a regression by its share of the step — and the old one vanished.
TEST(CliProfile, DiffNamesTheKernelsThatAppearedAndVanished) {
  TempDir dir;
  const int64_t a = import(dir, kRun1, "");
  const std::string split =
      write_json(dir, "split.json", renamed(read_trace(kRun1), "aten::mm", "aten::mm_unfused"));
  const int64_t b = import(dir, split, "--label op_library=2");
  int code = -1;
  const json d = diff(dir, a, b, &code);
  EXPECT_EQ(code, 1);
  EXPECT_EQ(kernels_with(d, "appeared"),
            (std::vector<std::string>{"steady/engine-decode aten::mm_unfused",
                                      "steady/engine-prefill aten::mm_unfused"}));
  EXPECT_EQ(kernels_with(d, "vanished"),
            (std::vector<std::string>{"steady/engine-decode aten::mm",
                                      "steady/engine-prefill aten::mm"}));
  EXPECT_EQ(kernels_with(d, "regression"), std::vector<std::string>{});
  EXPECT_EQ(d["summary"]["perf_appeared"], 2);
  for (const auto& p : d["performance"]) {
    if (p["verdict"] == "appeared") {
      EXPECT_GT(p["share"].get<double>(), 0.01);
    }
  }
}

// The dashboard's check page: the engine's kernels per stack version, the one that moved first.
TEST(CliProfile, TheDashboardShowsTheKernelsPerStackTheMovedOneFirst) {
  TempDir dir;
  import(dir, kRun1, "--label stack=driver-550");
  const std::string slow = write_json(dir, "slow.json", slowed(read_trace(kRun1), "aten::mm", 2.0));
  import(dir, slow, "--label stack=driver-560");
  const auto r = run_harness("report --db " + dir.file("r.db") + " --out " + dir.file("site"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::string page;  // checks/engine_profile-<hash>.html
  for (const auto& f : std::filesystem::directory_iterator(dir.file("site/checks")))
    if (f.path().filename().string().rfind("engine_profile", 0) == 0) page = f.path().string();
  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t section = html.find("Engine kernels per stack version");
  ASSERT_NE(section, std::string::npos) << html.substr(0, 2000);
  const size_t decode = html.find("<h3>steady/engine-decode</h3>", section);
  ASSERT_NE(decode, std::string::npos);
  EXPECT_NE(html.find("driver-550", section), std::string::npos);
  EXPECT_NE(html.find("driver-560", section), std::string::npos);
  // The first kernel row of the decode table is aten::mm, the one that moved.
  const size_t first_row = html.find("<tr><td>", decode);
  ASSERT_NE(first_row, std::string::npos);
  EXPECT_EQ(html.substr(first_row, 17), "<tr><td>aten::mm<") << html.substr(decode, 600);
}

// Every duration times `factor`, as a machine that ran the engine slower would time it.
json scaled_all(json t, double factor) {
  for (json& e : t["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    e["ts"] = e["ts"].get<double>() * factor;
    e["dur"] = e["dur"].get<double>() * factor;
  }
  return t;
}

// The nightly history over engine profiles: eight nights of one stack, then eight where one
// kernel got 1.3x slower on a machine 20 % slower (8 a side: the change points' Mann-Whitney
// p < 0.001 needs 7): they name that kernel in both phases (each run calibrated by the engine's
// kernels), no other kernel; the machine shows in the steps.
TEST(CliProfile, HistoryNamesTheKernelThatMovedNotTheMachine) {
  TempDir dir;
  const std::string vllm = "tests/data/traces/vllm_cpu_tiny_llama_run1.json.gz";
  for (int night = 0; night < 8; ++night) import(dir, vllm, "--label stack=a");
  const std::string later = write_json(
      dir, "later.json", scaled_all(slowed(read_trace(vllm), "_C::onednn_mm", 1.3), 1.2));
  for (int night = 0; night < 8; ++night) import(dir, later, "--label stack=b");
  const auto r = run_harness("history --json --db " + dir.file("r.db"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> kernels;
  int steps = 0;
  const json history = json::parse(r.out);
  for (const auto& c : history["changes"]) {
    if (c["name"] == "(step)") {
      ++steps;
      EXPECT_GT(c["change"].get<double>(), 0.19);  // the machine's 20 %, and the kernel's share
    } else {
      kernels.push_back(c["phase"].get<std::string>() + " " + c["name"].get<std::string>());
    }
  }
  EXPECT_EQ(kernels, (std::vector<std::string>{"steady/engine-decode _C::onednn_mm",
                                               "steady/engine-prefill _C::onednn_mm"}))
      << r.out;
  EXPECT_EQ(steps, 3);
}

TEST(CliProfile, AMalformedTraceIsAnInputErrorAndCreatesNoStore) {
  TempDir dir;
  std::ofstream(dir.file("cut.json")) << R"js({"traceEvents":[{"ph":"X","name":"a")js";
  const auto r =
      run_harness("profile import " + dir.file("cut.json") + " --db " + dir.file("r.db"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cut.json: malformed trace JSON at byte"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("r.db")));
  const auto missing =
      run_harness("profile import " + dir.file("none.json") + " --db " + dir.file("r.db"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir.file("r.db")));
  EXPECT_EQ(run_harness("profile import --help").code, 0);
}

}  // namespace
}  // namespace h0::test
