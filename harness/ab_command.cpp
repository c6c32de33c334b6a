// harness ab --base PLATFORM --head PLATFORM --suite FILE [--rounds N] [--warmup N] [--db F]
//            [--filter F] [--label K=V]... [--base-label K=V]... [--head-label K=V]...
//            [--threshold T] [--alpha A] [--json]
// Proves (or clears) a suspected slowdown between two stacks: runs the suite on the two
// platforms interleaved in ABBA order (A B, B A, A B, ... one round a pair), each run a fresh
// `harness run` process into the store (labels ab=<tag>, ab_side, ab_round), after --warmup
// unrecorded runs of each side, so both stacks see the same machine in the same time window;
// then compares them round by round (diff_repeated_runs, paired: the one-sample t test of the
// rounds' calibrated head/base log ratios, beyond the spread of those ratios), statuses and
// accuracy exactly on the last round. Exit 1 on a regression (timing included), 2 on bad input
// or a run that did not complete.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "diff/diff.h"
#include "mesh_run.h"
#include "run/service_registry.h"
#include "store/sqlite_store.h"

extern char** environ;

namespace h0::cli {
namespace {

namespace fs = std::filesystem;

struct AbOptions {
  std::string base, head, suite, filter, db = "reports/results.db";
  std::vector<std::string> labels, base_labels, head_labels;
  int rounds = 4;
  int warmup = 1;  // unrecorded runs of each side first (a cold first run is no stack's fault)
  bool json = false;
  diff::DiffOptions diff;
};

// Runs `argv` with its stdout into *out (stderr passes through); returns its exit status, or -1
// when it could not start or did not exit normally.
int run_child(const std::vector<std::string>& argv, std::string* out) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    return -1;
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) out->append(buf, size_t(n));
  ::close(pipe_fds[0]);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// "ab-20261205T203512Z-1234": the labels of this comparison's runs.
std::string ab_tag() {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  return "ab-" + std::string(when) + "-" + std::to_string(::getpid());
}

int run_ab(const AbOptions& opt) {
  if (opt.rounds < 2)
    throw InputError("--rounds", "expected at least 2 rounds (a paired test needs 2)");
  for (const auto* f : {&opt.base, &opt.head, &opt.suite}) {
    if (!fs::is_regular_file(*f)) throw InputError(*f, "not a file");
  }
  (void)parse_labels(opt.labels);  // KEY=VALUE, or exit 2 before anything runs
  (void)parse_labels(opt.base_labels);
  (void)parse_labels(opt.head_labels);
  const std::string tag = ab_tag(), exe = run::self_executable();
  // One `harness run` of the suite on `platform` with `extra` arguments; its stdout into *out.
  // False (and what it printed, on stderr) when it did not complete.
  const auto run_on = [&](const std::string& platform, std::vector<std::string> extra,
                          std::string* out) {
    std::vector<std::string> argv = {exe, "run", opt.suite, "--platform", platform, "-q"};
    if (!opt.filter.empty()) argv.insert(argv.end(), {"--filter", opt.filter});
    argv.insert(argv.end(), extra.begin(), extra.end());
    const int rc = run_child(argv, out);
    if (rc >= 0 && rc < 2) return true;
    std::fputs(out->c_str(), stderr);
    std::fprintf(stderr, "harness ab: the run on %s did not complete (exit %d)\n", platform.c_str(),
                 rc);
    return false;
  };
  for (int w = 0; w < opt.warmup; ++w) {
    for (const std::string* platform : {&opt.base, &opt.head}) {
      std::string out;
      if (!run_on(*platform, {"--no-db"}, &out)) return kExitInput;
    }
  }
  std::vector<int64_t> base_ids(size_t(opt.rounds)), head_ids(size_t(opt.rounds));
  const std::regex stored("stored as run ([0-9]+) in ");
  for (int round = 0; round < opt.rounds; ++round) {
    const bool base_first = round % 2 == 0;  // A B, then B A: ABBA ABBA ...
    for (int k = 0; k < 2; ++k) {
      const bool is_base = (k == 0) == base_first;
      std::vector<std::string> extra = {
          "--db",    opt.db,
          "--label", "ab=" + tag,
          "--label", std::string("ab_side=") + (is_base ? "base" : "head"),
          "--label", "ab_round=" + std::to_string(round + 1)};
      for (const auto& l : opt.labels) extra.insert(extra.end(), {"--label", l});
      for (const auto& l : is_base ? opt.base_labels : opt.head_labels)
        extra.insert(extra.end(), {"--label", l});
      const auto t0 = std::chrono::steady_clock::now();
      std::string out;
      std::smatch m;
      if (!run_on(is_base ? opt.base : opt.head, extra, &out)) return kExitInput;
      if (!std::regex_search(out, m, stored)) {
        std::fprintf(stderr, "harness ab: round %d, %s side: the run stored nothing\n", round + 1,
                     is_base ? "base" : "head");
        return kExitInput;
      }
      const int64_t id = std::stoll(m[1].str());
      (is_base ? base_ids : head_ids)[size_t(round)] = id;
      if (!opt.json) {
        std::fprintf(stderr, "round %d/%d: %s run %lld (%.1f s)\n", round + 1, opt.rounds,
                     is_base ? "base" : "head", static_cast<long long>(id),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    }
  }
  const auto db = store::SqliteStore::open(opt.db);
  std::vector<store::RunData> base, head;
  for (int64_t id : base_ids) base.push_back(*db->load_run(id));
  for (int64_t id : head_ids) head.push_back(*db->load_run(id));
  const diff::DiffReport report = diff::diff_repeated_runs(base, head, opt.diff, true);
  if (opt.json) {
    nlohmann::json j = report.to_json();
    j["ab"] = {{"tag", tag},
               {"rounds", opt.rounds},
               {"order", "ABBA"},
               {"base_runs", base_ids},
               {"head_runs", head_ids}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("harness ab %s: %d rounds in ABBA order, base runs", tag.c_str(), opt.rounds);
    for (int64_t id : base_ids) std::printf(" %lld", static_cast<long long>(id));
    std::printf(", head runs");
    for (int64_t id : head_ids) std::printf(" %lld", static_cast<long long>(id));
    std::printf(" (label ab=%s)\n", tag.c_str());
    std::fputs(report.to_text(use_color()).c_str(), stdout);
  }
  return report.has_regression() ? kExitMismatch : kExitOk;
}

}  // namespace

void register_ab(CLI::App& app, Run* run) {
  auto opt = std::make_shared<AbOptions>();
  CLI::App* sub = app.add_subcommand(
      "ab",
      "Interleaved A/B runs of a suite on two platforms (ABBA rounds), compared round by round");
  sub->add_option("--base", opt->base, "The reference stack's platform config")->required();
  sub->add_option("--head", opt->head, "The platform config of the stack under test")->required();
  sub->add_option("--suite", opt->suite, "Suite YAML file")->required();
  sub->add_option("--rounds", opt->rounds, "Rounds, each one run of each side")
      ->capture_default_str();
  sub->add_option("--warmup", opt->warmup,
                  "Unrecorded runs of each side before the first round (a cold first run would "
                  "count against whichever side ran first)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--db", opt->db, "Results store every run goes into")->capture_default_str();
  sub->add_option("--filter", opt->filter, "gtest-style case filter, as harness run");
  sub->add_option("--label", opt->labels, "Label KEY=VALUE on every run (repeatable)");
  sub->add_option("--base-label", opt->base_labels,
                  "Label KEY=VALUE on the base runs (repeatable)");
  sub->add_option("--head-label", opt->head_labels,
                  "Label KEY=VALUE on the head runs (repeatable)");
  sub->add_option(
         "--threshold", opt->diff.perf_threshold,
         "Relative change a significant timing change must exceed (and the rounds' own spread)")
      ->capture_default_str();
  sub->add_option("--alpha", opt->diff.alpha, "Significance level of the paired t test")
      ->capture_default_str();
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt] { *run = [opt] { return run_ab(*opt); }; });
}

}  // namespace h0::cli
