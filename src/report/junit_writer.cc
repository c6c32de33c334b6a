#include "report/junit_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "base/status.h"
#include "report/html_text.h"
#include "report/json_writer.h"

namespace h0::report {
namespace {

using Json = nlohmann::json;

// How a result status appears in JUnit.
enum class Outcome { kPassed, kFailure, kError, kSkipped };

// By base/status.h's rule: failing statuses are failures (fail) or errors (error, crash,
// timeout, an unknown name); pass and xpass pass (xpass with a note, below); skip and xfail are
// skipped (xfail: a failure the suite expects, not a test that passed).
Outcome outcome(const std::string& status) {
  if (status == "fail") return Outcome::kFailure;
  if (is_failing(status)) return Outcome::kError;
  if (status == "skip" || status == "xfail") return Outcome::kSkipped;
  return Outcome::kPassed;
}

// The XML spelling of a character that cannot stand for itself; nullptr for the others (control
// characters other than \t \n \r are handled by the caller).
const char* entity(char32_t c, bool attribute) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    case '"':
      return "&quot;";
    case '\'':
      return "&apos;";
    case '\r':
      return "&#13;";
    case '\t':
      return attribute ? "&#9;" : nullptr;
    case '\n':
      return attribute ? "&#10;" : nullptr;
    default:
      return nullptr;
  }
}

// Seconds as JUnit wants them: plain decimal, no exponent, never negative.
std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", std::isfinite(s) && s > 0 ? s : 0.0);
  return buf;
}

// The shortest text that reads back as `v` ("2.4e-07", "0.5", "nan").
std::string shortest(double v) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  return std::string(buf, end);
}

std::string attr(const char* name, std::string_view value) {
  return std::string(" ") + name + "=\"" + xml_escape(value, true) + "\"";
}

// versions_json flattened to ("stack.backend.driver", "535.104") pairs; leaves that are not
// strings appear as JSON text.
void flatten(const Json& j, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>* out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [key, value] : j.items()) flatten(value, prefix + "." + key, out);
  } else {
    out->emplace_back(prefix, j.is_string()
                                  ? j.get<std::string>()
                                  : j.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

std::string properties(const store::RunData& run) {
  std::vector<std::pair<std::string, std::string>> props = {
      {"run.id", std::to_string(run.id)},
      {"run.uuid", run.uuid},
      {"run.status", run.status},
      {"suite.file", run.suite_file},
      {"suite.sha256", run.suite_sha256},
      {"platform", run.platform},
      {"platform.file", run.platform_file},
      {"platform.sha256", run.platform_sha256},
      {"mesh", run.mesh},
      {"fingerprint", run.stack.fingerprint},
      {"backend", run.stack.backend}};
  const Json versions = Json::parse(run.stack.versions_json, nullptr, false);
  if (versions.is_discarded()) {
    props.emplace_back("stack", run.stack.versions_json);
  } else {
    flatten(versions, "stack", &props);
  }
  for (const auto& [key, value] : run.labels) props.emplace_back("label." + key, value);
  std::string out = "    <properties>\n";
  for (const auto& [name, value] : props) {
    out += "      <property" + attr("name", name) + attr("value", value) + "/>\n";
  }
  return out + "    </properties>\n";
}

// The text of a <failure> or <error>: the message, the metrics, then details_json.
std::string evidence(const store::ResultData& r) {
  std::string out = r.message + "\n";
  if (!r.metrics.empty()) {
    out += "metrics:\n";
    for (const auto& [name, value] : r.metrics) out += "  " + name + " = " + shortest(value) + "\n";
  }
  const Json details = Json::parse(r.details_json, nullptr, false);
  if (details.is_discarded()) {
    out += "details:\n" + r.details_json + "\n";
  } else if (!details.empty()) {
    out += "details:\n" + details.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  }
  return out;
}

std::string testcase(const store::ResultData& r) {
  std::string out = "    <testcase" + attr("classname", r.check_id) + attr("name", r.case_id) +
                    attr("time", seconds(r.duration_s));
  switch (outcome(r.status)) {
    case Outcome::kPassed:
      if (r.status == "xpass")  // passed though expected to fail: the stale marker, named
        return out + ">\n      <system-out>" +
               xml_escape("xpass: " + (r.message.empty() ? "passed unexpectedly" : r.message),
                          false) +
               "</system-out>\n    </testcase>\n";
      return out + "/>\n";
    case Outcome::kSkipped:
      return out + ">\n      <skipped" + attr("message", r.message) + "/>\n    </testcase>\n";
    case Outcome::kFailure:
    case Outcome::kError: {
      const char* element = outcome(r.status) == Outcome::kFailure ? "failure" : "error";
      const std::string message = !r.message.empty() ? r.message : r.status;
      return out + ">\n      <" + element + attr("type", r.status) + attr("message", message) +
             ">" + xml_escape(evidence(r), false) + "</" + element + ">\n    </testcase>\n";
    }
  }
  return out + "/>\n";
}

}  // namespace

std::string xml_escape(std::string_view s, bool attribute) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t cp = 0;
    const size_t n = utf8_sequence(s, i, &cp);
    if (n == 0 || cp == 0xFFFE || cp == 0xFFFF) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      i += n == 0 ? 1 : n;
      continue;
    }
    if (const char* e = entity(cp, attribute)) {
      out += e;
    } else if ((cp < 0x20 && cp != '\t' && cp != '\n') || cp == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string junit_xml(const store::RunData& run) {
  int n[4] = {};  // by Outcome
  double time = 0;
  std::string cases;
  for (const auto& r : run.results) {
    ++n[static_cast<int>(outcome(r.status))];
    if (std::isfinite(r.duration_s) && r.duration_s > 0) time += r.duration_s;
    cases += testcase(r);
  }
  const std::string counts = attr("tests", std::to_string(run.results.size())) +
                             attr("failures", std::to_string(n[int(Outcome::kFailure)])) +
                             attr("errors", std::to_string(n[int(Outcome::kError)]));
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += "<testsuites" + attr("name", run.suite) + counts + attr("time", seconds(time)) + ">\n";
  out += "  <testsuite" + attr("name", run.suite) + counts +
         attr("skipped", std::to_string(n[int(Outcome::kSkipped)])) + attr("time", seconds(time)) +
         attr("timestamp", run.started_at) +
         attr("hostname", run.host.empty() ? "localhost" : run.host) + ">\n";
  out += properties(run) + cases;
  return out + "  </testsuite>\n</testsuites>\n";
}

void write_junit(const std::string& path, const store::RunData& run) {
  write_file_atomically(path, junit_xml(run));
}

}  // namespace h0::report
