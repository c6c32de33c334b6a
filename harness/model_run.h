// `harness model run` (model_run.cpp), added under `harness model`.
#pragma once

#include <cstdint>
#include <vector>

#include "commands.h"
#include "model/config/architecture.h"

namespace CLI {
class App;
}

namespace h0::cli {

void add_model_run(CLI::App* model, Run* run);

}  // namespace h0::cli
