// What the stage runners share (internal to src/day0: stages.cc, service_stages.cc): running a
// shipped suite's cases or the cases built for the model, and reading their outcomes.
#pragma once

#include <string>
#include <vector>

#include "day0/day0.h"

namespace h0::day0 {

// The cases of a shipped suite (suites/<name>) that `filter` selects.
std::vector<run::CaseOutcome> run_cases(Context& ctx, const std::string& name,
                                        const std::string& filter);
// Cases built here for this model (`checks` as a suite file's entries), all of them.
std::vector<run::CaseOutcome> run_built(Context& ctx, const std::string& name,
                                        const std::vector<YAML::Node>& checks);
// Whether the shipped suite (suites/<suite>) has cases for this model ("<model name>/...").
bool shipped(const Context& ctx, const std::string& suite);
// The case's metric `name`, or `fallback`.
double metric(const run::CaseOutcome& c, const std::string& name, double fallback = -1);
// `v` with `digits` decimals.
std::string fixed(double v, int digits);
// A stage that needs the executor, for a family it does not model.
StageResult not_modelled(const Context& ctx, const std::string& what);

}  // namespace h0::day0
