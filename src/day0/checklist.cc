#include "day0/checklist.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "base/error.h"
#include "mesh/communicator.h"

namespace h0::day0 {

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
      {"serving", "serving features", &run_serving_stage, {"service"}, {"e2e_text"}, true},
      {"conversation",
       "conversation layer",
       &run_conversation_stage,
       {"service"},
       {"e2e_text"},
       true},
      {"long_context", "long context", &run_long_stage, {"load"}, {"model"}, true},
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

bool Checklist::ready() const { return passed > 0 && passed == applicable(); }

bool Checklist::service_level() const {
  return !ready() && not_modelled > 0 && passed + not_modelled == applicable();
}

std::string Checklist::passed_text() const {
  std::string text = std::to_string(passed) + " of " + std::to_string(applicable()) +
                     (not_applicable > 0 ? " applicable" : "") + " stages passed";
  if (not_applicable > 0) text += "; " + std::to_string(not_applicable) + " not applicable";
  return text;
}

const char* Checklist::verdict() const {
  return ready() ? "established" : service_level() ? "service_level" : "not_established";
}

namespace {

// An error's text on one line: a multi-line error (verify_checkpoint's list of tensors) keeps
// its names.
std::string one_line(std::string why) {
  for (size_t at; (at = why.find("\n")) != std::string::npos;) {
    size_t end = at + 1;
    while (end < why.size() && why[end] == ' ') ++end;
    why.replace(at, end - at, at > 0 && why[at - 1] == ':' ? " " : "; ");
  }
  return why;
}

// The run's verdict as a case of its own (kind day0_verdict): failed when readiness is not
// established, so that JUnit, the dashboard's counts and `history` see a failed run as one however
// its other cases went (blocked stages are skips).
run::CaseOutcome verdict_case(const Checklist& checklist) {
  run::CaseOutcome c{"verdict", "verdict", "day0_verdict", {"day0"}, {}};
  const std::string verdict = checklist.verdict();
  c.result.status = verdict == "not_established" ? Status::kFail : Status::kPass;
  std::string missing;
  for (const StageRun& s : checklist.stages) {
    if (s.result.status == StageStatus::kPass || s.result.status == StageStatus::kNotApplicable ||
        (s.result.status == StageStatus::kNotModelled && checklist.service_level()))
      continue;
    missing += std::string(missing.empty() ? "" : ", ") + s.stage.id + " (" +
               stage_status_name(s.result.status) + ")";
  }
  c.result.message = "Day-0 readiness " +
                     std::string(verdict == "established"     ? "established"
                                 : verdict == "service_level" ? "established at the service level"
                                                              : "NOT established") +
                     ": " + checklist.passed_text() +
                     (missing.empty() ? "" : "; not passed: " + missing);
  c.result.details = {{"verdict", verdict},
                      {"passed", checklist.passed},
                      {"applicable", checklist.applicable()},
                      {"not_modelled", checklist.not_modelled}};
  return c;
}

}  // namespace

Checklist run_checklist(Context& ctx, const std::vector<Stage>& table,
                        const std::function<void(size_t index, const StageRun&)>& on_stage) {
  Checklist out;
  std::map<std::string, StageStatus> status;
  bool rank_stop = false;
  for (const Stage& s : table) {
    if (s.applies != nullptr && !s.applies(ctx)) continue;
    StageResult r;
    std::string unmet, gate;
    for (const char* n : s.needs) {
      if (status[n] != StageStatus::kPass && unmet.empty()) unmet = n;
    }
    for (const char* n : s.after) {  // a stage not run for an unmodelled family, or one that
                                     // does not apply, gates nothing
      const StageStatus g = status[n];
      if (g != StageStatus::kPass && g != StageStatus::kNotModelled &&
          g != StageStatus::kNotApplicable && gate.empty())
        gate = n;
    }
    if (ctx.options.dry_run && s.needs_weights) {
      r = {StageStatus::kNotRun, "not run (dry run: needs the weights)", {}, {}};
    } else if (rank_stop) {
      r = {StageStatus::kNotRun, "rank 0 runs the service stages", {}, {}};
    } else if (!unmet.empty()) {
      r = {StageStatus::kBlocked, "blocked: " + unmet + " did not pass", {}, {}};
    } else if (!gate.empty() && !ctx.options.keep_going) {
      r = {StageStatus::kBlocked,
           "blocked: " + gate + " did not pass (--keep-going runs it anyway)",
           {},
           {}};
    } else {
      try {
        r = s.run(ctx);
      } catch (const mesh::MeshError&) {
        throw;
      } catch (const std::exception& e) {  // a bad model directory, a backend that will not open
        r = {StageStatus::kFail, one_line(e.what()), {}, {{"error", e.what()}}};
      }
    }
    if (std::string(s.id) == "mesh" && !ctx.root) rank_stop = true;
    status[s.id] = r.status;
    ctx.stage_status[s.id] = r.status;
    out.passed += r.status == StageStatus::kPass;
    out.not_modelled += r.status == StageStatus::kNotModelled;
    out.not_applicable += r.status == StageStatus::kNotApplicable;
    out.stages.push_back({s, std::move(r)});
    if (on_stage) on_stage(out.stages.size() - 1, out.stages.back());
  }
  return out;
}

run::RunReport run_record(const Context& ctx, const Checklist& checklist,
                          const nlohmann::json& stack, double seconds) {
  run::RunReport report;
  report.suite_name = "day0";
  report.suite_file = "day0:" + ctx.options.model;
  report.platform_name = ctx.platform.name;
  report.platform_file = ctx.platform.file;
  report.platform_sha256 = ctx.platform.sha256;
  report.duration_s = seconds;
  report.stack = stack;
  const std::string verdict = checklist.verdict();
  for (size_t i = 0; i < checklist.stages.size(); ++i) {
    const Stage& s = checklist.stages[i].stage;
    const StageResult& r = checklist.stages[i].result;
    for (const auto& c : r.cases) {
      run::CaseOutcome o = c;
      o.id = std::string(s.id) + "/" + c.id;
      report.cases.push_back(std::move(o));
    }
    // By id, not number: a stage keeps its row across models whose checklists differ.
    run::CaseOutcome stage{std::string("stage/") + s.id, s.id, "day0_stage", {"day0"}, {}};
    stage.result.status = r.status == StageStatus::kPass   ? Status::kPass
                          : r.status == StageStatus::kFail ? Status::kFail
                                                           : Status::kSkip;
    stage.result.message = r.summary;
    stage.result.details = r.details;
    stage.result.details["title"] = s.title;
    stage.result.details["stage_status"] = stage_status_name(r.status);
    stage.result.details["verdict"] =
        verdict;  // the run's, on every stage (the dashboard shows it)
    stage.result.details["number"] = i + 1;
    report.cases.push_back(std::move(stage));
  }
  report.cases.push_back(verdict_case(checklist));
  return report;
}

}  // namespace h0::day0
