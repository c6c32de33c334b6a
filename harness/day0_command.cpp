// harness day0 --model DIR [--platform FILE] [--mesh tp=2,...] [--golden DIR] [--keep-going]
//              [--eval TASK]... [--eval-reference SELECTOR|FILE] [--dry-run] [--db FILE]
//              [--out DIR] [--json]
// The Day-0 readiness run: the stages below in order, each gating the ones that need it. A stage
// whose hard needs did not pass cannot run (blocked); one whose earlier stages failed is blocked
// too unless --keep-going. --dry-run runs only what needs no weights. The terminal gets one line
// per stage; the store gets one run (suite "day0": every check each stage ran, and one case per
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
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "base/error.h"
#include "base/json_read.h"
#include "base/scratch_dir.h"
#include "cli_output.h"
#include "commands.h"
#include "day0.h"
#include "eval/task.h"
#include "io/golden_manifest.h"
#include "mesh_run.h"
#include "report/html_site.h"
#include "report/json_writer.h"
#include "report/junit_writer.h"
#include "run/run_record.h"
#include "store/sqlite_store.h"

namespace h0::cli {
namespace {

namespace fs = std::filesystem;

struct Stage {
  const char* id;
  const char* title;
  StageFn run;
  std::vector<const char*> needs;  // cannot run unless these passed
  std::vector<const char*> after;  // gate it unless --keep-going
  bool needs_weights;              // not run with --dry-run
  // Left out of the checklist unless this holds (the accuracy stage: a task was given or ships).
  bool (*applies)(const Day0Context&) = nullptr;
};

// The Day-0 checklist: order, needs and gates.
const std::vector<Stage>& stages() {
  static const std::vector<Stage> kStages = {
      {"config", "config parsed, exact parameter counts", &run_config_stage, {}, {}, false},
      {"coverage", "operator coverage on this backend", &run_coverage_stage, {"config"}, {}, false},
      {"memory_plan",
       "memory plan fits the devices",
       &run_memory_plan_stage,
       {"config"},
       {},
       false},
      {"load",
       "weights load and shard (checksums)",
       &run_load_stage,
       {"config"},
       {"memory_plan"},
       true},
      {"op_accuracy",
       "operator accuracy for this model's ops",
       &run_op_accuracy_stage,
       {"config"},
       {"coverage"},
       true},
      {"layer_accuracy", "layer accuracy", &run_layer_stage, {"load"}, {"op_accuracy"}, true},
      {"model",
       "full-model logits and greedy generation",
       &run_model_stage,
       {"load"},
       {"layer_accuracy"},
       true},
      {"image", "image path", &run_image_stage, {"load"}, {"model"}, true},
      {"mesh", "sharded run on the mesh", &run_mesh_stage, {"load"}, {"model"}, true},
      {"service", "service start", &run_service_stage, {"load"}, {"model", "image"}, true},
      {"e2e_text", "text end-to-end", &run_e2e_text_stage, {"service"}, {}, true},
      {"e2e_image", "image end-to-end", &run_e2e_image_stage, {"service"}, {"image"}, true},
      {"accuracy",
       "task accuracy against the reference",
       &run_accuracy_stage,
       {"service"},
       {"e2e_text"},
       true,
       &accuracy_stage_applies},
      {"determinism", "determinism", &run_determinism_stage, {"service"}, {"e2e_text"}, true},
      {"performance",
       "performance snapshot",
       &run_performance_stage,
       {"service"},
       {"e2e_text"},
       true},
  };
  return kStages;
}

plan::ParallelPlan parse_mesh(const std::string& text) {
  plan::ParallelPlan p;
  if (text.empty()) return p;
  bool dp_given = false;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    int64_t* dim = key == "tp"   ? &p.tp
                   : key == "pp" ? &p.pp
                   : key == "ep" ? &p.ep
                   : key == "dp" ? &p.dp
                                 : nullptr;
    int64_t v = 0;
    try {
      if (dim == nullptr || eq == std::string::npos) throw std::invalid_argument(item);
      size_t used = 0;
      v = std::stoll(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1 || v < 1) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw InputError("--mesh " + text,
                       "expected tp=N,pp=N,ep=N,dp=N with N >= 1 (got '" + item + "')");
    }
    *dim = v;
    dp_given = dp_given || key == "dp";
  }
  plan::default_dp(&p, dp_given);  // ep 16 over tp 8: dp 2, as `harness plan` does
  return p;
}

checks::Status record_status(StageStatus s) {
  return s == StageStatus::kPass   ? checks::Status::kPass
         : s == StageStatus::kFail ? checks::Status::kFail
                                   : checks::Status::kSkip;
}

// One record of the whole run: every stage's checks ("<stage>/<case>") and the stage itself
// ("stage/<NN>-<id>", kind day0_stage: its title and summary).
run::RunReport run_record(const Day0Options& opt, const suite::Platform& platform,
                          const std::vector<const Stage*>& ran,
                          const std::vector<StageResult>& results, double seconds,
                          const std::string& verdict) {
  run::RunReport report;
  report.suite_name = "day0";
  report.suite_file = "day0:" + opt.model;
  report.platform_name = platform.name;
  report.platform_file = platform.file;
  report.platform_sha256 = platform.sha256;
  report.duration_s = seconds;
  try {
    report.stack =
        backend::Backend::open({platform.backend, platform.lib, platform.options})->stack_info();
  } catch (const std::exception& e) {
    report.stack = {{"error", e.what()}};
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const Stage& s = *ran[i];
    for (const auto& c : results[i].cases) {
      run::CaseOutcome o = c;
      o.id = std::string(s.id) + "/" + c.id;
      report.cases.push_back(std::move(o));
    }
    char id[64];
    std::snprintf(id, sizeof id, "stage/%02zu-%s", i + 1, s.id);
    run::CaseOutcome stage{id, s.id, "day0_stage", {"day0"}, {}};
    stage.result.status = record_status(results[i].status);
    stage.result.message = results[i].summary;
    stage.result.details = results[i].details;
    stage.result.details["title"] = s.title;
    stage.result.details["stage_status"] = stage_status_name(results[i].status);
    stage.result.details["verdict"] =
        verdict;  // the run's, on every stage (the dashboard shows it)
    report.cases.push_back(std::move(stage));
  }
  return report;
}

int run_day0(const Day0Options& opt) {
  const auto t0 = std::chrono::steady_clock::now();
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
  const auto labels = parse_labels(opt.labels);
  MeshRun mesh_run = open_mesh("", 300);
  const std::string root = golden_root("");
  const auto manifest = io::GoldenManifest::load(root);
  const auto problems = manifest.verify();
  const suite::Platform platform = suite::load_platform(default_platform(opt.platform));
  const bool print = !opt.json && mesh_run.root;

  const base::ScratchDir scratch("h0-day0");  // the generated suites; gone at any exit
  Day0Context ctx{opt,
                  platform,
                  parse_mesh(opt.mesh),
                  mesh_run.world.get(),
                  fs::path(opt.model).lexically_normal().filename().string(),
                  std::nullopt,
                  std::nullopt,
                  {},
                  "",
                  scratch.path(),
                  std::nullopt};
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

  std::vector<StageResult> results;
  std::vector<const Stage*> ran;  // the stages of this checklist, in order
  std::map<std::string, StageStatus> status;
  bool rank_stop = false;
  for (const Stage& s : stages()) {
    if (s.applies != nullptr && !s.applies(ctx)) continue;
    StageResult r;
    std::string unmet, gate;
    for (const char* n : s.needs) {
      if (status[n] != StageStatus::kPass && unmet.empty()) unmet = n;
    }
    for (const char* n : s.after) {  // a stage not run for an unmodelled family gates nothing
      const StageStatus g = status[n];
      if (g != StageStatus::kPass && g != StageStatus::kNotModelled && gate.empty()) gate = n;
    }
    if (opt.dry_run && s.needs_weights) {
      r = {StageStatus::kNotRun, "not run (dry run: needs the weights)", {}, {}};
    } else if (rank_stop) {
      r = {StageStatus::kNotRun, "rank 0 runs the service stages", {}, {}};
    } else if (!unmet.empty()) {
      r = {StageStatus::kBlocked, "blocked: " + unmet + " did not pass", {}, {}};
    } else if (!gate.empty() && !opt.keep_going) {
      r = {StageStatus::kBlocked,
           "blocked: " + gate + " did not pass (--keep-going runs it anyway)",
           {},
           {}};
    } else {
      try {
        r = s.run(ctx);
      } catch (const mesh::MeshError&) {
        throw;
      } catch (
          const std::exception& e) {  // a bad model directory, a backend that will not open, ...
        // One line: a multi-line error (verify_checkpoint's list of tensors) keeps its names.
        std::string why = e.what();
        for (size_t at; (at = why.find("\n")) != std::string::npos;) {
          size_t end = at + 1;
          while (end < why.size() && why[end] == ' ') ++end;
          why.replace(at, end - at, at > 0 && why[at - 1] == ':' ? " " : "; ");
        }
        r = {StageStatus::kFail, why, {}, {{"error", e.what()}}};
      }
    }
    if (std::string(s.id) == "mesh" && !mesh_run.root) rank_stop = true;
    status[s.id] = r.status;
    if (print) {
      const char* mark = r.status == StageStatus::kPass   ? "\u2713"
                         : r.status == StageStatus::kFail ? "\u2717"
                                                          : "-";
      const char* color = r.status == StageStatus::kPass   ? "32"
                          : r.status == StageStatus::kFail ? "31"
                                                           : "33";
      std::printf("  %2zu  %s  %-42s  %s\n", results.size() + 1, colored(mark, color).c_str(),
                  s.title, r.summary.c_str());
      std::fflush(stdout);
    }
    results.push_back(std::move(r));
    ran.push_back(&s);
  }
  int passed = 0, not_modelled = 0;
  for (const auto& r : results) {
    passed += r.status == StageStatus::kPass;
    not_modelled += r.status == StageStatus::kNotModelled;
  }
  // The verdict: every stage passed; or every stage that could run for a family the executor
  // does not model passed (established at the service level); else not established (exit 1).
  const bool ready = passed == int(results.size());
  const bool service_level =
      !ready && not_modelled > 0 && passed + not_modelled == int(results.size());
  const char* verdict = ready ? "established" : service_level ? "service_level" : "not_established";
  if (!mesh_run.root) {  // its share: the stages up to the mesh (rank 0 runs the service stages)
    for (const auto& r : results) {
      if (r.status == StageStatus::kFail || r.status == StageStatus::kBlocked) return kExitMismatch;
    }
    return kExitOk;
  }

  // One run record: the store, then JSON, JUnit and the dashboard from it.
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const run::RunReport report = run_record(opt, platform, ran, results, seconds, verdict);
  store::RunData run = run::run_data(report, platform, labels, mesh_run.name);
  run.started_at = store::utc_now();
  run.finished_at = run.started_at;
  std::unique_ptr<store::SqliteStore> db;
  int64_t run_id = 0;
  if (!opt.no_db) {
    db = store::SqliteStore::open(opt.db);
    run_id = db->begin_run(run::run_start(report, platform, labels, mesh_run.name));
    for (const auto& c : report.cases) db->add_result(run_id, run::result_data(c));
    db->finish_run(run_id, run.status);
    run = *db->load_run(run_id);
  }
  std::string site_index;
  if (!opt.no_report) {
    fs::create_directories(opt.out);
    report::write_json((fs::path(opt.out) / "day0.json").string(), run);
    report::write_junit((fs::path(opt.out) / "day0.xml").string(), run);
    if (db) {
      const report::SiteModel model = report::gather_site(*db, report::SiteOptions{}, nullptr);
      report::write_site(model, (fs::path(opt.out) / "site").string(), report::find_chart_js(""),
                         nullptr);
      site_index = (fs::path(opt.out) / "site" / "index.html").string();
    }
  }
  if (opt.json) {
    nlohmann::json stages_json = nlohmann::json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      stages_json.push_back({{"id", ran[i]->id},
                             {"title", ran[i]->title},
                             {"status", stage_status_name(results[i].status)},
                             {"summary", results[i].summary},
                             {"checks", results[i].cases.size()},
                             {"details", results[i].details}});
    }
    nlohmann::json out = {
        {"model", opt.model},
        {"platform", platform.name},
        {"preflight", {{"golden_manifest", "pass"}, {"golden_files", manifest.files().size()}}},
        {"stages", stages_json},
        {"ready", ready},
        {"verdict", verdict},
        {"seconds", seconds}};
    if (db) out["run_id"] = run_id;
    if (!site_index.empty()) out["dashboard"] = site_index;
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    if (service_level) {
      const model::Architecture& a = *ctx.arch;
      const std::string why = "family " + a.family + " is not modelled";
      std::printf(
          "Day-0 readiness established at the service level: %zu of %zu stages passed in %.1f s; "
          "the executor checks did not run (%d stages: %s).\n",
          size_t(passed), results.size(), seconds, not_modelled, why.c_str());
    } else {
      std::printf("Day-0 readiness %s: %zu of %zu stages passed in %.1f s.\n",
                  ready ? "established" : "NOT established", size_t(passed), results.size(),
                  seconds);
    }
    if (db)
      std::printf("stored as run %lld in %s\n", static_cast<long long>(run_id), opt.db.c_str());
    if (!site_index.empty()) std::printf("dashboard: %s\n", site_index.c_str());
  }
  return ready || service_level ? kExitOk : kExitMismatch;
}

}  // namespace

void register_day0(CLI::App& app, Run* run) {
  auto opt = std::make_shared<Day0Options>();
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
