// Runs `kind: collective` cases from YAML text on a given communicator, without the runner:
// load, expand, prepare, run in this process.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "checks/check.h"
#include "suite/matrix.h"
#include "suite/platform.h"
#include "suite/suite.h"
#include "test_util.h"

namespace h0::test {

inline std::vector<checks::CheckResult> run_collective_suite(const std::string& suite_text,
                                                             mesh::Communicator& world) {
  TempDir dir;
  std::ofstream(dir.file("s.yaml")) << suite_text;
  std::ofstream(dir.file("p.yaml")) << "platform: test\nbackend: reference\ncase_timeout: 60s\n";
  checks::register_kinds_with_suite_parser();
  const suite::Suite s = suite::load_suite(dir.file("s.yaml"));
  const suite::Platform platform = suite::load_platform(dir.file("p.yaml"));
  checks::RunContext ctx(platform);
  ctx.set_world(&world);
  std::vector<checks::CheckResult> out;
  for (const suite::Case& c : suite::expand(s)) {
    out.push_back(checks::find_kind(c.check->kind)->prepare(c, platform)->run(ctx));
  }
  return out;
}

// The metric `name` of `r`; -1 if absent.
inline double metric(const checks::CheckResult& r, const std::string& name) {
  for (const auto& [k, v] : r.metrics) {
    if (k == name) return v;
  }
  return -1;
}

}  // namespace h0::test
