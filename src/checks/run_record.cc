#include "checks/run_record.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>

#include "base/sha256.h"
#include "base/version.h"

namespace h0::checks {

nlohmann::json stack_versions(const nlohmann::json& stack_info, const std::map<std::string, std::string>& labels) {
  return {{"backend", stack_info},
          {"harness",
           {{"version", base::kHarnessVersion}, {"git_sha", base::kGitSha}, {"compiler", base::kCompiler},
            {"build_type", base::kBuildType}}},
          {"labels", labels}};
}

std::string iso_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

store::RunStart run_start(const RunReport& report, const suite::Platform& platform,
                          const std::map<std::string, std::string>& labels, const std::string& mesh) {
  store::RunStart s;
  s.suite = report.suite_name;
  s.suite_file = report.suite_file;
  s.suite_sha256 = report.suite_sha256;
  s.platform = platform.name;
  s.platform_file = platform.file;
  s.platform_sha256 = platform.sha256;
  s.platform_content = platform.content;
  s.backend = report.stack.value("runtime", platform.backend.empty() ? platform.lib : platform.backend);
  s.versions_json = stack_versions(report.stack, labels).dump();
  s.host = host_name();
  s.mesh = mesh;
  s.labels = labels;
  return s;
}

store::ResultData result_data(const CaseOutcome& outcome) {
  store::ResultData r;
  r.case_id = outcome.id;
  r.check_id = outcome.check;
  r.kind = outcome.kind;
  r.status = status_name(outcome.result.status);
  r.duration_s = outcome.result.duration_s;
  r.message = outcome.result.message;
  r.details_json = outcome.result.details.dump();
  r.metrics = outcome.result.metrics;
  for (const auto& p : outcome.result.profile) {
    r.profiles.push_back({p.phase, p.name, p.count, p.total_ns, p.min_ns, p.median_ns, p.p99_ns, p.mean_ns,
                          p.stddev_ns, p.bytes, p.flops, p.samples_ns});
  }
  return r;
}

store::RunData run_data(const RunReport& report, const suite::Platform& platform,
                        const std::map<std::string, std::string>& labels, const std::string& mesh) {
  const store::RunStart s = run_start(report, platform, labels, mesh);
  store::RunData d;
  d.suite = s.suite;
  d.suite_file = s.suite_file;
  d.suite_sha256 = s.suite_sha256;
  d.platform = s.platform;
  d.platform_file = s.platform_file;
  d.platform_sha256 = s.platform_sha256;
  d.platform_content = s.platform_content;
  d.stack.backend = s.backend;
  d.stack.versions_json = s.versions_json;
  d.stack.fingerprint = base::sha256_hex(s.versions_json.data(), s.versions_json.size());
  d.host = s.host;
  d.mesh = s.mesh;
  d.labels = labels;
  d.status = report.failed() ? "fail" : "pass";
  for (const auto& c : report.cases) d.results.push_back(result_data(c));
  return d;
}

}  // namespace h0::checks
