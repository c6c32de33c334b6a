// harness list SUITE [--filter F] [--json]: the expanded case ids, in run order.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "commands.h"
#include "run/runner.h"
#include "suite/suite.h"

namespace h0::cli {
namespace {

struct ListOptions {
  std::string suite, filter;
  bool json = false;
};

int run_list(const ListOptions& opt) {
  checks::register_kinds_with_suite_parser();
  const suite::Suite s = suite::load_suite(opt.suite);
  const auto ids = run::list_cases(s, opt.filter);
  if (opt.json) {
    std::printf("%s\n", nlohmann::json{{"suite", s.name}, {"cases", ids}}.dump(2).c_str());
  } else {
    for (const auto& id : ids) std::printf("%s\n", id.c_str());
  }
  return kExitOk;
}

}  // namespace

void register_list(CLI::App& app, Run* run) {
  auto opt = std::make_shared<ListOptions>();
  CLI::App* sub = app.add_subcommand("list", "List the case ids a suite expands to");
  sub->add_option("suite", opt->suite, "Suite YAML file")->required();
  sub->add_option("--filter", opt->filter, "gtest-style case filter");
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt] { *run = [opt] { return run_list(*opt); }; });
}

}  // namespace h0::cli
