// The Day-0 readiness run (`harness day0`): the stages a platform team clears on release day,
// in order, each gating the ones that need it. stages.cc and service_stages.cc run one stage each,
// the cases it runs for the model built by case_builders.cc (case_builders.h); checklist.h orders
// them and makes the run record; run_day0.h runs the whole checklist, prints it and hands the
// record to the store, JSON, JUnit and the dashboard (harness/day0_command.cpp parses the options).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/config/architecture.h"
#include "model/weights/inventory.h"
#include "plan/parallel_plan.h"
#include "run/runner.h"
#include "suite/platform.h"
#include "suite/suite.h"

namespace h0::day0 {

struct Options {
  std::string model = "configs/models/tiny-llava";
  std::string platform;
  std::string golden;  // dump_hf.py output for a model without shipped goldens
  // dump_hf.py output of a quantized model's unquantized original (same prompts): the model
  // stage reports the quantization error budget against it (quant_budget).
  std::string original_golden;
  std::string mesh;  // "tp=2,pp=1,ep=1,dp=1": the plan the memory stage sizes
  // Task files for the accuracy stage (--eval), and their reference (--eval-reference: a store
  // selector, or gen_eval.py's file for one task; default: <task stem>.json in --golden).
  std::vector<std::string> eval_tasks;
  std::string eval_reference;
  // The conversation stage's two-endpoint tool-call comparison (kind: tool_agreement): the
  // reference endpoint's URL; empty: not run.
  std::string tool_reference;
  // The long-context stage's time budget in seconds (--long); 0: the stage is not run.
  double long_budget_s = 600;
  // The op stage's cases (--op-cases): "all" (the op suite's cases for the model's ops, then
  // those at its own shapes) or "model" (its own shapes only: the op suite run on its own, e.g.
  // nightly, covers the rest; said in the stage's summary).
  std::string op_cases = "all";
  std::string db = "reports/results.db";
  std::string out = "reports/day0";  // dashboard, day0.json, day0.xml
  std::vector<std::string> labels;
  bool json = false, keep_going = false, dry_run = false, no_db = false, no_report = false;
};

// kNotModelled: the stage needs the executor and the model's family is not modelled; it does
// not gate later stages, and a run whose other stages all passed is established at the service
// level (exit 0) rather than fully. kNotApplicable: there is nothing for the stage to check on
// this model or mesh (the image path of a text model, the mesh on one rank): never a pass (not ✓,
// "not_applicable" in JSON, skipped in JUnit), gates nothing, and is counted apart.
enum class StageStatus { kPass, kFail, kBlocked, kNotRun, kNotModelled, kNotApplicable };
const char* stage_status_name(StageStatus s);

struct StageResult {
  StageStatus status = StageStatus::kNotRun;
  std::string summary;                  // the key number, or why
  std::vector<run::CaseOutcome> cases;  // the checks it ran (into the run record)
  nlohmann::json details = nlohmann::json::object();
};

// What every stage sees.
struct Context {
  Context(const Options& opt, const suite::Platform& on) : options(opt), platform(on) {}

  const Options& options;
  const suite::Platform& platform;
  plan::ParallelPlan parallel;              // --mesh, else one device
  mesh::Communicator* world = nullptr;      // under a launcher
  std::string model_name;                   // the model directory's name
  std::optional<model::Architecture> arch;  // read by the config stage
  // A family the executor does not model: the checkpoint's tensors as stored (none for a
  // config-only directory).
  std::optional<model::Inventory> stored;
  std::set<std::string> model_ops;                   // the catalogue ops the model's config needs
  tensor::DType model_dtype = tensor::DType::kBF16;  // the config's torch_dtype, else bf16
  std::string suites_dir;  // the shipped suites (suites/ here, else the source tree's)
  bool root = true;        // rank 0 (or a run without a mesh): it runs the service stages
  // The e2e suite's cases for this model, run once for the service stages.
  std::optional<std::vector<run::CaseOutcome>> e2e;
  // The status of each stage run so far (run_checklist fills it).
  std::map<std::string, StageStatus> stage_status;
};

// "--mesh tp=8,pp=2,ep=16" as a plan (dp defaults as `harness plan` does); "" is one device.
// Throws InputError for anything else.
plan::ParallelPlan parse_mesh(const std::string& text);

// A stage's result from the cases it ran: pass when every case passed (skips aside, counted),
// with "N what, M failed (first: id: message)"; not run when there were none or every case was
// skipped (nothing was compared).
StageResult judge(std::vector<run::CaseOutcome> cases, const std::string& what);

// The op cases at the shapes this model runs them (case_builders.cc; 16 tokens; the vocabulary
// capped at 32,768 rows), in its dtype, against the reference kernels: checks as a suite's
// `checks:` entries (suite::suite_of_checks). Needs the config stage's ctx.arch and ctx.model_ops.
std::vector<YAML::Node> model_shape_checks(const Context& ctx);

// The rounding probes (kind: rounding) of add and mul in the model's dtype (f32, bf16 or f16):
// whether the platform rounds to nearest even, and if not, which rounding it uses.
std::vector<YAML::Node> rounding_checks(const Context& ctx);

using StageFn = StageResult (*)(Context&);
StageResult run_config_stage(Context& ctx);
StageResult run_coverage_stage(Context& ctx);
StageResult run_memory_plan_stage(Context& ctx);
StageResult run_load_stage(Context& ctx);
StageResult run_op_accuracy_stage(Context& ctx);
StageResult run_layer_stage(Context& ctx);
StageResult run_model_stage(Context& ctx);
StageResult run_image_stage(Context& ctx);
StageResult run_mesh_stage(Context& ctx);
StageResult run_service_stage(Context& ctx);
StageResult run_e2e_text_stage(Context& ctx);
StageResult run_e2e_image_stage(Context& ctx);
// The accuracy stage is in the checklist when --eval names a task or suites/eval.yaml ships
// tasks for the model.
bool accuracy_stage_applies(const Context& ctx);
StageResult run_accuracy_stage(Context& ctx);
StageResult run_determinism_stage(Context& ctx);
// The serving features (kind: serving) on the platform's engine and its `service.variants`:
// pass when none failed and one was exercised; the summary names those not exercised and why.
StageResult run_serving_stage(Context& ctx);
StageResult run_conversation_stage(Context& ctx);
// Long context (--long SECONDS): the long goldens at their sampled positions, whole and chunked,
// else chunked against one pass; the service's continuation of the long prompt.
StageResult run_long_stage(Context& ctx);
StageResult run_performance_stage(Context& ctx);

}  // namespace h0::day0
