// `harness model run` (model_run.cpp), added under `harness model`.
#pragma once

#include <cstdint>
#include <vector>

#include "commands.h"
#include "model/architecture.h"

namespace CLI {
class App;
}

namespace h0::cli {

void add_model_run(CLI::App* model, Run* run);

// A prompt of `n` token ids below min(vocabulary, 1000) (spread, deterministic): what `model run`
// and the Day-0 performance snapshot time.
std::vector<int64_t> synthetic_prompt(const model::Architecture& arch, int64_t n);

}  // namespace h0::cli
