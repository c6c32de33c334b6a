// The subcommands of `harness`. Each file harness/<name>_command.cpp defines one register
// function: it adds its subcommand and options to the app and sets `run` to what executes when
// that subcommand is chosen. main.cpp lists them in one table.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace h0::cli {

using Run = std::function<int()>;

void register_inspect(CLI::App& app, Run* run);
void register_compare(CLI::App& app, Run* run);
void register_compare_dumps(CLI::App& app, Run* run);
void register_day0(CLI::App& app, Run* run);
void register_run(CLI::App& app, Run* run);
void register_list(CLI::App& app, Run* run);
void register_op(CLI::App& app, Run* run);
void register_coverage(CLI::App& app, Run* run);
void register_plan(CLI::App& app, Run* run);
void register_diff(CLI::App& app, Run* run);
void register_history(CLI::App& app, Run* run);
void register_db(CLI::App& app, Run* run);
void register_model(CLI::App& app, Run* run);
void register_load(CLI::App& app, Run* run);
void register_report(CLI::App& app, Run* run);
void register_serve(CLI::App& app, Run* run);
void register_ab(CLI::App& app, Run* run);
void register_profile(CLI::App& app, Run* run);

}  // namespace h0::cli
