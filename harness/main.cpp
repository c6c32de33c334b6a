// `harness`: the day0 harness command. One subcommand per file (commands.h); this file parses
// the command line and turns errors into exit codes: 0 ok, 1 a check failed or tensors differ,
// 2 a usage or input error (printed as "where: what").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/version.h"
#include "commands.h"
#include "mesh/communicator.h"
#include "report/terminal.h"

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

// The subcommand nearest to `word` by edit distance (at most 2 edits), or "".
std::string nearest_subcommand(const CLI::App& app, const std::string& word) {
  std::string best;
  size_t best_d = 3;
  for (const CLI::App* sub : app.get_subcommands({})) {
    const std::string& name = sub->get_name();
    std::vector<size_t> row(name.size() + 1);
    for (size_t j = 0; j <= name.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      size_t diag = row[0];
      row[0] = i;
      for (size_t j = 1; j <= name.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (word[i - 1] != name[j - 1])});
        diag = up;
      }
    }
    if (row[name.size()] < best_d) {
      best_d = row[name.size()];
      best = name;
    }
  }
  return best;
}

// Whether the chosen subcommand was asked for JSON on stdout (its --json flag; `run`'s --json
// names a file instead): its errors are then JSON too.
bool json_output(const CLI::App& app) {
  const CLI::App* sub = &app;
  while (!sub->get_subcommands().empty()) sub = sub->get_subcommands().front();
  const CLI::Option* json = sub->get_option_no_throw("--json");
  return json != nullptr && json->count() > 0 && json->get_expected_max() == 0;  // a flag
}

// An error on stderr as ever and, in --json mode, as {"error": {...}} on stdout.
int fail(const CLI::App& app, int code, const char* kind, const std::string& where,
         const std::string& message, const std::string& text) {
  std::fprintf(stderr, "harness: %s: %s\n", kind, text.c_str());
  if (json_output(app)) {
    const nlohmann::json j = {
        {"error", {{"kind", kind}, {"where", where}, {"message", message}, {"exit_code", code}}}};
    std::printf("%s\n", j.dump(2).c_str());
  }
  return code;
}

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
  // --color (and --help, --version) also after the subcommand: `harness day0 --color never`.
  app.fallthrough(true);
  std::string color = "auto";
  app.add_option("--color", color,
                 "ANSI colours: auto (the user's terminal, NO_COLOR unset, not under a launcher), "
                 "always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
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
    // A word where a subcommand goes that names none: say which, and the nearest one.
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands().empty()) {
      const std::string word = argv[1], near = nearest_subcommand(app, word);
      std::fprintf(stderr,
                   "harness: error: unknown subcommand '%s'%s (harness --help lists them)\n",
                   word.c_str(), near.empty() ? "" : (" (did you mean " + near + "?)").c_str());
      return h0::kExitInput;
    }
    app.exit(e);
    return h0::kExitInput;
  }

  h0::report::set_color_mode(color == "always"  ? h0::report::ColorMode::kAlways
                             : color == "never" ? h0::report::ColorMode::kNever
                                                : h0::report::ColorMode::kAuto);
  try {
    return run ? run() : h0::kExitInput;
  } catch (const h0::InputError& e) {
    return fail(app, h0::kExitInput, "error", e.where(), e.message(), e.what());
  } catch (const h0::mesh::MeshError& e) {
    return fail(app, 4, "mesh error", "", e.what(), e.what());
  } catch (const std::exception& e) {
    return fail(app, 3, "internal error", "", e.what(), e.what());
  }
}
