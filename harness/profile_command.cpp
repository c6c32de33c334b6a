// harness profile import TRACE [--db F] [--label K=V]... [--case ID] [--platform NAME]
//                          [--step-pattern RE] [--top N] [--json]
// Reads a serving engine's own profile — the Chrome trace-event JSON of the PyTorch profiler
// (vLLM's /start_profile + /stop_profile, SGLang's, a vendor's trace view; plain or gzipped) —
// aggregates it per kernel and per phase (io/trace_profile.h) and stores it as a run of its own:
// suite "engine-profile", one case (--case, default engine_profile) whose profile rows are the
// kernels, its stack the labels (driver=..., op_library=...). `harness diff` and `history` then
// compare it with the engine's other runs: which kernels' time per step moved, which appeared or
// vanished. Exit 2 for a missing or malformed trace.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/error.h"
#include "base/sha256.h"
#include "base/text_format.h"
#include "commands.h"
#include "diff/diff.h"
#include "io/trace_profile.h"
#include "mesh_run.h"
#include "store/sqlite_store.h"

namespace h0::cli {
namespace {

struct ProfileImportOptions {
  std::string trace;
  std::string db = "reports/results.db";
  std::vector<std::string> labels;
  std::string case_id = "engine_profile";
  std::string platform = "engine";
  io::TraceProfileOptions profile;
  int top = 10;
  bool json = false;
};

// The sha256 of the file at `path`, read in pieces (a mapped file would count toward the memory a
// large trace's import takes).
std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot read the trace");
  base::Sha256 h;
  std::vector<char> buf(1 << 20);
  while (in.read(buf.data(), std::streamsize(buf.size())) || in.gcount() > 0)
    h.update(buf.data(), size_t(in.gcount()));
  return h.hex_digest();
}

// The heaviest kernels of each phase, with their share of the phase's step time.
nlohmann::json top_kernels(const std::vector<store::ProfileData>& rows, int top) {
  std::map<std::string, std::vector<const store::ProfileData*>> by_phase;
  for (const auto& r : rows)
    if (r.name != "(step)") by_phase[r.phase].push_back(&r);
  const std::map<std::string, double> phase_ns = diff::engine_phase_ns(rows);
  nlohmann::json out = nlohmann::json::object();
  for (auto& [phase, list] : by_phase) {
    std::sort(list.begin(), list.end(),
              [](const auto* a, const auto* b) { return a->total_ns > b->total_ns; });
    const double whole = phase_ns.count(phase) ? phase_ns.at(phase) : 0;
    nlohmann::json items = nlohmann::json::array();
    for (size_t i = 0; i < list.size() && int(i) < top; ++i) {
      items.push_back({{"name", list[i]->name},
                       {"calls", list[i]->count},
                       {"total_ns", list[i]->total_ns},
                       {"share", whole > 0 ? list[i]->total_ns / whole : 0.0}});
    }
    out[phase] = {{"kernels", list.size()}, {"time_ns", whole}, {"top", items}};
  }
  return out;
}

int run_import(const ProfileImportOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const io::TraceProfile p = io::profile_trace(opt.trace, opt.profile);
  const double parse_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::map<std::string, std::string> labels = parse_labels(opt.labels);

  store::RunStart start;
  start.suite = "engine-profile";
  start.suite_file = opt.trace;
  start.suite_sha256 = file_sha256(opt.trace);
  start.platform = opt.platform;
  start.platform_file = "";
  start.platform_content = "";
  start.backend = "engine";
  // The stack: the labels and what the trace says of its engine (vLLM writes vllm_version).
  nlohmann::json engine = nlohmann::json::object();
  for (const auto& [key, value] : p.metadata)
    if (key.find("version") != std::string::npos) engine[key] = value;
  start.versions_json =
      nlohmann::json{{"source", "engine trace"}, {"engine", engine}, {"labels", labels}}.dump();
  start.mesh = "";
  start.labels = labels;
  const nlohmann::json top = top_kernels(p.rows, opt.top);
  store::ResultData r;
  r.case_id = r.check_id = opt.case_id;
  r.kind = "engine_profile";
  r.status = "pass";
  r.duration_s = parse_s;
  r.message = std::to_string(p.kernel_calls) + " kernel calls on the " + p.stream + ", " +
              std::to_string(p.steps) + " steps";
  r.details_json = nlohmann::json{
      {"trace", opt.trace},
      {"stream", p.stream},
      {"events", p.events},
      {"bytes", p.bytes},
      {"kernel_calls", p.kernel_calls},
      {"steps", p.steps},
      {"prefill_steps", p.prefill_steps},
      {"decode_steps", p.decode_steps},
      {"notes", p.notes},
      {"engine", p.metadata},
      {"parse_s", parse_s},
      {"phases", top}}.dump();
  r.profiles = p.rows;

  auto db = store::SqliteStore::open(opt.db);
  const int64_t run_id = db->begin_run(start);
  db->add_result(run_id, r);
  db->finish_run(run_id, "pass");
  const store::RunData stored = *db->load_run(run_id);

  if (opt.json) {
    nlohmann::json j = nlohmann::json::parse(r.details_json);
    j["run"] = run_id;
    j["uuid"] = stored.uuid;
    j["stack"] = stored.stack.fingerprint;
    j["db"] = opt.db;
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  const std::string mixed =
      p.mixed_steps > 0 ? ", " + std::to_string(p.mixed_steps) + " mixed" : std::string();
  std::printf(
      "%s: %s events (%s bytes), %s kernel calls on the %s, %lld steps (%lld prefill, "
      "%lld decode%s), read in %.2f s\n",
      opt.trace.c_str(), with_commas(p.events).c_str(), with_commas(p.bytes).c_str(),
      with_commas(p.kernel_calls).c_str(), p.stream.c_str(), static_cast<long long>(p.steps),
      static_cast<long long>(p.prefill_steps), static_cast<long long>(p.decode_steps),
      mixed.c_str(), parse_s);
  for (const auto& note : p.notes) std::printf("  note: %s\n", note.c_str());
  for (const auto& [phase, ph] : top.items()) {
    std::printf("  %s: %lld kernels, %.3f ms\n", phase.c_str(),
                static_cast<long long>(ph["kernels"].get<int64_t>()),
                ph["time_ns"].get<double>() / 1e6);
    for (const auto& k : ph["top"]) {
      std::printf("    %5.1f%%  %10.3f ms  %8lld calls  %s\n", 100 * k["share"].get<double>(),
                  k["total_ns"].get<double>() / 1e6,
                  static_cast<long long>(k["calls"].get<int64_t>()),
                  k["name"].get<std::string>().c_str());
    }
  }
  std::printf("stored as run %lld (stack %s) in %s\n", static_cast<long long>(run_id),
              stored.stack.fingerprint.substr(0, 12).c_str(), opt.db.c_str());
  return kExitOk;
}

}  // namespace

void register_profile(CLI::App& app, Run* run) {
  CLI::App* sub = app.add_subcommand("profile", "Serving engines' own kernel profiles");
  sub->require_subcommand(1);
  auto opt = std::make_shared<ProfileImportOptions>();
  CLI::App* imp = sub->add_subcommand(
      "import", "Store an engine's Chrome trace (PyTorch profiler JSON, plain or .gz) as a run");
  imp->add_option("trace", opt->trace, "The trace file")->required();
  imp->add_option("--db", opt->db, "Results store")->capture_default_str();
  imp->add_option("--label", opt->labels, "Stack label KEY=VALUE (repeatable)");
  imp->add_option("--case", opt->case_id, "The case id its rows are stored under")
      ->capture_default_str();
  imp->add_option("--platform", opt->platform, "The platform name the run is stored under")
      ->capture_default_str();
  imp->add_option("--step-pattern", opt->profile.step_pattern,
                  "Regex of the annotations that mark one engine step")
      ->capture_default_str();
  imp->add_option("--top", opt->top, "Kernels listed per phase")->capture_default_str();
  imp->add_flag("--json", opt->json, "Machine-readable output");
  imp->callback([run, opt] { *run = [opt] { return run_import(*opt); }; });
}

}  // namespace h0::cli
