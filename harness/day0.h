// The Day-0 readiness run (`harness day0`): the stages a platform team clears on release day,
// in order, each gating the ones that need it. day0_stages.cpp runs one stage each;
// day0_command.cpp orders them, prints the checklist and writes one run record (store, JSON,
// JUnit, dashboard).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/architecture.h"
#include "model/inventory.h"
#include "plan/parallel_plan.h"
#include "run/runner.h"
#include "suite/platform.h"

namespace h0::cli {

struct Day0Options {
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
  std::string db = "reports/results.db";
  std::string out = "reports/day0";  // dashboard, day0.json, day0.xml
  std::vector<std::string> labels;
  bool json = false, keep_going = false, dry_run = false, no_db = false, no_report = false;
};

// kNotModelled: the stage needs the executor and the model's family is not modelled; it does
// not gate later stages, and a run whose other stages all passed is established at the service
// level (exit 0) rather than fully.
enum class StageStatus { kPass, kFail, kBlocked, kNotRun, kNotModelled };
const char* stage_status_name(StageStatus s);

struct StageResult {
  StageStatus status = StageStatus::kNotRun;
  std::string summary;                  // the key number, or why
  std::vector<run::CaseOutcome> cases;  // the checks it ran (into the run record)
  nlohmann::json details = nlohmann::json::object();
};

// What every stage sees.
struct Day0Context {
  const Day0Options& options;
  const suite::Platform& platform;
  plan::ParallelPlan parallel;              // --mesh, else one device
  mesh::Communicator* world = nullptr;      // under a launcher
  std::string model_name;                   // the model directory's name
  std::optional<model::Architecture> arch;  // read by the config stage
  // A family the executor does not model: the checkpoint's tensors as stored (none for a
  // config-only directory).
  std::optional<model::Inventory> stored;
  std::set<std::string> model_ops;  // the catalogue ops the model's config needs
  std::string model_dtype;
  std::string suite_dir;  // a scratch folder for generated suites
  // The e2e suite's cases for this model, run once for the service stages.
  std::optional<std::vector<run::CaseOutcome>> e2e;
};

using StageFn = StageResult (*)(Day0Context&);
StageResult run_config_stage(Day0Context& ctx);
StageResult run_coverage_stage(Day0Context& ctx);
StageResult run_memory_plan_stage(Day0Context& ctx);
StageResult run_load_stage(Day0Context& ctx);
StageResult run_op_accuracy_stage(Day0Context& ctx);
StageResult run_layer_stage(Day0Context& ctx);
StageResult run_model_stage(Day0Context& ctx);
StageResult run_image_stage(Day0Context& ctx);
StageResult run_mesh_stage(Day0Context& ctx);
StageResult run_service_stage(Day0Context& ctx);
StageResult run_e2e_text_stage(Day0Context& ctx);
StageResult run_e2e_image_stage(Day0Context& ctx);
// The accuracy stage is in the checklist when --eval names a task or suites/eval.yaml ships
// tasks for the model.
bool accuracy_stage_applies(const Day0Context& ctx);
StageResult run_accuracy_stage(Day0Context& ctx);
StageResult run_determinism_stage(Day0Context& ctx);
StageResult run_performance_stage(Day0Context& ctx);

}  // namespace h0::cli
