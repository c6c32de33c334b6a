#include "report/json_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "base/error.h"

namespace h0::report {
namespace {

using Json = nlohmann::json;

// `text` parsed as JSON; the text itself as a string if it is not JSON.
Json parsed_or_raw(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? Json(text) : j;
}

// JSON has no NaN or infinity: those become strings, as in CheckResult::to_json.
Json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

Json profile_json(const store::ProfileData& p) {
  return {{"phase", p.phase},
          {"name", p.name},
          {"count", p.count},
          {"total_ns", number(p.total_ns)},
          {"min_ns", number(p.min_ns)},
          {"median_ns", number(p.median_ns)},
          {"p99_ns", number(p.p99_ns)},
          {"mean_ns", number(p.mean_ns)},
          {"stddev_ns", number(p.stddev_ns)},
          {"bytes", number(p.bytes)},
          {"flops", number(p.flops)}};
}

Json case_json(const store::ResultData& r) {
  Json metrics = Json::object();
  for (const auto& [name, value] : r.metrics) metrics[name] = number(value);
  Json profile = Json::array();
  for (const auto& p : r.profiles) profile.push_back(profile_json(p));
  Json out = {{"id", r.case_id},      {"check", r.check_id},
              {"kind", r.kind},       {"params", parsed_or_raw(r.params_json)},
              {"status", r.status},   {"duration_s", number(r.duration_s)},
              {"message", r.message}, {"metrics", metrics},
              {"profile", profile},   {"details", parsed_or_raw(r.details_json)}};
  if (!r.eval_items.empty()) {  // kind: eval, item by item (the store's eval_items)
    Json items = Json::array();
    for (const store::EvalItemData& e : r.eval_items) {
      Json item = {{"id", e.item_id}, {"answer", e.answer}, {"correct", e.correct}};
      if (e.ref_correct >= 0) {
        item["ref_answer"] = e.ref_answer;
        item["ref_correct"] = e.ref_correct == 1;
      }
      item["evidence"] = parsed_or_raw(e.evidence_json);
      items.push_back(std::move(item));
    }
    out["items"] = std::move(items);
  }
  return out;
}

}  // namespace

Json run_json(const store::RunData& run) {
  Json counts = Json::object();
  for (const auto& r : run.results) {
    counts[r.status] = counts.value(r.status, 0) + 1;
  }
  Json cases = Json::array();
  for (const auto& r : run.results) cases.push_back(case_json(r));
  return {{"run",
           {{"id", run.id},
            {"uuid", run.uuid},
            {"suite", run.suite},
            {"suite_file", run.suite_file},
            {"suite_sha256", run.suite_sha256},
            {"platform", run.platform},
            {"platform_file", run.platform_file},
            {"platform_sha256", run.platform_sha256},
            {"host", run.host},
            {"mesh", run.mesh},
            {"started_at", run.started_at},
            {"finished_at", run.finished_at},
            {"status", run.status},
            {"labels", run.labels}}},
          {"stack",
           {{"fingerprint", run.stack.fingerprint},
            {"backend", run.stack.backend},
            {"versions", parsed_or_raw(run.stack.versions_json)}}},
          {"counts", counts},
          {"cases", cases}};
}

void write_json(const std::string& path, const store::RunData& run) {
  write_file_atomically(path,
                        run_json(run).dump(1, ' ', false, Json::error_handler_t::replace) + "\n");
}

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  auto fail = [&](int err) {
    throw InputError(path, "cannot write: " + std::generic_category().message(err));
  };
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path())
    fs::create_directories(target.parent_path(), ec);  // else open fails
  static std::atomic<unsigned> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail(errno);
  int err = 0;
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    fail(err);
  }
}

}  // namespace h0::report
