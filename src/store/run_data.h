// A run as the store keeps it and as diff and report read it: plain data, no SQLite.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace h0::store {

struct ProfileData {
  std::string phase, name;  // e.g. "steady", "rmsnorm[7x4096]"
  int64_t count = 0;
  double total_ns = 0, min_ns = 0, median_ns = 0, p99_ns = 0, mean_ns = 0, stddev_ns = 0;
  double bytes = 0, flops = 0;
  std::vector<double> samples_ns;  // raw samples, for significance tests
};

// One item of a task (kind: eval) as its check answered it, and the reference's answer.
struct EvalItemData {
  std::string item_id;
  std::string answer;
  bool correct = false;
  std::string ref_answer;            // "" when the reference has no answer for it (or no reference)
  int ref_correct = -1;              // -1: no reference result; else 0 / 1
  std::string evidence_json = "{}";  // choice logprobs, the continuation's logprob, the completion
};

struct ResultData {
  int64_t id = 0;
  std::string case_id, check_id, kind;
  std::string params_json = "{}";  // the case's matrix parameters
  std::string status;              // pass, fail, error, skip, crash, timeout, xfail, xpass
  double duration_s = 0;
  std::string message;
  std::string details_json = "{}";
  std::vector<std::pair<std::string, double>> metrics;
  std::vector<ProfileData> profiles;
  std::vector<EvalItemData> eval_items;  // kind: eval, in the order the items were scored
};

struct StackData {
  int64_t id = 0;
  std::string fingerprint;  // sha256 of versions_json
  std::string backend;
  std::string versions_json = "{}";  // stack_info + harness version, git sha, compiler, labels
};

struct RunData {
  int64_t id = 0;
  std::string uuid;
  std::string suite, suite_file, suite_sha256;
  std::string platform, platform_file, platform_sha256, platform_content;
  StackData stack;
  std::string host, mesh;
  std::string started_at, finished_at;  // ISO 8601 UTC; finished_at empty while running
  std::string status;                   // running, pass, fail, incomplete
  std::map<std::string, std::string> labels;
  std::vector<ResultData> results;  // filled by load_run; empty in summaries
};

}  // namespace h0::store
