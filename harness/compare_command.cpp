// harness compare ACTUAL EXPECTED [--tensor NAME]... [--preset P] [--rtol R] [--atol A]
//                 [--threshold KEY=VALUE]... [--map FILE] [--rename FROM=TO]... [--json]
// Argument order as torch.testing.assert_close(actual, expected). Every tensor present in both
// files is compared; a tensor missing from ACTUAL fails; one only in ACTUAL is listed. Files that
// name their tensors otherwise pair through a map (compare-dumps' YAML: names and prefixes,
// expected -> actual) or --rename prefixes.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "compare/dump_compare.h"
#include "compare/tensor_compare.h"
#include "io/sharded_checkpoint.h"

namespace h0::cli {
namespace {

struct CompareOptions {
  std::string actual, expected;
  std::vector<std::string> tensors;
  std::string preset = "auto";
  std::optional<double> rtol, atol;
  std::vector<std::string> thresholds;
  std::string map;                   // a name map file (compare-dumps' format)
  std::vector<std::string> renames;  // "EXPECTED_PREFIX=ACTUAL_PREFIX"
  bool json = false;
};

// The expected -> actual name map of --map and --rename (none: names pair as they are).
compare::NameMap name_map(const CompareOptions& opt) {
  compare::NameMap map = opt.map.empty() ? compare::NameMap{} : compare::load_name_map(opt.map);
  for (const auto& r : opt.renames) {
    const auto eq = r.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--rename " + r, "expected EXPECTED_PREFIX=ACTUAL_PREFIX, e.g. model.=");
    map.prefixes.emplace_back(r.substr(0, eq), r.substr(eq + 1));
  }
  return map;
}

compare::Tolerance build_tolerance(const CompareOptions& opt) {
  auto tol = compare::preset(opt.preset);
  if (!tol) {
    throw InputError("--preset", "unknown preset '" + opt.preset + "' (expected one of " +
                                     compare::preset_names() + ")");
  }
  if (opt.rtol || opt.atol) {
    if (tol->preset == "auto" || tol->preset == "none") {
      throw InputError("--rtol/--atol",
                       "need a dtype preset or `exact` as the base, not '" + tol->preset + "'");
    }
    if (opt.rtol) tol->element.rtol = *opt.rtol;
    if (opt.atol) tol->element.atol = *opt.atol;
    tol->preset += "+custom";
  }
  for (const auto& item : opt.thresholds) {
    const auto eq = item.find('=');
    double value = 0;
    size_t used = 0;
    bool parsed = false;
    if (eq != std::string::npos) {
      try {
        value = std::stod(item.substr(eq + 1), &used);
        parsed = used == item.size() - eq - 1;
      } catch (const std::exception&) {
      }
    }
    if (!parsed)
      throw InputError("--threshold " + item, "expected KEY=NUMBER, e.g. cosine_min=0.9999");
    auto t = compare::parse_threshold(item.substr(0, eq), value);
    if (!t) {
      throw InputError("--threshold " + item,
                       "unknown key (expected one of " + compare::threshold_keys() + ")");
    }
    tol->thresholds.push_back(*t);
  }
  return *tol;
}

nlohmann::json comparison_json(const std::string& name, const tensor::Tensor& a,
                               const tensor::Tensor& e, const compare::Comparison& c) {
  nlohmann::json j = {{"name", name},
                      {"status", c.pass ? "pass" : "fail"},
                      {"actual_dtype", tensor::dtype_name(a.dtype())},
                      {"expected_dtype", tensor::dtype_name(e.dtype())},
                      {"actual_shape", a.shape()},
                      {"expected_shape", e.shape()},
                      {"preset", c.tolerance.preset},
                      {"rtol", c.tolerance.element.rtol},
                      {"atol", c.tolerance.element.atol},
                      {"failures", c.failures}};
  if (c.metrics_valid) {
    const auto& m = c.metrics;
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& [k, v] : compare::metric_values(m)) metrics[k] = v;
    if (!m.max_ulp) metrics["max_ulp"] = nullptr;
    j["metrics"] = metrics;
    j["count"] = m.count;
    j["nan_actual"] = m.nan_actual;
    j["nan_expected"] = m.nan_expected;
    j["inf_actual"] = m.inf_actual;
    j["inf_expected"] = m.inf_expected;
    j["worst_index"] = m.worst_index;
    if (m.worst_index >= 0) {
      j["worst_actual"] = m.worst_actual;
      j["worst_expected"] = m.worst_expected;
    }
    j["worst_excess_index"] = m.worst_excess_index;
  }
  return j;
}

void print_comparison(const nlohmann::json& j, size_t width) {
  const bool pass = j["status"] == "pass";
  std::printf("%s  %-*s  %s vs %s  [%s]",
              pass ? colored("PASS", "32").c_str() : colored("FAIL", "31").c_str(),
              static_cast<int>(width), j["name"].get<std::string>().c_str(),
              j["actual_dtype"].get<std::string>().c_str(),
              j["expected_dtype"].get<std::string>().c_str(),
              tensor::shape_string(j["expected_shape"].get<tensor::Shape>()).c_str());
  if (j.contains("metrics")) {
    const auto& m = j["metrics"];
    std::printf("  max_abs %s  max_rel %s  cosine %.9f", short_number(m["max_abs_err"]).c_str(),
                short_number(m["max_rel_err"]).c_str(), m["cosine"].get<double>());
    if (!m["max_ulp"].is_null()) std::printf("  ulp %.0f", m["max_ulp"].get<double>());
  }
  std::printf("\n");
  for (const auto& f : j["failures"]) std::printf("      %s\n", f.get<std::string>().c_str());
  if (!pass && j.contains("worst_actual")) {
    std::printf("      largest |a-e| at index %lld: actual %s, expected %s\n",
                static_cast<long long>(j["worst_index"].get<int64_t>()),
                short_number(j["worst_actual"]).c_str(), short_number(j["worst_expected"]).c_str());
  }
}

int run_compare(const CompareOptions& opt) {
  const compare::Tolerance tolerance = build_tolerance(opt);
  const auto actual = io::ShardedCheckpoint::open(opt.actual);
  const auto expected = io::ShardedCheckpoint::open(opt.expected);

  // Pairs by the expected file's names, each with its actual name through the map.
  const compare::NameMap map = name_map(opt);
  std::vector<std::string> names, only_actual, only_expected;
  std::set<std::string> paired;
  if (!opt.tensors.empty()) {
    for (const auto& n : opt.tensors) {
      if (!expected.find(n)) throw InputError(opt.expected, "no tensor '" + n + "'");
      if (const std::string a = map.map(n); !actual.find(a))
        throw InputError(opt.actual, "no tensor '" + a + "'");
      names.push_back(n);
    }
  } else {
    for (const auto& n : expected.names()) {
      const std::string a = map.map(n);
      const bool found = actual.find(a) != nullptr;
      (found ? names : only_expected).push_back(n);
      if (found) paired.insert(a);
    }
    for (const auto& n : actual.names()) {
      if (!paired.count(n)) only_actual.push_back(n);
    }
    // Nothing in common: the files name their tensors differently (another converter, another
    // prefix), an input to fix, not a numerical mismatch.
    if (names.empty() && !only_expected.empty() && !only_actual.empty()) {
      throw InputError(opt.actual, "no tensor name in common with " + opt.expected + " (" +
                                       std::to_string(only_actual.size()) + " here, e.g. '" +
                                       only_actual.front() + "'; " +
                                       std::to_string(only_expected.size()) + " there, e.g. '" +
                                       only_expected.front() +
                                       "'): pair them with --rename EXPECTED_PREFIX=ACTUAL_PREFIX "
                                       "or --map FILE, or name pairs with --tensor");
    }
  }

  nlohmann::json results = nlohmann::json::array();
  int failed = 0;
  for (const auto& n : names) {
    const std::string actual_name = map.map(n);
    const tensor::Tensor a = actual.get(actual_name), e = expected.get(n);
    const auto c = compare::compare_tensors(a, e, tolerance);
    failed += c.pass ? 0 : 1;
    results.push_back(comparison_json(n, a, e, c));
    if (actual_name != n) results.back()["actual_name"] = actual_name;
  }
  const bool pass = failed == 0 && only_expected.empty();

  if (opt.json) {
    nlohmann::json out = {{"actual", opt.actual},
                          {"expected", opt.expected},
                          {"preset", opt.preset},
                          {"tensors", results},
                          {"only_in_actual", only_actual},
                          {"only_in_expected", only_expected},
                          {"compared", names.size()},
                          {"failed", failed},
                          {"pass", pass}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("compare %s (actual) vs %s (expected), preset %s\n", opt.actual.c_str(),
                opt.expected.c_str(), opt.preset.c_str());
    size_t width = 4;
    for (const auto& n : names) width = std::max(width, n.size());
    for (const auto& r : results) print_comparison(r, width);
    auto print_list = [](const char* what, const std::vector<std::string>& list) {
      if (list.empty()) return;
      std::printf("%s (%zu):", what, list.size());
      for (const auto& n : list) std::printf(" %s", n.c_str());
      std::printf("\n");
    };
    print_list(colored("missing from actual", "31").c_str(), only_expected);
    print_list("only in actual (not compared)", only_actual);
    std::printf("%zu compared, %d failed, %zu missing from actual: %s\n", names.size(), failed,
                only_expected.size(),
                pass ? colored("PASS", "32").c_str() : colored("FAIL", "31").c_str());
  }
  return pass ? kExitOk : kExitMismatch;
}

}  // namespace

void register_compare(CLI::App& app, Run* run) {
  auto opt = std::make_shared<CompareOptions>();
  CLI::App* sub = app.add_subcommand(
      "compare", "Compare the tensors of ACTUAL against EXPECTED (metrics, tolerance verdict)");
  sub->add_option("actual", opt->actual, "Safetensors file or checkpoint under test")->required();
  sub->add_option("expected", opt->expected, "The golden safetensors file or checkpoint")
      ->required();
  sub->add_option("--tensor", opt->tensors, "Compare only this tensor (repeatable)");
  sub->add_option("--preset", opt->preset,
                  "Tolerance preset: auto (the less precise dtype's), f64, f32, f16, bf16, "
                  "f8_e4m3, f8_e5m2, exact, none")
      ->capture_default_str();
  sub->add_option("--rtol", opt->rtol, "Override the preset's rtol");
  sub->add_option("--atol", opt->atol, "Override the preset's atol");
  sub->add_option(
      "--threshold", opt->thresholds,
      "Metric bound KEY=VALUE, e.g. cosine_min=0.9999 or max_abs_max=0.01 (repeatable)");
  sub->add_option("--map", opt->map,
                  "YAML name map, expected -> actual: {names: {a: b}, prefixes: {model.: ''}}");
  sub->add_option("--rename", opt->renames,
                  "Pair expected names starting FROM with actual names starting TO: FROM=TO "
                  "(repeatable)");
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt] { *run = [opt] { return run_compare(*opt); }; });
}

}  // namespace h0::cli
