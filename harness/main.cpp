// `harness`: the day0 harness command. One subcommand per file (commands.h); this file parses
// the command line and turns errors into exit codes: 0 ok, 1 a check failed or tensors differ,
// 2 a usage or input error (printed as "where: what").
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

#include "base/error.h"
#include "base/version.h"
#include "commands.h"
#include "mesh/communicator.h"

namespace {

struct Subcommand {
  void (*add)(CLI::App&, h0::cli::Run*);
};

// Adding a subcommand: one new file and one row here.
constexpr Subcommand kSubcommands[] = {
    {h0::cli::register_run},      {h0::cli::register_list},    {h0::cli::register_op},
    {h0::cli::register_coverage}, {h0::cli::register_plan},    {h0::cli::register_diff},
    {h0::cli::register_history},  {h0::cli::register_ab},      {h0::cli::register_db},
    {h0::cli::register_model},    {h0::cli::register_load},    {h0::cli::register_report},
    {h0::cli::register_inspect},  {h0::cli::register_compare}, {h0::cli::register_compare_dumps},
    {h0::cli::register_day0},     {h0::cli::register_serve},   {h0::cli::register_profile},
};

std::string version_string() {
  return std::string("harness ") + h0::base::kHarnessVersion + " (git " + h0::base::kGitSha + ", " +
         h0::base::kCompiler + ", " + h0::base::kBuildType + ")";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "day0 harness: validates a model on an accelerator software stack, layer by "
      "layer, against golden outputs."};
  app.set_version_flag("--version", version_string());
  app.require_subcommand(1);
  app.fallthrough(false);
  h0::cli::Run run;
  for (const auto& sub : kSubcommands) sub.add(app, &run);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return h0::kExitInput;
  }

  try {
    return run ? run() : h0::kExitInput;
  } catch (const h0::InputError& e) {
    std::fprintf(stderr, "harness: error: %s\n", e.what());
    return h0::kExitInput;
  } catch (const h0::mesh::MeshError& e) {
    std::fprintf(stderr, "harness: mesh error: %s\n", e.what());
    return 4;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "harness: internal error: %s\n", e.what());
    return 3;
  }
}
