// The Day-0 readiness run (run_day0.h): pre-flight, the checklist, its record, the terminal or
// JSON report and the verdict. The stages themselves are stages.cc's; their order and gates
// checklist.cc's.
#include "day0/run_day0.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "backend/backend.h"
#include "base/error.h"
#include "base/json_read.h"
#include "base/text_format.h"
#include "day0/checklist.h"
#include "eval/task.h"
#include "io/golden_manifest.h"
#include "report/html_site.h"
#include "run/listener.h"
#include "run/run_record.h"
#include "store/sqlite_store.h"
#include "suite/platform.h"

namespace h0::day0 {
namespace {

namespace fs = std::filesystem;

// The golden manifest as the pre-flight found it.
struct Preflight {
  io::GoldenManifest manifest;
  std::vector<std::string> problems;  // files that do not match it; none: it passed
};

// "Day-0 readiness: model M on P (FILE)", then the pre-flight's line and its problems.
void print_preflight(const Options& opt, const suite::Platform& platform, const Preflight& pre,
                     const Launch& launch) {
  std::printf("Day-0 readiness: model %s on %s (%s)%s\n", opt.model.c_str(), platform.name.c_str(),
              platform.file.c_str(), opt.dry_run ? ", dry run" : "");
  std::printf("pre-flight: %zu golden files match %s/manifest.json: %s\n",
              pre.manifest.files().size(), launch.golden_dir.c_str(),
              pre.problems.empty() ? paint("ok", "32", launch.color).c_str()
                                   : paint("FAILED", "31", launch.color).c_str());
  for (const auto& p : pre.problems) std::printf("    %s\n", p.c_str());
}

// A stage's line as it ends: its number, a mark (✓ pass, ✗ fail, · not applicable, - otherwise),
// its title and its summary.
void print_stage(size_t index, const StageRun& run, bool color) {
  const StageResult& r = run.result;
  const bool pass = r.status == StageStatus::kPass, fail = r.status == StageStatus::kFail,
             not_applicable = r.status == StageStatus::kNotApplicable;
  const char* mark = pass ? "\u2713" : fail ? "\u2717" : not_applicable ? "\u00b7" : "-";
  const char* code = pass ? "32" : fail ? "31" : not_applicable ? "90" : "33";
  std::printf("  %2zu  %s  %-42s  %s\n", index + 1, paint(mark, code, color).c_str(),
              run.stage.title, r.summary.c_str());
  std::fflush(stdout);
}

// Off rank 0, the exit code of its share: the stages up to the mesh (rank 0 runs the service
// stages).
int share_exit_code(const Checklist& checklist) {
  for (const auto& s : checklist.stages) {
    if (s.result.status == StageStatus::kFail || s.result.status == StageStatus::kBlocked)
      return kExitMismatch;
  }
  return kExitOk;
}

// The backend's stack_info, or the error opening it.
nlohmann::json stack_of(const suite::Platform& platform) {
  try {
    return backend::Backend::open({platform.backend, platform.lib, platform.options})->stack_info();
  } catch (const std::exception& e) {
    return {{"error", e.what()}};
  }
}

// Where the run record went: its id in the store (when stored) and the dashboard's index page
// (when drawn).
struct Recorded {
  bool stored = false;
  int64_t run_id = 0;
  std::string site_index;
};

// One run record, heard by the store, then the JSON and JUnit files; the dashboard is drawn from
// the store after.
Recorded record(const Context& ctx, const Checklist& checklist, const Launch& launch,
                double seconds) {
  const Options& opt = ctx.options;
  const run::RunReport report = run_record(ctx, checklist, stack_of(ctx.platform), seconds);
  run::RunSinks sinks(opt.no_db ? "" : opt.db,
                      opt.no_report ? "" : (fs::path(opt.out) / "day0.json").string(),
                      opt.no_report ? "" : (fs::path(opt.out) / "day0.xml").string());
  run::StoreListener* const db = sinks.store();
  run::RunRecorder recorder(sinks.listeners());
  recorder.start(run::run_start(report, ctx.platform, launch.labels, launch.mesh_name),
                 report.cases.size(), launch.started_at);
  for (const auto& c : report.cases) recorder.add(c);
  // The run's status is its verdict: not established is a failed run, whatever its cases say.
  recorder.finish(std::string(checklist.verdict()) == "not_established");
  Recorded out;
  out.stored = db != nullptr;
  out.run_id = db ? db->run_id() : 0;
  if (!opt.no_report && db) {
    const report::SiteModel model = report::gather_site(*db->db(), report::SiteOptions{}, nullptr);
    report::write_site(model, (fs::path(opt.out) / "site").string(), report::find_chart_js(""),
                       nullptr);
    out.site_index = (fs::path(opt.out) / "site" / "index.html").string();
  }
  return out;
}

// --json: the run as one JSON document on stdout.
void print_json(const Context& ctx, const Preflight& pre, const Checklist& checklist,
                double seconds, const Recorded& recorded) {
  nlohmann::json stages_json = nlohmann::json::array();
  for (const StageRun& run : checklist.stages) {
    stages_json.push_back({{"id", run.stage.id},
                           {"title", run.stage.title},
                           {"status", stage_status_name(run.result.status)},
                           {"summary", run.result.summary},
                           {"checks", run.result.cases.size()},
                           {"details", run.result.details}});
  }
  nlohmann::json out = {
      {"model", ctx.options.model},
      {"platform", ctx.platform.name},
      {"preflight", {{"golden_manifest", "pass"}, {"golden_files", pre.manifest.files().size()}}},
      {"stages", stages_json},
      {"ready", checklist.ready()},
      {"verdict", checklist.verdict()},
      {"passed", checklist.passed},
      {"applicable", checklist.applicable()},
      {"not_applicable", checklist.not_applicable},
      {"seconds", seconds}};
  if (recorded.stored) out["run_id"] = recorded.run_id;
  if (!recorded.site_index.empty()) out["dashboard"] = recorded.site_index;
  std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

// The verdict's line, then where the run was stored and the dashboard.
void print_verdict(const Context& ctx, const Checklist& checklist, double seconds,
                   const Recorded& recorded) {
  const std::string count = checklist.passed_text();
  if (checklist.service_level()) {
    const model::Architecture& a = *ctx.arch;
    const std::string why = "family " + a.family + " is not modelled";
    std::printf(
        "Day-0 readiness established at the service level: %s, in %.1f s; the executor checks "
        "did not run (%d stages: %s).\n",
        count.c_str(), seconds, checklist.not_modelled, why.c_str());
  } else {
    std::printf("Day-0 readiness %s: %s, in %.1f s.\n",
                checklist.ready() ? "established" : "NOT established", count.c_str(), seconds);
  }
  if (recorded.stored)
    std::printf("stored as run %lld in %s\n", static_cast<long long>(recorded.run_id),
                ctx.options.db.c_str());
  if (!recorded.site_index.empty()) std::printf("dashboard: %s\n", recorded.site_index.c_str());
}

}  // namespace

void check_options(const Options& opt) {
  if (!fs::is_directory(opt.model))
    throw InputError(opt.model,
                     "not a model directory (config.json, and weights unless --dry-run)");
  if (!fs::exists(fs::path(opt.model) / "config.json"))
    throw InputError(opt.model, "has no config.json");
  // A config.json that is no JSON (or nests past the limit, or is a FIFO) is the input's fault,
  // exit 2; one that parses is stage 1's to judge.
  (void)base::read_json_file((fs::path(opt.model) / "config.json").string());
  if (!opt.golden.empty() && !fs::is_directory(opt.golden))
    throw InputError(opt.golden, "--golden: not a directory");
  for (const std::string& task : opt.eval_tasks) (void)eval::load_task(task);  // file:line, exit 2
  if (!opt.eval_reference.empty() && opt.eval_tasks.empty())
    throw InputError("--eval-reference " + opt.eval_reference, "needs --eval TASK");
  if (!opt.eval_reference.empty() && fs::exists(opt.eval_reference) && opt.eval_tasks.size() != 1)
    throw InputError(opt.eval_reference,
                     "--eval-reference: a reference file is for one --eval task; for several, name "
                     "a run of --db (label:stack=gpu-ref)");
  if (!opt.tool_reference.empty() && opt.tool_reference.rfind("http://", 0) != 0 &&
      opt.tool_reference.rfind("https://", 0) != 0)
    throw InputError("--tool-reference " + opt.tool_reference, "expected an http(s) URL");
}

int run_day0(const Options& opt, const Launch& launch) {
  Preflight pre{io::GoldenManifest::load(launch.golden_dir), {}};
  pre.problems = pre.manifest.verify();
  const suite::Platform platform = suite::load_platform(launch.platform_file);
  const bool print = !opt.json && launch.root;

  Context ctx(opt, platform);
  ctx.parallel = parse_mesh(opt.mesh);
  ctx.world = launch.world;
  ctx.root = launch.root;
  ctx.model_name = fs::path(opt.model).lexically_normal().filename().string();
  ctx.suites_dir = launch.suites_dir;
  if (ctx.model_name.empty())
    ctx.model_name = fs::absolute(opt.model).parent_path().filename().string();
  if (print) print_preflight(opt, platform, pre, launch);
  if (!pre.problems.empty()) return kExitInput;

  const Checklist checklist = run_checklist(ctx, stages(), [&](size_t index, const StageRun& run) {
    if (print) print_stage(index, run, launch.color);
  });
  if (!launch.root) return share_exit_code(checklist);

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - launch.started).count();
  const Recorded recorded = record(ctx, checklist, launch, seconds);
  if (opt.json) {
    print_json(ctx, pre, checklist, seconds, recorded);
  } else {
    print_verdict(ctx, checklist, seconds, recorded);
  }
  return checklist.ready() || checklist.service_level() ? kExitOk : kExitMismatch;
}

}  // namespace h0::day0
