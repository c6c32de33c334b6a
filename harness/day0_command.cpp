// harness day0 [--model DIR] [--platform FILE] [--golden DIR] [--json]
// The Day-0 readiness checklist. Stages arrive issue by issue; one that does not exist yet is
// listed as not yet available, never as passed, and the run exits 0 only when every stage
// passed. The stages that exist today: the config (exact parameter counts), operator coverage
// for the model's ops on the platform, the memory plan on one of the platform's devices, loading
// (checksummed, synthesized for a config-only model), operator accuracy (suites/ops.yaml limited
// to the model's ops), and the layer, model and image suites' cases for this model.
#include <cstdio>
#include <optional>
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
#include "io/sharded_checkpoint.h"
#include "mesh/communicator.h"
#include "model/architecture.h"
#include "model/inventory.h"
#include "model/model_source.h"
#include "plan/memory_plan.h"
#include "plan/rank_loader.h"
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
  std::optional<model::Architecture> arch_;

  // The model's architecture, read once (the first stage that asks reports a bad config).
  const model::Architecture& arch() {
    if (!arch_) arch_ = model::load_architecture(options.model);
    return *arch_;
  }
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

std::string suite_path(const std::string& name) {
  const std::string local = "suites/" + name;
  return fs::exists(local) ? local : std::string(HARNESS_SOURCE_DIR) + "/" + local;
}

// Runs the cases of a suite that match `filter`; fails when any fails, is skipped (with the
// reason) when none match.
StageResult run_suite_stage(Day0Context& ctx, const std::string& suite, const std::string& filter, const char* what) {
  checks::register_kinds_with_suite_parser();
  const suite::Suite s = suite::load_suite(suite_path(suite));
  checks::RunOptions o;
  o.filter = filter;
  const checks::RunReport report = checks::run_suite(s, ctx.platform, o, nullptr);
  if (report.cases.empty()) return {StageStatus::kSkipped, std::string("no ") + what + " for this model in suites/" + suite};
  int failed = 0;
  std::string first_failure;
  for (const auto& c : report.cases) {
    if (checks::is_failure(c.result.status)) {
      ++failed;
      if (first_failure.empty()) first_failure = c.id + ": " + c.result.message;
    }
  }
  std::string summary = std::to_string(report.cases.size()) + " " + what + ", " + std::to_string(failed) + " failed";
  if (failed > 0) return {StageStatus::kFail, summary + " (first: " + first_failure + ")"};
  return {StageStatus::kPass, summary};
}

StageResult run_op_accuracy_stage(Day0Context& ctx) {
  std::string filter;
  for (const auto& op : ctx.model_ops) {
    filter += (filter.empty() ? "" : ":") + op + "[*:" + op + "/*:*[op=" + op + ",*:dynamic/" + op + "*";
  }
  return run_suite_stage(ctx, "ops.yaml", filter, "op cases");
}

std::string model_name(const Day0Context& ctx) { return fs::path(ctx.options.model).filename().string(); }

StageResult run_config_stage(Day0Context& ctx) {
  const model::Architecture& a = ctx.arch();
  const model::ParamCounts c = model::build_inventory(a).counts;
  std::string summary = a.architecture + ": " + plan::with_commas(c.total) + " parameters";
  if (c.active != c.total) summary += ", " + plan::with_commas(c.active) + " active";
  return {StageStatus::kPass, summary};
}

StageResult run_memory_plan_stage(Day0Context& ctx) {
  if (!(ctx.platform.device_memory_bytes > 0)) return {StageStatus::kSkipped, "the platform file states no device_memory"};
  plan::MemoryOptions o;
  o.device_memory = ctx.platform.device_memory_bytes;
  const plan::MemoryPlan p = plan::plan_memory(ctx.arch(), plan::ParallelPlan{}, o);
  if (!p.fits) return {StageStatus::kFail, p.reason};
  return {StageStatus::kPass, "fits one device: " + plan::with_commas(p.ranks.at(0).kv_tokens) + " KV tokens"};
}

StageResult run_load_stage(Day0Context& ctx) {
  const model::ModelSource src = model::resolve_model(ctx.options.model);
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(src.dir);
  const model::Inventory inv = plan::checkpoint_inventory(ctx.arch(), ckpt);  // a synthesized checkpoint has the same config
  std::vector<plan::RankLoad> ranks = {plan::load_rank(ctx.arch(), inv, ckpt, plan::ParallelPlan{}, 0, {true})};
  const plan::ShardVerification v = plan::verify_rank_shards(inv, ckpt, ranks);
  if (!v.problems.empty()) return {StageStatus::kFail, v.problems[0]};
  return {StageStatus::kPass, std::to_string(v.tensors) + " tensors, " + human_bytes(uint64_t(ranks[0].report.bytes_read)) +
                                  (src.synthesized ? " (synthesized, seed 0)" : "") + ", checksummed"};
}

StageResult run_layer_stage(Day0Context& ctx) { return run_suite_stage(ctx, "layers.yaml", model_name(ctx) + "/*", "layer cases"); }
StageResult run_model_stage(Day0Context& ctx) { return run_suite_stage(ctx, "model.yaml", model_name(ctx) + "/*", "model cases"); }

StageResult run_image_stage(Day0Context& ctx) {
  if (!ctx.arch().vision) return {StageStatus::kPass, "not applicable: a text-only model"};
  return run_suite_stage(ctx, "image.yaml", model_name(ctx) + "/*", "image cases");
}

StageResult run_mesh_stage(Day0Context&) {
  if (mesh::detect_rank_env().size <= 1) return {StageStatus::kPass, "not applicable: one rank (run under mpirun for the mesh)"};
  return {StageStatus::kSkipped, "run suites/mesh.yaml under the same mpirun for the sharded checks"};
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
    {"config", "config parsed, exact parameter counts", &run_config_stage, ""},
    {"coverage", "operator coverage on this backend", &run_coverage_stage, ""},
    {"memory_plan", "memory plan fits the devices", &run_memory_plan_stage, ""},
    {"load", "weights load and shard (checksums)", &run_load_stage, ""},
    {"op_accuracy", "operator accuracy for this model's ops", &run_op_accuracy_stage, ""},
    {"layer_accuracy", "layer accuracy", &run_layer_stage, ""},
    {"model", "full-model logits and greedy generation", &run_model_stage, ""},
    {"image", "image path", &run_image_stage, ""},
    {"mesh", "sharded run on the mesh", &run_mesh_stage, ""},
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

  Day0Context ctx{opt, platform, {}, "", "", std::nullopt};
  if (fs::exists(opt.model + "/config.json")) {
    ctx.model_ops = checks::ops_of_model(checks::read_model_config(opt.model), &ctx.model_dtype);
  } else {
    ctx.model_problem = opt.model + "/config.json not found";
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
      try {
        r = s.run(ctx);
      } catch (const std::exception& e) {  // a bad model directory, a backend that will not open, ...
        r = {StageStatus::kFail, e.what()};
      }
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
