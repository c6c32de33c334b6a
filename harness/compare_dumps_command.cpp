// harness compare-dumps GOLDEN_DIR ACTUAL_DIR [--map names.yaml] [--cosine-min X] [--rel-l2-max X]
// [--json] Compares two directories of probe dumps (golden/tools/dump_hf.py on the reference and on
// the platform, or `harness model run --dump`, or an msprobe dump directory as ACTUAL_DIR: its
// dump.json module entries by HF module name, no map needed): per probe in execution order,
// cosine, max error and relative L2 (for a statistics-only msprobe dump: the largest difference
// of max/min/mean/norm), and the first divergent probe. Exit 0 when every probe matches, 1
// otherwise, 2 for a malformed dump (dump.json, .pt or .npy: the file and the reason).
#include <CLI/CLI.hpp>
#include <cstdio>

#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "compare/dump_compare.h"

namespace h0::cli {
namespace {

struct DumpOptions {
  std::string golden, actual, map;
  double cosine_min = 0.99999, rel_l2_max = 1e-3;
  bool json = false;
};

int run_compare_dumps(const DumpOptions& opt) {
  const compare::NameMap map =
      opt.map.empty() ? compare::NameMap{} : compare::load_name_map(opt.map);
  const compare::DumpComparison c =
      compare::compare_dump_dirs(opt.golden, opt.actual, map, opt.cosine_min, opt.rel_l2_max);
  if (opt.json) {
    std::printf("%s\n", c.to_json().dump(2).c_str());
    return c.ok() ? kExitOk : kExitMismatch;
  }
  for (const auto& f : c.files) {
    std::printf("%s: %zu probes compared%s%s\n", f.file.c_str(), f.report.rows.size(),
                f.inputs.empty() ? "" : "; inputs: ", f.inputs.c_str());
    std::printf("  %-56s %12s %12s %12s\n", "probe", "cosine", "max_abs_err", "rel_l2");
    for (size_t i = 0; i < f.report.rows.size(); ++i) {
      const auto& r = f.report.rows[i];
      const std::string mark =
          int(i) == f.report.first_divergent ? colored("  <- first divergence", "31") : "";
      if (r.statistics) {  // a statistics-only dump: no cosine, the stats' largest differences
        std::printf("  %-56s %12s %12.4g %12.4g%s\n", r.name.c_str(), "(stats)", r.max_abs_err,
                    r.rel_l2, mark.c_str());
      } else {
        std::printf("  %-56s %12.8f %12.4g %12.4g%s\n", r.name.c_str(), r.cosine, r.max_abs_err,
                    r.rel_l2, mark.c_str());
      }
    }
    for (const auto& u : f.unmatched) std::printf("  %-56s (no actual tensor)\n", u.c_str());
    for (const auto& u : f.not_dumped)
      std::printf("  %-56s (not in the msprobe dump's scope)\n", u.c_str());
    if (f.report.first_divergent >= 0)
      std::printf("  first divergence: %s\n", f.report.first_divergence().c_str());
  }
  for (const auto& m : c.missing_files)
    std::printf("%s: no file of that name in %s\n", m.c_str(), opt.actual.c_str());
  std::printf("%s\n", c.ok() ? colored("dumps match", "32").c_str()
                             : colored("dumps differ", "31").c_str());
  return c.ok() ? kExitOk : kExitMismatch;
}

}  // namespace

void register_compare_dumps(CLI::App& app, Run* run) {
  auto opt = std::make_shared<DumpOptions>();
  CLI::App* sub = app.add_subcommand(
      "compare-dumps", "Compare two directories of per-probe dumps; name the first divergence");
  sub->add_option("golden", opt->golden, "The reference dump directory")->required();
  sub->add_option("actual", opt->actual,
                  "The platform's dump directory (or an msprobe dump directory)")
      ->required();
  sub->add_option("--map", opt->map,
                  "YAML map of names: {names: {golden: actual}, prefixes: {golden: actual}}");
  sub->add_option("--cosine-min", opt->cosine_min,
                  "A probe diverges below this cosine (default 0.99999)");
  sub->add_option("--rel-l2-max", opt->rel_l2_max,
                  "... or above this relative L2 error (default 1e-3)");
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt] { *run = [opt] { return run_compare_dumps(*opt); }; });
}

}  // namespace h0::cli
