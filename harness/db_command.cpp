// harness db merge OUT.db IN1.db IN2.db ... [--json]
// Gathers runs from many nodes or clusters into one store: runs already in OUT (same uuid) are
// skipped, a uuid present with different content is a conflict (reported, not copied, exit 1).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "store/sqlite_store.h"

namespace h0::cli {
namespace {

struct MergeOptions {
  std::string out;
  std::vector<std::string> inputs;
  bool json = false;
};

int run_merge(const MergeOptions& opt) {
  // A merge reads its sources: each must be a store already (opening a missing one would create
  // it empty), checked before anything is opened or created.
  for (const auto& path : opt.inputs) {
    if (path == opt.out) throw InputError(path, "cannot merge a store into itself");
    require_store_file(path);
  }
  auto out = store::SqliteStore::open(opt.out);
  nlohmann::json report = nlohmann::json::array();
  int total = 0;
  std::vector<std::string> conflicts;
  for (const auto& path : opt.inputs) {
    const auto in = store::SqliteStore::open(path);
    std::vector<std::string> these;
    const int copied = out->merge_from(*in, &these);
    total += copied;
    report.push_back({{"input", path}, {"copied", copied}, {"conflicts", these}});
    conflicts.insert(conflicts.end(), these.begin(), these.end());
    if (!opt.json) {
      std::printf(
          "%s: %d runs copied%s\n", path.c_str(), copied,
          these.empty() ? "" : (", " + std::to_string(these.size()) + " conflicts").c_str());
      for (const auto& c : these) std::printf("    conflict: %s\n", c.c_str());
    }
  }
  if (opt.json) {
    std::printf(
        "%s\n",
        nlohmann::json{{"out", opt.out}, {"copied", total}, {"inputs", report}}.dump(2).c_str());
  } else {
    std::printf("%s: %d runs copied in all, %zu conflicts\n", opt.out.c_str(), total,
                conflicts.size());
  }
  return conflicts.empty() ? kExitOk : kExitMismatch;
}

}  // namespace

void register_db(CLI::App& app, Run* run) {
  CLI::App* db = app.add_subcommand("db", "Maintain results stores");
  db->require_subcommand(1);
  auto opt = std::make_shared<MergeOptions>();
  CLI::App* merge =
      db->add_subcommand("merge", "Merge the runs of several stores into one (no duplicates)");
  merge->add_option("out", opt->out, "The store to merge into (created if absent)")->required();
  merge->add_option("inputs", opt->inputs, "Stores to read runs from")->required();
  merge->add_flag("--json", opt->json, "Machine-readable output");
  merge->callback([run, opt] { *run = [opt] { return run_merge(*opt); }; });
}

}  // namespace h0::cli
