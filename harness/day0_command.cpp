// harness day0 --model DIR [--platform FILE] [--mesh tp=2,...] [--golden DIR] [--keep-going]
//              [--eval TASK]... [--eval-reference SELECTOR|FILE] [--dry-run] [--db FILE]
//              [--out DIR] [--json]
// The Day-0 readiness run: the checklist of src/day0/ (checklist.h: the stages in order, each
// gating the ones that need it; stages.cc: what each runs; run_day0.h: the whole run, which this
// file hands the options and what only the command line knows). A stage whose hard needs did not
// pass cannot run (blocked); one whose earlier stages failed is blocked too unless --keep-going.
// --dry-run runs only what needs no weights. The terminal gets one line per stage; the store
// gets one run (suite "day0": every check each stage ran, and one case per
// stage), and --out the dashboard, day0.json and day0.xml. Exit 0 when every stage passed, or when
// every stage that could run passed and the rest need the executor for a family it does not model
// (readiness established at the service level); 1 otherwise.
#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "cli_output.h"
#include "commands.h"
#include "day0/run_day0.h"
#include "mesh_run.h"
#include "store/sqlite_store.h"

namespace h0::cli {
namespace {

namespace fs = std::filesystem;

// What only the command line knows, resolved in the order the errors are reported (the options,
// then --label), then the run (src/day0/run_day0.h).
int run_day0_command(const day0::Options& opt) {
  day0::Launch launch;
  launch.started = std::chrono::steady_clock::now();
  launch.started_at = store::utc_now();
  day0::check_options(opt);
  launch.labels = parse_labels(opt.labels);
  const MeshRun mesh_run = open_mesh("", 300);
  launch.world = mesh_run.world.get();
  launch.root = mesh_run.root;
  launch.mesh_name = mesh_run.name;
  launch.golden_dir = golden_root("");
  launch.platform_file = default_platform(opt.platform);
  launch.suites_dir =
      fs::is_directory("suites") ? "suites" : std::string(HARNESS_SOURCE_DIR) + "/suites";
  launch.color = use_color();
  return day0::run_day0(opt, launch);
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
  sub->callback([run, opt] { *run = [opt] { return run_day0_command(*opt); }; });
}

}  // namespace h0::cli
