// The whole Day-0 readiness run behind `harness day0` (run_day0.cc): the pre-flight (the golden
// manifest), the checklist (checklist.h) with one terminal line per stage, then one run record
// heard by the store, day0.json and day0.xml, the dashboard drawn from the store, and the verdict
// as an exit code. What only the command line knows (the launcher's mesh, the --label items,
// where the source tree is, whether the terminal takes colors) comes in as a Launch.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "day0/day0.h"

namespace h0::day0 {

// What the command line resolves before the run starts.
struct Launch {
  std::chrono::steady_clock::time_point started;  // when the command began: the run's seconds
  std::string started_at;                         // the same, as the store's UTC time
  std::map<std::string, std::string> labels;      // --label KEY=VALUE, parsed
  mesh::Communicator* world = nullptr;            // under a launcher with more than one rank
  bool root = true;           // rank 0 (or one rank): it prints, writes the store and the reports
  std::string mesh_name;      // the store's `mesh` of the run: "mpi x4"; empty for one rank
  std::string golden_dir;     // golden/: its manifest.json is verified before any stage runs
  std::string platform_file;  // the platform config (--platform, else the cpu platform's)
  std::string suites_dir;     // the shipped suites (suites/ here, else the source tree's)
  bool color = false;         // the terminal takes ANSI colors
};

// Throws InputError, before anything runs (exit 2), for options no run can use: a --model that is
// not a directory or has no config.json, a config.json that is no JSON (one that parses is stage
// 1's to judge), a --golden that is not a directory, an --eval task that does not load,
// --eval-reference without --eval or as a file for more than one task, a --tool-reference that
// is not an http(s) URL.
void check_options(const Options& opt);

// Runs the checklist for `opt` (checked by check_options) and reports it. Returns kExitInput when
// the golden manifest does not verify (no stage runs), kExitOk when Day-0 readiness is
// established (every applicable stage passed, or at the service level), kExitMismatch otherwise;
// off rank 0, kExitMismatch when a stage of its share (those up to the mesh) failed or was
// blocked, and it neither prints nor writes. Throws InputError for a bad --mesh or platform file.
int run_day0(const Options& opt, const Launch& launch);

}  // namespace h0::day0
