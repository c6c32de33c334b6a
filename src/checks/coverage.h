// Which ops a model needs and how a backend would run each: natively, by decomposition, on the
// host reference, or not at all. Shared by `harness coverage` and the Day-0 coverage stage.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/fallback.h"
#include "model/config/architecture.h"

namespace h0::checks {

// The ops a modelled architecture runs (model::model_ops, the executor's own binding), by name,
// and dequantize_mxfp4 for an MXFP4 checkpoint (its experts are dequantized on load).
std::set<std::string> ops_of_model(const model::Architecture& arch);

struct CoverageRow {
  std::string op;
  std::vector<std::pair<tensor::DType, backend::Outcome>> routes;
};

// One row per op (all of the catalogue, or just `only` if not empty) over `dtypes`, under
// fallback mode `host` (so every answer says how the op would run, if at all).
std::vector<CoverageRow> coverage(const backend::Backend& backend,
                                  const std::vector<tensor::DType>& dtypes,
                                  const std::set<std::string>& only);

// "native", "decomposed", "host" or "missing".
std::string coverage_word(const backend::Outcome& outcome);

}  // namespace h0::checks
