#include "report/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "base/json_read.h"
#include "base/text_format.h"
#include "diff/diff.h"
#include "mesh/communicator.h"

namespace h0::report {
namespace {

// ANSI color of a status: green for pass, red for a failing one, yellow for the rest (skip,
// xfail, xpass: not failing, but worth a look).
const char* status_color(const std::string& status) {
  if (status == "pass") return "32";
  return is_failing(status) ? "31" : "33";
}

std::string g6(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string key_numbers(const store::ResultData& r) {
  static const struct {
    const char* metric;
    const char* before;
    const char* after;
  } kKeys[] = {{"max_abs_err", "max_abs ", ""}, {"cosine", "cos ", ""}, {"median_ms", "", " ms"}};
  std::string out;
  for (const auto& key : kKeys) {
    for (const auto& [name, value] : r.metrics) {
      if (name == key.metric) out += "  " + std::string(key.before) + g6(value) + key.after;
    }
  }
  return out;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// Seconds since the epoch of "YYYY-MM-DDTHH:MM:SS[.fff][Z|+HH:MM|-HH:MM]" (no zone = UTC).
bool parse_iso8601(const std::string& s, double* epoch_s) {
  int y, mo, d, h, mi, sec, used = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%*1[T ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec,
                  &used) != 6 ||
      used == 0) {
    return false;
  }
  double t = static_cast<double>(days_from_civil(y, mo, d)) * 86400 + h * 3600 + mi * 60 + sec;
  size_t i = static_cast<size_t>(used);
  if (i < s.size() && s[i] == '.') {
    const size_t start = i++;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    t += std::strtod(s.substr(start, i - start).c_str(), nullptr);
  }
  int oh = 0, om = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-') &&
      std::sscanf(s.c_str() + i + 1, "%2d:%2d", &oh, &om) == 2) {
    t -= (s[i] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  }
  *epoch_s = t;
  return true;
}

double run_seconds(const store::RunData& run) {
  double start, finish;
  if (parse_iso8601(run.started_at, &start) && parse_iso8601(run.finished_at, &finish) &&
      finish >= start) {
    return finish - start;
  }
  double total = 0;
  for (const auto& r : run.results) total += std::isfinite(r.duration_s) ? r.duration_s : 0;
  return total;
}

std::string op_library(const store::RunData& run) {
  const auto versions = base::parse_json_or_discarded(run.stack.versions_json);
  const nlohmann::json::json_pointer ptr("/backend/op_library");
  if (versions.is_object() && versions.contains(ptr) && versions.at(ptr).is_string()) {
    return versions.at(ptr).get<std::string>();
  }
  return run.stack.backend;
}

// Display columns of UTF-8 text (one per code point).
size_t columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// `s` cut to at most `n` columns, at a code point boundary.
std::string cut(const std::string& s, size_t n) {
  size_t cols = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && cols++ == n) return s.substr(0, i);
  }
  return s;
}

std::string counter(size_t done, size_t total) {
  const std::string t = std::to_string(total), d = std::to_string(done);
  std::string out(1, '[');
  out.append(t.size() > d.size() ? t.size() - d.size() : 0, ' ');
  out += d;
  out += '/';
  out += t;
  out += ']';
  return out;
}

}  // namespace

bool user_terminal(int fd) {
  // Under a launcher (mpirun, srun, torchrun) the terminal a rank sees is the launcher's pty
  // (Open MPI forwards output through one), not the user's: its output is collected, often into
  // a file.
  return ::isatty(fd) == 1 && mesh::detect_rank_env().launcher == "none";
}

namespace {
ColorMode color_mode = ColorMode::kAuto;
}  // namespace

void set_color_mode(ColorMode mode) { color_mode = mode; }

bool color_enabled(int fd) {
  if (color_mode != ColorMode::kAuto) return color_mode == ColorMode::kAlways;
  const char* no_color = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return user_terminal(fd) && (no_color == nullptr || *no_color == '\0') &&
         (term == nullptr || std::string(term) != "dumb");
}

std::string case_line(const store::ResultData& r, size_t done, size_t total, bool color) {
  std::string status = r.status;
  for (char& c : status) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string prefix = counter(done, total) + " ";
  std::string out = prefix + paint(status, status_color(r.status), color) +
                    std::string(status.size() < 7 ? 7 - status.size() : 0, ' ') + " " + r.case_id +
                    key_numbers(r) + "\n";
  std::string message = r.message;
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.pop_back();
  if (r.status != "pass" && !message.empty()) {
    const std::string indent(prefix.size(), ' ');
    for (size_t begin = 0; begin <= message.size();) {
      const size_t end = std::min(message.find('\n', begin), message.size());
      out += indent + message.substr(begin, end - begin) + "\n";
      begin = end + 1;
    }
  }
  return out;
}

std::string summary_line(const store::RunData& run, bool color) {
  std::map<std::string, size_t> counts;
  bool failed = false;
  for (const auto& r : run.results) {
    ++counts[r.status];
    failed = failed || diff::is_failing(r.status);
  }
  std::string listed;
  auto list = [&](const std::string& status, size_t n) {
    listed += (listed.empty() ? "" : ", ") + std::to_string(n) + " " + status;
  };
  for (const Status s : all_statuses()) {
    if (auto it = counts.find(status_name(s)); it != counts.end())
      list(it->first, it->second), counts.erase(it);
  }
  for (const auto& [status, n] : counts) list(status, n);

  std::string out = run.suite;
  if (!run.platform.empty()) out += " on " + run.platform;
  if (const std::string lib = op_library(run); !lib.empty()) out += " (" + lib + ")";
  const size_t n = run.results.size();
  out += ": " + std::to_string(n) + (n == 1 ? " case: " : " cases: ") +
         (listed.empty() ? "none" : listed);
  char secs[32];
  std::snprintf(secs, sizeof secs, " in %.1f s: ", run_seconds(run));
  out += secs;
  if (failed) return out + paint("FAIL", "31", color) + "\n";
  if (run.status == "incomplete") return out + paint("INCOMPLETE", "33", color) + "\n";
  return out + paint("PASS", "32", color) + "\n";
}

ProgressLine::ProgressLine(std::FILE* out) : ProgressLine(out, user_terminal(::fileno(out)), 0) {}

ProgressLine::ProgressLine(std::FILE* out, bool active, size_t width)
    : out_(out), active_(active), fixed_width_(width) {}

ProgressLine::~ProgressLine() { clear(); }

size_t ProgressLine::width() const {
  if (fixed_width_ > 0) return fixed_width_;
  struct winsize ws {};
  if (::ioctl(::fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

void ProgressLine::update(size_t done, size_t total, const std::string& what) {
  if (!active_) return;
  // One column short of the width: writing the last column wraps on some terminals.
  const std::string line = cut(counter(done, total) + " running " + what, width() - 1);
  const size_t cols = columns(line);
  std::fputs(("\r" + line + std::string(cols < shown_ ? shown_ - cols : 0, ' ')).c_str(), out_);
  std::fflush(out_);
  shown_ = cols;
}

void ProgressLine::clear() {
  if (!active_ || shown_ == 0) return;
  std::string blank(1, '\r');
  blank.append(shown_, ' ');
  blank += '\r';
  std::fputs(blank.c_str(), out_);
  std::fflush(out_);
  shown_ = 0;
}

void ProgressLine::print(const std::string& text) {
  clear();
  std::fputs(text.c_str(), out_);
  std::fflush(out_);
}

}  // namespace h0::report
