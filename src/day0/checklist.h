// The Day-0 checklist: the stages in order, what each needs and what gates it, the verdict, and
// the run record of the whole checklist (one case per check each stage ran, one per stage).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "day0/day0.h"
#include "run/runner.h"

namespace h0::day0 {

struct Stage {
  const char* id;
  const char* title;
  StageFn run;
  std::vector<const char*> needs;  // cannot run unless these passed
  std::vector<const char*> after;  // gate it unless --keep-going
  bool needs_weights;              // not run with --dry-run
  // Left out of the checklist unless this holds (the accuracy stage: a task was given or ships).
  bool (*applies)(const Context&) = nullptr;
};

// The Day-0 checklist: order, needs and gates.
const std::vector<Stage>& stages();

struct StageRun {
  Stage stage;  // a copy: the table may be gone
  StageResult result;
};

struct Checklist {
  std::vector<StageRun> stages;  // the stages of this checklist, in order
  int passed = 0, not_modelled = 0, not_applicable = 0;

  // The stages that apply to this model and mesh (all but the not-applicable ones).
  int applicable() const { return int(stages.size()) - not_applicable; }
  // Every applicable stage passed (at least one did).
  bool ready() const;
  // Not ready, but every applicable stage that could run for a family the executor does not
  // model passed (readiness established at the service level).
  bool service_level() const;
  // "established", "service_level" or "not_established".
  const char* verdict() const;
  // "12 of 12 stages passed", or with stages that do not apply "12 of 12 applicable stages
  // passed; 3 not applicable": a stage that does not apply is never counted as passed.
  std::string passed_text() const;
};

// Runs `table`'s stages in order. A stage whose needs did not pass is blocked; one whose `after`
// stages did not pass is blocked unless ctx.options.keep_going (a stage not run for an unmodelled
// family gates nothing); with dry_run, a stage that needs the weights is not run; off rank 0, the
// stages after the mesh are rank 0's. A stage that throws fails with the error on one line
// (mesh::MeshError goes through: the mesh is gone). `on_stage` hears each stage as it ends.
Checklist run_checklist(Context& ctx, const std::vector<Stage>& table,
                        const std::function<void(size_t index, const StageRun&)>& on_stage = {});

// The run record of a checklist: every stage's checks ("<stage>/<case>"), then the stage itself
// ("stage/<id>", kind day0_stage: its title, number, summary, status and the run's verdict); pass
// for a passed stage, fail for a failed one, skip otherwise (a not-applicable stage included;
// details.stage_status names which); last the case "verdict" (kind day0_verdict), failed when
// readiness is not established. `stack` is the backend's stack_info.
run::RunReport run_record(const Context& ctx, const Checklist& checklist,
                          const nlohmann::json& stack, double seconds);

}  // namespace h0::day0
