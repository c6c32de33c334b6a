// harness day0 --model DIR [--platform FILE] [--mesh tp=2,...] [--golden DIR] [--keep-going]
//              [--eval TASK]... [--eval-reference SELECTOR|FILE] [--dry-run] [--db FILE]
//              [--out DIR] [--json]
// The Day-0 readiness run: the checklist of src/day0/ (checklist.h: the stages in order, each
// gating the ones that need it; stages.cc: what each runs). A stage whose hard needs did not pass
// cannot run (blocked); one whose earlier stages failed is blocked too unless --keep-going.
// --dry-run runs only what needs no weights. The terminal gets one line per stage; the store
// gets one run (suite "day0": every check each stage ran, and one case per
// stage), and --out the dashboard, day0.json and day0.xml. Exit 0 when every stage passed, or when
// every stage that could run passed and the rest need the executor for a family it does not model
// (readiness established at the service level); 1 otherwise.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/error.h"
#include "base/json_read.h"
#include "cli_output.h"
#include "commands.h"
#include "day0/checklist.h"
#include "eval/task.h"
#include "io/golden_manifest.h"
#include "mesh_run.h"
#include "report/html_site.h"
#include "run/listener.h"
#include "run/run_record.h"
#include "store/sqlite_store.h"

namespace h0::cli {
namespace {

namespace fs = std::filesystem;

int run_day0(const day0::Options& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string started_at = store::utc_now();
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
  const auto labels = parse_labels(opt.labels);
  MeshRun mesh_run = open_mesh("", 300);
  const std::string root = golden_root("");
  const auto manifest = io::GoldenManifest::load(root);
  const auto problems = manifest.verify();
  const suite::Platform platform = suite::load_platform(default_platform(opt.platform));
  const bool print = !opt.json && mesh_run.root;

  day0::Context ctx(opt, platform);
  ctx.parallel = day0::parse_mesh(opt.mesh);
  ctx.world = mesh_run.world.get();
  ctx.root = mesh_run.root;
  ctx.model_name = fs::path(opt.model).lexically_normal().filename().string();
  ctx.suites_dir =
      fs::is_directory("suites") ? "suites" : std::string(HARNESS_SOURCE_DIR) + "/suites";
  if (ctx.model_name.empty())
    ctx.model_name = fs::absolute(opt.model).parent_path().filename().string();
  if (print) {
    std::printf("Day-0 readiness: model %s on %s (%s)%s\n", opt.model.c_str(),
                platform.name.c_str(), platform.file.c_str(), opt.dry_run ? ", dry run" : "");
    std::printf("pre-flight: %zu golden files match %s/manifest.json: %s\n",
                manifest.files().size(), root.c_str(),
                problems.empty() ? colored("ok", "32").c_str() : colored("FAILED", "31").c_str());
    for (const auto& p : problems) std::printf("    %s\n", p.c_str());
  }
  if (!problems.empty()) return kExitInput;

  const auto print_stage = [&](size_t index, const day0::StageRun& run) {
    if (!print) return;
    const day0::StageResult& r = run.result;
    const bool pass = r.status == day0::StageStatus::kPass,
               fail = r.status == day0::StageStatus::kFail,
               not_applicable = r.status == day0::StageStatus::kNotApplicable;
    const char* mark = pass ? "\u2713" : fail ? "\u2717" : not_applicable ? "\u00b7" : "-";
    const char* color = pass ? "32" : fail ? "31" : not_applicable ? "90" : "33";
    std::printf("  %2zu  %s  %-42s  %s\n", index + 1, colored(mark, color).c_str(), run.stage.title,
                r.summary.c_str());
    std::fflush(stdout);
  };
  const day0::Checklist checklist = day0::run_checklist(ctx, day0::stages(), print_stage);
  const bool ready = checklist.ready(), service_level = checklist.service_level();
  if (!mesh_run.root) {  // its share: the stages up to the mesh (rank 0 runs the service stages)
    for (const auto& s : checklist.stages) {
      if (s.result.status == day0::StageStatus::kFail ||
          s.result.status == day0::StageStatus::kBlocked)
        return kExitMismatch;
    }
    return kExitOk;
  }

  // One run record, heard by the store, then the JSON and JUnit files; the dashboard is drawn
  // from the store after.
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json stack;
  try {
    stack =
        backend::Backend::open({platform.backend, platform.lib, platform.options})->stack_info();
  } catch (const std::exception& e) {
    stack = {{"error", e.what()}};
  }
  const run::RunReport report = day0::run_record(ctx, checklist, stack, seconds);
  run::RunSinks sinks(opt.no_db ? "" : opt.db,
                      opt.no_report ? "" : (fs::path(opt.out) / "day0.json").string(),
                      opt.no_report ? "" : (fs::path(opt.out) / "day0.xml").string());
  run::StoreListener* const db = sinks.store();
  run::RunRecorder recorder(sinks.listeners());
  recorder.start(run::run_start(report, platform, labels, mesh_run.name), report.cases.size(),
                 started_at);
  for (const auto& c : report.cases) recorder.add(c);
  recorder.finish();
  const int64_t run_id = db ? db->run_id() : 0;
  std::string site_index;
  if (!opt.no_report && db) {
    const report::SiteModel model = report::gather_site(*db->db(), report::SiteOptions{}, nullptr);
    report::write_site(model, (fs::path(opt.out) / "site").string(), report::find_chart_js(""),
                       nullptr);
    site_index = (fs::path(opt.out) / "site" / "index.html").string();
  }
  if (opt.json) {
    nlohmann::json stages_json = nlohmann::json::array();
    for (const day0::StageRun& run : checklist.stages) {
      stages_json.push_back({{"id", run.stage.id},
                             {"title", run.stage.title},
                             {"status", day0::stage_status_name(run.result.status)},
                             {"summary", run.result.summary},
                             {"checks", run.result.cases.size()},
                             {"details", run.result.details}});
    }
    nlohmann::json out = {
        {"model", opt.model},
        {"platform", platform.name},
        {"preflight", {{"golden_manifest", "pass"}, {"golden_files", manifest.files().size()}}},
        {"stages", stages_json},
        {"ready", ready},
        {"verdict", checklist.verdict()},
        {"passed", checklist.passed},
        {"applicable", checklist.applicable()},
        {"not_applicable", checklist.not_applicable},
        {"seconds", seconds}};
    if (db) out["run_id"] = run_id;
    if (!site_index.empty()) out["dashboard"] = site_index;
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    // "12 of 12 stages passed", or with stages that do not apply "12 of 12 applicable stages
    // passed; 3 not applicable": a stage that does not apply is never counted as passed.
    std::string count = std::to_string(checklist.passed) + " of " +
                        std::to_string(checklist.applicable()) +
                        (checklist.not_applicable > 0 ? " applicable" : "") + " stages passed";
    if (checklist.not_applicable > 0)
      count += "; " + std::to_string(checklist.not_applicable) + " not applicable";
    if (service_level) {
      const model::Architecture& a = *ctx.arch;
      const std::string why = "family " + a.family + " is not modelled";
      std::printf(
          "Day-0 readiness established at the service level: %s, in %.1f s; the executor checks "
          "did not run (%d stages: %s).\n",
          count.c_str(), seconds, checklist.not_modelled, why.c_str());
    } else {
      std::printf("Day-0 readiness %s: %s, in %.1f s.\n", ready ? "established" : "NOT established",
                  count.c_str(), seconds);
    }
    if (db)
      std::printf("stored as run %lld in %s\n", static_cast<long long>(run_id), opt.db.c_str());
    if (!site_index.empty()) std::printf("dashboard: %s\n", site_index.c_str());
  }
  return ready || service_level ? kExitOk : kExitMismatch;
}

}  // namespace

void register_day0(CLI::App& app, Run* run) {
  auto opt = std::make_shared<day0::Options>();
  CLI::App* sub =
      app.add_subcommand("day0", "Run the Day-0 readiness checklist for a model on a platform");
  sub->add_option("--model", opt->model, "Model directory (config.json, weights, tokenizer)")
      ->capture_default_str();
  sub->add_option("--platform", opt->platform,
                  "Platform config (default configs/platforms/cpu.yaml)");
  sub->add_option(
      "--golden", opt->golden,
      "Goldens of a model without shipped ones: the directory golden/tools/dump_hf.py (probes, "
      "logits) and/or golden/tools/gen_e2e.py --model (served answers) wrote");
  sub->add_option(
         "--original-golden", opt->original_golden,
         "For a quantized checkpoint (fp8): dump_hf.py's goldens of its unquantized original, same "
         "prompts; the model stage reports the quantization error budget (mean KL, top-1 "
         "agreement, "
         "greedy divergence) against them")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--eval", opt->eval_tasks,
                  "A task file (suites/tasks/*.jsonl, lm-eval style JSONL): adds the task-accuracy "
                  "stage after text end-to-end (repeatable; without it the stage runs the tasks "
                  "suites/eval.yaml ships for the model, if any)");
  sub->add_option("--eval-reference", opt->eval_reference,
                  "The per-item reference of the --eval tasks: a run of --db (label:stack=gpu-ref, "
                  "platform:NAME, an id) whose eval results cover the same task files, or, for one "
                  "task, gen_eval.py's file. Default: <task>.json in --golden");
  sub->add_option("--tool-reference", opt->tool_reference,
                  "A reference endpoint (the reference GPU's deployment, the model vendor's API) "
                  "for the conversation stage's tool_choice auto comparison: trigger agreement, "
                  "tool_call_f1, schema accuracy (kind: tool_agreement)");
  sub->add_option("--long", opt->long_budget_s,
                  "Seconds the long-context stage may take (default 600): the long goldens' "
                  "length (2,040 tokens for the tiny families) whole and prefilled in chunks of "
                  "512, then the service's continuation; what the budget leaves is named. 0: "
                  "the stage is not run")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--op-cases", opt->op_cases,
                  "The operator stage's cases: all (default: the op suite's cases of the "
                  "model's ops, then those at its own shapes) or model (its own shapes only; "
                  "`harness run suites/ops.yaml` covers the rest)")
      ->check(CLI::IsMember({"all", "model"}));
  sub->add_option("--mesh", opt->mesh,
                  "The parallel plan the memory stage sizes, e.g. tp=8,pp=2,ep=16");
  sub->add_flag("--keep-going", opt->keep_going,
                "Run the stages an earlier failure would block (not those it cannot)");
  sub->add_flag("--dry-run", opt->dry_run,
                "Run only the stages that need no weights (config, coverage, memory plan)");
  sub->add_option("--db", opt->db, "Results store")->capture_default_str();
  sub->add_flag("--no-db", opt->no_db, "Do not write the results store (and no dashboard)");
  sub->add_option("--label", opt->labels, "Stack label KEY=VALUE (repeatable)");
  sub->add_option("--out", opt->out,
                  "Where day0.json, day0.xml (JUnit), the dashboard and service logs go")
      ->capture_default_str();
  sub->add_flag("--no-report", opt->no_report, "Write no day0.json, day0.xml or dashboard");
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt] { *run = [opt] { return run_day0(*opt); }; });
}

}  // namespace h0::cli
