// harness day0 [--model DIR] [--platform FILE] [--golden DIR] [--json]
// The Day-0 readiness checklist. Stages arrive issue by issue; one that does not exist yet is
// listed as not yet available, never as passed, and the run exits 0 only when every stage
// passed. The stages that exist today: operator coverage for the model's ops on the platform,
// and operator accuracy (suites/ops.yaml on the platform, limited to those ops).
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "checks/coverage.h"
#include "checks/runner.h"
#include "cli_output.h"
#include "commands.h"
#include "io/golden_manifest.h"
#include "suite/platform.h"
#include "suite/suite.h"

namespace h0::cli {
namespace {

namespace fs = std::filesystem;

struct Day0Options {
  std::string model = "configs/models/tiny-llava";
  std::string platform;
  std::string golden;
  bool json = false;
};

enum class StageStatus { kPass, kFail, kSkipped, kUnavailable };
const char* stage_status_name(StageStatus s) {
  switch (s) {
    case StageStatus::kPass: return "pass";
    case StageStatus::kFail: return "fail";
    case StageStatus::kSkipped: return "skipped";
    default: return "unavailable";
  }
}

struct StageResult {
  StageStatus status = StageStatus::kUnavailable;
  std::string summary;  // the key number or the reason
};

// What every stage runner sees.
struct Day0Context {
  const Day0Options& options;
  const suite::Platform& platform;
  std::set<std::string> model_ops;  // empty if the model's config is not readable
  std::string model_dtype;
  std::string model_problem;        // why model_ops is empty
};

StageResult run_coverage_stage(Day0Context& ctx) {
  if (ctx.model_ops.empty()) return {StageStatus::kSkipped, ctx.model_problem};
  auto be = backend::Backend::open({ctx.platform.backend, ctx.platform.lib, ctx.platform.options});
  const auto dtype = tensor::parse_dtype(ctx.model_dtype.empty() ? "bf16" : ctx.model_dtype);
  int native = 0, fallback = 0;
  std::string missing;
  for (const auto& row : checks::coverage(*be, {*dtype}, ctx.model_ops)) {
    const std::string word = checks::coverage_word(row.routes[0].second);
    native += word == "native";
    fallback += word == "decomposed" || word == "host";
    if (word == "missing") missing += (missing.empty() ? "" : ", ") + row.op;
  }
  std::string summary = std::to_string(native) + " native, " + std::to_string(fallback) + " fallback";
  if (!missing.empty()) return {StageStatus::kFail, summary + ", missing: " + missing};
  return {StageStatus::kPass, summary + " of the model's " + std::to_string(ctx.model_ops.size()) + " ops in " +
                                 tensor::dtype_name(*dtype)};
}

StageResult run_op_accuracy_stage(Day0Context& ctx) {
  checks::register_kinds_with_suite_parser();
  const std::string path = fs::exists("suites/ops.yaml") ? "suites/ops.yaml" : std::string(HARNESS_SOURCE_DIR) + "/suites/ops.yaml";
  const suite::Suite s = suite::load_suite(path);
  checks::RunOptions o;
  for (const auto& op : ctx.model_ops) {
    o.filter += (o.filter.empty() ? "" : ":") + op + "[*:" + op + "/*:*[op=" + op + ",*:dynamic/" + op + "*";
  }
  const checks::RunReport report = checks::run_suite(s, ctx.platform, o, nullptr);
  int failed = 0;
  std::string first_failure;
  for (const auto& c : report.cases) {
    if (checks::is_failure(c.result.status)) {
      ++failed;
      if (first_failure.empty()) first_failure = c.id + ": " + c.result.message;
    }
  }
  std::string summary = std::to_string(report.cases.size()) + " op cases, " + std::to_string(failed) + " failed";
  if (failed > 0) return {StageStatus::kFail, summary + " (first: " + first_failure + ")"};
  return {StageStatus::kPass, summary};
}

struct Stage {
  const char* id;
  const char* title;
  StageResult (*run)(Day0Context&);  // nullptr: not yet available
  const char* arrives_with;
};

// The Day-0 stages in order; a failed stage blocks the ones after it (the Day-0 issue refines
// the dependencies).
constexpr Stage kStages[] = {
    {"config", "config parsed, exact parameter counts", nullptr, "the models issue"},
    {"coverage", "operator coverage on this backend", &run_coverage_stage, ""},
    {"memory_plan", "memory plan fits the devices", nullptr, "the models issue"},
    {"load", "weights load and shard (checksums)", nullptr, "the models issue"},
    {"op_accuracy", "operator accuracy for this model's ops", &run_op_accuracy_stage, ""},
    {"layer_accuracy", "layer accuracy", nullptr, "the executor issue"},
    {"model", "full-model logits and greedy generation", nullptr, "the executor issue"},
    {"image", "image path", nullptr, "the executor issue"},
    {"mesh", "sharded run on the mesh", nullptr, "the mesh issue"},
    {"service", "service start", nullptr, "the service issue"},
    {"e2e_text", "text end-to-end", nullptr, "the service issue"},
    {"e2e_image", "image end-to-end", nullptr, "the service issue"},
    {"determinism", "determinism", nullptr, "the service issue"},
    {"performance", "performance snapshot", nullptr, "the Day-0 issue"},
};

int run_day0(const Day0Options& opt) {
  const std::string root = golden_root(opt.golden);
  const auto manifest = io::GoldenManifest::load(root);
  const auto problems = manifest.verify();
  const bool preflight_ok = problems.empty();
  const suite::Platform platform = suite::load_platform(default_platform(opt.platform));

  Day0Context ctx{opt, platform, {}, "", ""};
  if (fs::exists(opt.model + "/config.json")) {
    ctx.model_ops = checks::ops_of_model(checks::read_model_config(opt.model), &ctx.model_dtype);
  } else {
    ctx.model_problem = opt.model + "/config.json not found (the tiny models arrive with the models issue)";
  }

  nlohmann::json stages = nlohmann::json::array();
  bool blocked = !preflight_ok;
  int passed = 0;
  if (!opt.json) {
    std::printf("Day-0 readiness: model %s on %s (%s)\n", opt.model.c_str(), platform.name.c_str(), platform.file.c_str());
    std::printf("pre-flight: %zu golden files match %s/manifest.json: %s\n", manifest.files().size(), root.c_str(),
                preflight_ok ? colored("ok", "32").c_str() : colored("FAILED", "31").c_str());
    for (const auto& p : problems) std::printf("    %s\n", p.c_str());
  }
  int n = 0;
  for (const auto& s : kStages) {
    StageResult r;
    if (s.run == nullptr) {
      r = {StageStatus::kUnavailable, std::string("not yet available (arrives with ") + s.arrives_with + ")"};
    } else if (blocked) {
      r = {StageStatus::kSkipped, "blocked by an earlier failure"};
    } else {
      r = s.run(ctx);
      blocked = blocked || r.status == StageStatus::kFail;
    }
    passed += r.status == StageStatus::kPass;
    stages.push_back({{"id", s.id}, {"title", s.title}, {"status", stage_status_name(r.status)}, {"summary", r.summary}});
    if (!opt.json) {
      const char* mark = r.status == StageStatus::kPass ? "\u2713" : r.status == StageStatus::kFail ? "\u2717" : "-";
      const char* color = r.status == StageStatus::kPass ? "32" : r.status == StageStatus::kFail ? "31" : "33";
      std::printf("  %2d  %s  %-42s  %s\n", ++n, colored(mark, color).c_str(), s.title, r.summary.c_str());
    }
  }
  const bool ready = passed == static_cast<int>(std::size(kStages));
  if (opt.json) {
    nlohmann::json out = {{"model", opt.model},
                          {"platform", platform.name},
                          {"preflight", {{"golden_manifest", preflight_ok ? "pass" : "fail"},
                                         {"golden_files", manifest.files().size()},
                                         {"problems", problems}}},
                          {"stages", stages},
                          {"ready", ready}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("Day-0 readiness %s: %d of %zu stages passed.\n", ready ? "established" : "NOT established", passed,
                std::size(kStages));
  }
  if (!preflight_ok) return kExitInput;
  return ready ? kExitOk : kExitMismatch;
}

}  // namespace

void register_day0(CLI::App& app, Run* run) {
  auto opt = std::make_shared<Day0Options>();
  CLI::App* sub = app.add_subcommand("day0", "Run the Day-0 readiness checklist for a model on a platform");
  sub->add_option("--model", opt->model, "Model directory (config.json, weights, tokenizer)")->capture_default_str();
  sub->add_option("--platform", opt->platform, "Platform config (default configs/platforms/cpu.yaml)");
  sub->add_option("--golden", opt->golden, "Golden directory (default: ./golden, else the source tree's)");
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt] { *run = [opt] { return run_day0(*opt); }; });
}

}  // namespace h0::cli
