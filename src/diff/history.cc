#include "diff/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "base/text_format.h"
#include "diff/change_points.h"
#include "diff/diff.h"
#include "diff/statistics.h"
#include "suite/filter.h"

namespace h0::diff {
namespace {

constexpr size_t kMinBaseline = 3;  // values before a step candidate
constexpr double kBandMads = 3.0;   // half-width of the noise band, in MADs
constexpr double kMadFloor = 0.01;  // MAD at least this fraction of the median

// The timings of one (case, phase, name) in one group: (run id, median), oldest first.
struct Series {
  std::string case_id, phase, name;
  std::vector<std::pair<int64_t, double>> points;
};

struct Group {
  StackHistory summary;
  std::vector<Series> series;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
};

void add_run(const store::RunData& run, const std::string& glob, Group* g) {
  StackHistory& s = g->summary;
  if (s.runs++ == 0) {
    s.first_run_id = run.id;
    s.first_started_at = run.started_at;
  }
  s.last_run_id = run.id;
  s.last_started_at = run.started_at;
  s.failed_runs += run.status == "fail";
  for (const auto& r : run.results) {
    if (!suite::glob_match(glob, r.case_id) && !suite::glob_match(glob, r.check_id)) continue;
    if (r.status != "skip") {
      ++s.results;
      s.passed += is_good(r.status) ? 1 : 0;
    }
    for (const auto& p : r.profiles) {
      if (!p.phase.starts_with("steady")) continue;
      auto [it, added] = g->index.try_emplace({r.case_id, p.phase, p.name}, g->series.size());
      if (added) g->series.push_back({r.case_id, p.phase, p.name, {}});
      auto& points = g->series[it->second].points;
      if (!points.empty() && points.back().first == run.id) continue;  // repeated row: first counts
      points.emplace_back(run.id, row_median(p));
    }
  }
}

void add_platform_run(
    const store::RunData& run, const std::string& glob,
    std::map<std::tuple<std::string, std::string, std::string>, TimingSeries>* series) {
  for (const auto& r : run.results) {
    if (!suite::glob_match(glob, r.case_id) && !suite::glob_match(glob, r.check_id)) continue;
    for (const auto& p : r.profiles) {
      if (!p.phase.starts_with("steady")) continue;
      TimingSeries& s = (*series)[{r.case_id, p.phase, p.name}];
      if (!s.run_ids.empty() && s.run_ids.back() == run.id) continue;  // repeated row: first counts
      s.case_id = r.case_id, s.phase = p.phase, s.name = p.name;
      s.run_ids.push_back(run.id);
      s.stacks.push_back(run.stack.fingerprint.substr(0, 12));
      s.medians.push_back(row_median(p));
      s.calibrations.push_back(calibration_median(r, p.phase, 0));
    }
  }
}

// An engine's kernels (steady/engine* rows) have no host loop beside them: each run's calibration
// is the engine's own, the time-weighted median over the case's kernels of that phase of the run's
// median against the kernel's median over every run, so change points name a kernel that moved
// against the others, not a slower machine (as harness diff judges them). The phase's "(step)"
// row stays as timed: the whole step.
void calibrate_engine_series(
    std::map<std::tuple<std::string, std::string, std::string>, TimingSeries>* series) {
  std::map<std::pair<std::string, std::string>, std::vector<TimingSeries*>> groups;
  for (auto& [key, s] : *series)
    if (is_engine_phase(s.phase) && s.name != "(step)") groups[{s.case_id, s.phase}].push_back(&s);
  for (auto& [group, members] : groups) {
    std::map<int64_t, std::vector<std::pair<double, double>>> by_run;  // run -> (ratio, weight)
    for (const TimingSeries* s : members) {
      const double m = median(s->medians);
      if (m <= 0) continue;
      for (size_t i = 0; i < s->run_ids.size(); ++i)
        if (s->medians[i] > 0) by_run[s->run_ids[i]].emplace_back(s->medians[i] / m, m);
    }
    std::map<int64_t, double> factor;
    for (auto& [run, ratios] : by_run) factor[run] = weighted_median(std::move(ratios));
    for (TimingSeries* s : members)
      for (size_t i = 0; i < s->run_ids.size(); ++i) s->calibrations[i] = factor[s->run_ids[i]];
  }
}

// The medians as the series' first run's machine would have timed them: each scaled by the
// first run's calibration over its own (the host loop timed next to it), as harness diff
// normalizes a pair. Machine-wide speed changes (a noisy neighbour, frequency) then cancel.
// Unscaled when any run lacks a calibration row.
std::vector<double> normalized(const TimingSeries& s, size_t first, bool* scaled) {
  std::vector<double> v(s.medians.begin() + std::ptrdiff_t(first), s.medians.end());
  *scaled = std::all_of(s.calibrations.begin() + std::ptrdiff_t(first), s.calibrations.end(),
                        [](double c) { return c > 0; });
  if (*scaled)
    for (size_t i = 0; i < v.size(); ++i) v[i] *= s.calibrations[first] / s.calibrations[first + i];
  return v;
}

TimedCase timed_case(const Series& series, int last_n) {
  size_t first = 0;
  if (last_n > 0 && series.points.size() > static_cast<size_t>(last_n)) {
    first = series.points.size() - static_cast<size_t>(last_n);
  }
  std::vector<double> medians;
  for (size_t i = first; i < series.points.size(); ++i) medians.push_back(series.points[i].second);
  TimedCase t{series.case_id, series.phase, series.name, static_cast<int>(medians.size()),
              medians.back(), std::nullopt};
  if (const auto at = find_step(medians)) {
    Step step;
    step.run_id = series.points[first + *at].first;
    step.before_median_ns =
        median({medians.begin(), medians.begin() + static_cast<std::ptrdiff_t>(*at)});
    step.after_median_ns =
        median({medians.begin() + static_cast<std::ptrdiff_t>(*at), medians.end()});
    step.change = step.before_median_ns > 0 ? step.after_median_ns / step.before_median_ns - 1
                                            : std::numeric_limits<double>::quiet_NaN();
    t.step = step;
  }
  return t;
}

}  // namespace

std::optional<size_t> find_step(const std::vector<double>& medians) {
  for (size_t i = kMinBaseline; i < medians.size(); ++i) {
    const std::vector<double> before(medians.begin(),
                                     medians.begin() + static_cast<std::ptrdiff_t>(i));
    const double center = median(before);
    const double mad = std::max(median_absolute_deviation(before), kMadFloor * std::abs(center));
    const double lo = center - kBandMads * mad, hi = center + kBandMads * mad;
    const bool above = medians[i] > hi;
    if (!above && !(medians[i] < lo)) continue;
    bool stays = true;
    for (size_t j = i + 1; j < medians.size() && stays; ++j) {
      stays = above ? medians[j] > hi : medians[j] < lo;
    }
    if (stays) return i;
  }
  return std::nullopt;
}

std::vector<ChangeReport> change_points_of(const std::string& platform, const TimingSeries& s,
                                           int last_n) {
  std::vector<ChangeReport> out;
  const size_t first =
      last_n > 0 && s.medians.size() > size_t(last_n) ? s.medians.size() - size_t(last_n) : 0;
  bool scaled = false;
  const std::vector<double> window = normalized(s, first, &scaled);
  const std::vector<ChangePoint> found = find_change_points(window);
  if (found.empty()) return out;
  const std::vector<ChangePoint> before_newest =
      find_change_points({window.begin(), window.end() - 1});
  for (const ChangePoint& c : found) {
    ChangeReport r;
    r.platform = platform;
    r.case_id = s.case_id, r.phase = s.phase, r.name = s.name;
    const size_t at = first + c.index;
    r.run_id = s.run_ids[at];
    r.previous_run_id = s.run_ids[at - 1];
    r.stack_before = s.stacks[at - 1];
    r.stack_after = s.stacks[at];
    r.runs_before = int(c.before_points);
    r.runs_after = int(c.after_points);
    r.before_median_ns = c.before_median;
    r.after_median_ns = c.after_median;
    r.change = c.change;
    r.p_value = c.p_value;
    r.normalized = scaled;
    if (scaled) {  // the machine's own move between the two levels (the host loop's)
      const auto mean_cal = [&](size_t from, size_t to) {
        double sum = 0;
        for (size_t k = from; k < to; ++k) sum += std::log(s.calibrations[first + k]);
        return std::exp(sum / double(to - from));
      };
      r.calibration_change = mean_cal(c.index, c.index + c.after_points) /
                                 mean_cal(c.index - c.before_points, c.index) -
                             1;
      r.unreliable = std::abs(r.calibration_change) > std::abs(r.change);
    }
    r.newest = std::none_of(before_newest.begin(), before_newest.end(), [&](const ChangePoint& o) {
      return o.index == c.index && (o.change > 0) == (c.change > 0);
    });
    out.push_back(r);
  }
  return out;
}

HistoryReport history(const std::vector<store::RunData>& runs_oldest_first,
                      const std::string& check_glob, int last_n) {
  HistoryReport report;
  report.check_glob = check_glob;
  report.last_n = last_n;
  std::vector<Group> groups;
  std::map<std::pair<std::string, std::string>, size_t> group_index;  // (fingerprint, platform)
  for (const auto& run : runs_oldest_first) {
    auto [it, added] =
        group_index.try_emplace({run.stack.fingerprint, run.platform}, groups.size());
    if (added) {
      groups.emplace_back();
      StackHistory& s = groups.back().summary;
      s.stack = run.stack.fingerprint.substr(0, 12);
      s.backend = run.stack.backend;
      s.platform = run.platform;
    }
    add_run(run, check_glob, &groups[it->second]);
  }
  for (auto& g : groups) {
    StackHistory s = std::move(g.summary);
    if (s.results > 0) s.pass_rate = static_cast<double>(s.passed) / s.results;
    for (const auto& series : g.series) s.timed.push_back(timed_case(series, last_n));
    report.stacks.push_back(std::move(s));
  }
  std::map<std::string, std::map<std::tuple<std::string, std::string, std::string>, TimingSeries>>
      by_platform;
  for (const auto& run : runs_oldest_first)
    add_platform_run(run, check_glob, &by_platform[run.platform]);
  for (auto& [platform, series] : by_platform) calibrate_engine_series(&series);
  for (const auto& [platform, series] : by_platform)
    for (const auto& [key, s] : series) {
      for (ChangeReport& c : change_points_of(platform, s, last_n))
        report.changes.push_back(std::move(c));
    }
  return report;
}

int HistoryReport::new_slowdowns() const {
  return int(std::count_if(changes.begin(), changes.end(), [](const ChangeReport& c) {
    return c.newest && c.change > 0 && !c.unreliable;
  }));
}

// ---- output ---------------------------------------------------------------------------------

nlohmann::json HistoryReport::to_json() const {
  nlohmann::json stacks_json = nlohmann::json::array();
  for (const auto& s : stacks) {
    nlohmann::json timed_json = nlohmann::json::array();
    for (const auto& t : s.timed) {
      nlohmann::json step = nullptr;
      if (t.step) {
        step = {{"run_id", t.step->run_id},
                {"before_median_ns", t.step->before_median_ns},
                {"after_median_ns", t.step->after_median_ns},
                {"change", number_or_null(t.step->change)}};
      }
      timed_json.push_back({{"case_id", t.case_id},
                            {"phase", t.phase},
                            {"name", t.name},
                            {"runs", t.runs},
                            {"latest_median_ns", t.latest_median_ns},
                            {"step", step}});
    }
    stacks_json.push_back({{"stack", s.stack},
                           {"backend", s.backend},
                           {"platform", s.platform},
                           {"runs", s.runs},
                           {"failed_runs", s.failed_runs},
                           {"first_run_id", s.first_run_id},
                           {"last_run_id", s.last_run_id},
                           {"first_started_at", s.first_started_at},
                           {"last_started_at", s.last_started_at},
                           {"results", s.results},
                           {"passed", s.passed},
                           {"pass_rate", number_or_null(s.pass_rate)},
                           {"timed", timed_json}});
  }
  nlohmann::json changes_json = nlohmann::json::array();
  for (const auto& c : changes) {
    changes_json.push_back({{"platform", c.platform},
                            {"case_id", c.case_id},
                            {"phase", c.phase},
                            {"name", c.name},
                            {"run_id", c.run_id},
                            {"previous_run_id", c.previous_run_id},
                            {"stack_before", c.stack_before},
                            {"stack_after", c.stack_after},
                            {"runs_before", c.runs_before},
                            {"runs_after", c.runs_after},
                            {"before_median_ns", c.before_median_ns},
                            {"after_median_ns", c.after_median_ns},
                            {"change", number_or_null(c.change)},
                            {"p_value", c.p_value},
                            {"normalized", c.normalized},
                            {"calibration_change", number_or_null(c.calibration_change)},
                            {"unreliable", c.unreliable},
                            {"newest", c.newest}});
  }
  return {{"check", check_glob},
          {"last", last_n},
          {"stacks", stacks_json},
          {"changes", changes_json},
          {"new_slowdowns", new_slowdowns()}};
}

std::string HistoryReport::to_text(bool color) const {
  std::string out = "history of checks matching '" + check_glob + "'";
  out += last_n > 0 ? ", steps over the last " + std::to_string(last_n) + " runs\n" : "\n";
  if (stacks.empty()) return out + "no complete runs\n";
  for (const auto& s : stacks) {
    out += "\nstack " + paint(s.stack.empty() ? "?" : s.stack, "1", color) +
           (s.backend.empty() ? "" : " (" + s.backend + ")") + "  platform " + s.platform + "\n";
    out += "  " + std::to_string(s.runs) + (s.runs == 1 ? " run" : " runs") + " (run " +
           std::to_string(s.first_run_id) + " " + s.first_started_at + " .. run " +
           std::to_string(s.last_run_id) + " " + s.last_started_at + ")" +
           (s.failed_runs > 0 ? ", " + paint(std::to_string(s.failed_runs) + " failed", "31", color)
                              : "") +
           "\n";
    if (s.results > 0) {
      const bool all = s.passed == s.results;
      out += "  pass rate " +
             paint(printf_string("%.1f%%", 100 * s.pass_rate), all ? "32" : "33", color) + " (" +
             std::to_string(s.passed) + " of " + std::to_string(s.results) + " results)\n";
    } else {
      out += "  pass rate n/a (no matching results)\n";
    }
    int steps = 0;
    for (const auto& t : s.timed) steps += t.step ? 1 : 0;
    out += "  " + std::to_string(s.timed.size()) +
           (s.timed.size() == 1 ? " timed case, " : " timed cases, ") + std::to_string(steps) +
           (steps == 1 ? " step\n" : " steps\n");
    for (const auto& t : s.timed) {
      if (!t.step) continue;
      const bool slower = t.step->after_median_ns > t.step->before_median_ns;
      out += "    " + paint(slower ? "slower" : "faster", slower ? "31" : "32", color) + "  " +
             t.case_id + "  " + t.phase + " " + t.name + "  at run " +
             std::to_string(t.step->run_id) + ": " + format_ns(t.step->before_median_ns) + " -> " +
             format_ns(t.step->after_median_ns) + " (" +
             printf_string("%+.1f%%", 100 * t.step->change) + ")\n";
    }
  }
  out +=
      "\nchange points per platform, across stack versions (E-Divisive, Mann-Whitney p < 0.001, "
      ">= 5%): " +
      std::to_string(changes.size()) + ", " + std::to_string(new_slowdowns()) + " new slowdowns\n";
  for (const auto& c : changes) {
    const bool slower = c.change > 0;
    out +=
        "  " +
        (c.unreliable ? paint("unreliable machine", "33", color)
                      : paint(slower ? "slower" : "faster", slower ? "31" : "32", color)) +
        "  " + c.platform + "  " + c.case_id + "  " + c.phase + " " + c.name + "  at run " +
        std::to_string(c.run_id) + " (after run " + std::to_string(c.previous_run_id) +
        (c.stack_before == c.stack_after ? ", same stack " + c.stack_after
                                         : ", stack " + c.stack_before + " -> " + c.stack_after) +
        "): " + format_ns(c.before_median_ns) + " -> " + format_ns(c.after_median_ns) +
        (c.normalized ? " calibrated" : "") + " (" + printf_string("%+.1f%%", 100 * c.change) +
        ", " + std::to_string(c.runs_before) + " runs before, " + std::to_string(c.runs_after) +
        " after, p " + printf_string("%.2g", c.p_value) +
        (c.unreliable
             ? ", the calibration moved " + printf_string("%+.1f%%", 100 * c.calibration_change)
             : std::string()) +
        ")" + (c.newest ? paint("  NEW", "1", color) : "") + "\n";
  }
  return out;
}

}  // namespace h0::diff
