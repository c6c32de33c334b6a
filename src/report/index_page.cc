// index.html: overview and matrix.
#include <algorithm>
#include <map>

#include "base/status.h"
#include "base/text_format.h"
#include "report/html_page.h"
#include "report/html_pages.h"
#include "report/html_text.h"

namespace h0::report {
namespace {

std::string count_of(const SiteRun& run, const std::string& status) {
  const auto it = run.counts.find(status);
  return std::to_string(it == run.counts.end() ? 0 : it->second);
}

int other_count(const SiteRun& run) {
  int n = 0;
  for (const auto& [status, count] : run.counts) {
    if (status != "pass" && status != "fail" && status != "skip") n += count;
  }
  return n;
}

std::string regression_cell(const SiteModel& model, const SiteRun& run) {
  if (!run.diff) return "<span class=\"muted\">no previous run</span>";
  const auto& s = run.diff->summary;
  const std::string text = std::to_string(run.regressions());
  const std::string prev = run_ref(model.runs[static_cast<size_t>(run.previous)].run.id);
  const std::string title =
      std::to_string(s.regressions) + " status, " + std::to_string(s.metric_drift) +
      " metric drift, " + std::to_string(s.perf_regressions) +
      " timing (one run a side: on the run page, not counted), vs run " + prev;
  return "<a class=\"" + std::string(run.regressions() ? "bad" : "good") + "\" title=\"" +
         html_escape(title) + "\" href=\"" + html_escape(run.page) + "#diff\">" + text + "</a>";
}

std::string reference_cell(const SiteModel& model, const SiteRun& run) {
  if (run.run.platform == model.compare_platform)
    return "<span class=\"muted\">the reference</span>";
  if (!run.reference_diff) return "<span class=\"muted\">no run of this suite there</span>";
  const int n = run.reference_regressions();
  const std::string ref = run_ref(model.runs[static_cast<size_t>(run.reference)].run.id);
  return "<a class=\"" + std::string(n ? "bad" : "good") + "\" title=\"vs " +
         html_escape(model.compare_platform) + " run " + html_escape(ref) + "\" href=\"" +
         html_escape(run.page) + "\">" + std::to_string(n) + "</a>";
}

// The latest run of each matrix column (stack version on a platform), newest first.
std::vector<int> latest_runs(const SiteModel& model) {
  std::vector<int> latest(model.columns.size(), -1);
  for (size_t i = 0; i < model.runs.size(); ++i)
    latest[static_cast<size_t>(model.runs[i].column)] = static_cast<int>(i);
  std::sort(latest.begin(), latest.end(), std::greater<>());
  std::erase(latest, -1);
  return latest;
}

// Why each check of `r` counts as regressed, by case id: its diff against the platform's previous
// run of the suite, against the reference platform's, and (for the platform's newest run) the
// timing history's slowdowns.
std::map<std::string, std::string> regression_reasons(const SiteModel& model, const SiteRun& r,
                                                      bool newest_of_platform) {
  std::map<std::string, std::string> why;
  if (newest_of_platform) {
    for (const auto& s : model.slowdowns) {
      if (s.platform != r.run.platform) continue;
      const diff::ChangeReport& c = s.change;
      why[model.cases[static_cast<size_t>(s.case_index)].case_id] =
          "timing change point at run #" + std::to_string(c.run_id) + ": " +
          printf_string("%+.1f%%", 100 * c.change) + " (" + std::to_string(c.runs_before) +
          " runs before, " + std::to_string(c.runs_after) +
          " after, p=" + printf_string("%.2g", c.p_value) + ")";
    }
  }
  if (r.diff) {
    const std::string prev =
        "vs run " + run_ref(model.runs[static_cast<size_t>(r.previous)].run.id);
    for (const auto& [id, reason] : regressed_cases(*r.diff)) why[id] = reason + " " + prev;
  }
  if (r.reference_diff) {
    const std::string ref = "vs " + model.compare_platform + " run " +
                            run_ref(model.runs[static_cast<size_t>(r.reference)].run.id);
    for (const auto& [id, reason] : regressed_cases(*r.reference_diff)) {
      std::string& w = why[id];
      w += (w.empty() ? "" : "; ") + reason + " " + ref;
    }
  }
  return why;
}

// A platform's name, marked when it is a fault injector.
std::string platform_cell(const SiteColumn& col) {
  return html_escape(col.platform) +
         (col.fault_injector
              ? " <span class=\"badge injector\" title=\"its backend injects the faults its "
                "options ask for: failures are expected\">fault injector</span>"
              : "");
}

// The overview's row of run `i` (the latest of its column).
std::string overview_row(const SiteModel& model, int i, bool compare) {
  const SiteRun& r = model.runs[static_cast<size_t>(i)];
  const SiteColumn& c = model.columns[static_cast<size_t>(r.column)];
  std::vector<std::string> cells = {
      platform_cell(c),
      "<span title=\"" + html_escape(c.fingerprint) + "\">" + html_escape(c.label) + "</span>",
      html_link(r.page, run_ref(r.run.id)),
      html_escape(r.run.suite),
      html_escape(r.run.started_at),
      status_badge(r.run.status),
      count_of(r, "pass"),
      count_of(r, "fail"),
      count_of(r, "skip"),
      std::to_string(other_count(r)),
      regression_cell(model, r)};
  if (compare) cells.push_back(reference_cell(model, r));
  return html_row(cells, "td");
}

// What is wrong in the latest run of each stack and platform, worst first: the checks that
// regressed (against the platform's previous run of the suite, and against the reference
// platform's), each with what flagged it, then the checks that fail as they failed before, those
// of a fault injector (its stack_info's fault_injector: the faults it was asked for) last.
std::string whats_wrong(const SiteModel& model) {
  constexpr size_t kMaxRows = 200;
  struct Row {
    bool regression;
    bool injected;  // on a fault injector: failures it was asked for, listed last
    std::string html;
  };
  std::vector<Row> rows;
  std::map<std::string, int> newest_of_platform;  // platform -> its latest run's index
  for (size_t i = 0; i < model.runs.size(); ++i)
    newest_of_platform[model.runs[i].run.platform] = int(i);
  for (const int i : latest_runs(model)) {
    const SiteRun& r = model.runs[static_cast<size_t>(i)];
    const SiteColumn& col = model.columns[static_cast<size_t>(r.column)];
    std::map<int, const CaseDigest*> digest;
    for (const auto& d : r.cases) digest.emplace(d.case_index, &d);
    const std::map<std::string, std::string> why =
        regression_reasons(model, r, newest_of_platform[r.run.platform] == i);
    const auto add = [&](int case_index, const std::string& flagged, bool regression) {
      const SiteCase& c = model.cases[static_cast<size_t>(case_index)];
      const auto d = digest.find(case_index);
      const std::string status_name = status_of_code(d == digest.end() ? '?' : d->second->status);
      const std::string message = d == digest.end() ? "" : d->second->message.substr(0, 300);
      rows.push_back({regression, col.fault_injector,
                      html_row({platform_cell(col), html_escape(col.label),
                                html_link(r.page, run_ref(r.run.id)), html_link(c.page, c.case_id),
                                status_badge(status_name), html_escape(flagged),
                                "<span class=\"message\">" + html_escape(message) + "</span>"})});
    };
    for (const auto& [id, reason] : why) {
      if (const auto it = model.case_index.find(id); it != model.case_index.end())
        add(it->second, reason, true);
    }
    for (const auto& d : r.cases) {
      const SiteCase& c = model.cases[static_cast<size_t>(d.case_index)];
      if (is_failing(status_of_code(d.status)) && !why.contains(c.case_id) &&
          c.kind != "day0_stage")
        add(d.case_index, "failing", false);
    }
  }
  // Regressions first; of the checks failing as before, a fault injector's last.
  const auto rank = [](const Row& r) { return r.regression ? 0 : r.injected ? 2 : 1; };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const Row& a, const Row& b) { return rank(a) < rank(b); });
  size_t regressions = 0, injected = 0;
  for (const auto& r : rows) {
    regressions += r.regression;
    injected += !r.regression && r.injected;
  }
  std::string html = "<section id=\"wrong\"><h2>What is wrong</h2>\n";
  if (rows.empty())
    return html +
           "<p class=\"good\">Nothing: no check fails or regressed in the latest run of any "
           "stack.</p></section>\n";
  html += "<p>" + std::to_string(regressions) + " regressed, " +
          std::to_string(rows.size() - regressions) + " failing as before" +
          (injected > 0 ? " (" + std::to_string(injected) +
                              " of them on fault injectors, listed last: the faults they were "
                              "asked to inject)"
                        : std::string()) +
          ", in the latest run of each stack and platform" +
          (rows.size() > kMaxRows ? " (the first " + std::to_string(kMaxRows) + " listed)"
                                  : std::string()) +
          ".</p>\n<table class=\"grid wrong\">\n" +
          html_row({"platform", "stack", "run", "check", "status", "flagged by", "message"}, "th");
  for (size_t k = 0; k < rows.size() && k < kMaxRows; ++k) html += rows[k].html;
  return html + "</table></section>\n";
}

// One row per matrix column (stack version on a platform): its latest run, newest first; the
// columns of a `harness ab` comparison under a row of their own, after the others.
std::string overview(const SiteModel& model) {
  const bool compare = !model.compare_platform.empty();
  std::string html =
      "<section id=\"overview\"><h2>Latest run per stack and platform</h2>\n<table "
      "class=\"grid\">\n";
  std::vector<std::string> head = {"platform",
                                   "stack",
                                   "run",
                                   "suite",
                                   "started",
                                   "status",
                                   "pass",
                                   "fail",
                                   "skip",
                                   "other",
                                   "regressions vs previous"};
  if (compare) head.push_back("regressions vs " + html_escape(model.compare_platform));
  html += html_row(head, "th");
  std::vector<int> plain;
  std::map<std::string, std::vector<int>> ab;  // tag -> its columns' latest runs, newest first
  std::vector<std::string> ab_order;
  for (const int i : latest_runs(model)) {
    const std::string& tag = model.columns[size_t(model.runs[size_t(i)].column)].ab;
    if (tag.empty()) {
      plain.push_back(i);
      continue;
    }
    if (!ab.count(tag)) ab_order.push_back(tag);
    ab[tag].push_back(i);
  }
  std::vector<std::pair<std::string, std::vector<int>>> groups = {{"", plain}};
  for (const auto& tag : ab_order) groups.emplace_back(tag, ab[tag]);
  for (const auto& [tag, runs] : groups) {
    if (!tag.empty())
      html += "<tr class=\"group\"><th colspan=\"" + std::to_string(head.size()) +
              "\">A/B comparison " + html_escape(tag) +
              " <span class=\"muted\">(harness ab: base and head interleaved; each side's "
              "latest round)</span></th></tr>\n";
    for (const int i : runs) html += overview_row(model, i, compare);
  }
  return html + "</table></section>\n";
}

}  // namespace

// The Day-0 checklist of a run, stages in order; "" if it is not a Day-0 run.
std::string day0_panel(const SiteRun& run, const std::string& root) {
  if (run.day0.empty()) return "";
  std::string html = "<section id=\"day0\" class=\"panel\"><h2>Day-0 checklist · run " +
                     html_link(root + run.page, run_ref(run.run.id)) + "</h2>\n";
  const std::string& v = run.day0_verdict;
  if (!v.empty()) {
    const std::string text = v == "established" ? "Day-0 readiness established"
                             : v == "service_level"
                                 ? "Day-0 readiness established at the service level "
                                   "(the executor checks did not run: each such stage says why)"
                                 : "Day-0 readiness NOT established";
    html += "<p class=\"verdict verdict-" + html_escape(v) + "\">" + html_escape(text) + "</p>\n";
  }
  html += "<ol class=\"checklist\">\n";
  for (const auto& s : run.day0) {
    html += "<li data-stage=\"" + html_escape(s.id) + "\">" + status_badge(s.status) + " " +
            html_escape(s.title);
    if (!s.summary.empty()) html += " <span class=\"muted\">" + html_escape(s.summary) + "</span>";
    if (s.cases > 0)
      html += " <span class=\"muted\">(" + std::to_string(s.cases) + " cases, " +
              std::to_string(s.failed) + " failing)</span>";
    html += "</li>\n";
  }
  return html + "</ol></section>\n";
}

std::string index_page(const SiteModel& model) {
  const PageSpec page{"Dashboard", "", "index", {}, {"data/site.js"}, false};
  std::string html = page_begin(page);
  html += "<h1>Regression dashboard</h1>\n<p class=\"muted\">" + std::to_string(model.runs.size()) +
          " runs, " + std::to_string(model.cases.size()) + " checks, from " +
          html_escape(model.db_path) + ", generated " + html_escape(model.generated_at) + "</p>\n";
  if (model.runs.empty()) html += "<p>No runs match.</p>\n";
  if (!model.runs.empty()) html += whats_wrong(model);
  html += overview(model);
  for (auto it = model.runs.rbegin(); it != model.runs.rend(); ++it) {
    if (!it->day0.empty()) {
      html += day0_panel(*it, "");
      break;
    }
  }
  html +=
      "<section id=\"matrix-section\"><h2>Matrix</h2>\n<p class=\"muted\">Checks by stack version "
      "(oldest "
      "first). Red: failing; outlined: a regression against the previous stack version of the "
      "platform. "
      "Hover for the key metric, click for the check.</p>\n"
      "<input id=\"matrix-filter\" type=\"search\" placeholder=\"filter checks\">\n"
      "<label><input id=\"matrix-bad\" type=\"checkbox\"> failing or regressed only</label>\n"
      "<div id=\"matrix\" class=\"matrix\"></div></section>\n";
  return html + page_end(page);
}

}  // namespace h0::report
