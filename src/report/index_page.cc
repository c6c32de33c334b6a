// index.html: overview and matrix.
#include <algorithm>

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
  const std::string title = std::to_string(s.regressions) + " status, " + std::to_string(s.metric_drift) +
                            " metric drift, " + std::to_string(s.perf_regressions) + " timing, vs run " + prev;
  return "<a class=\"" + std::string(run.regressions() ? "bad" : "good") + "\" title=\"" + html_escape(title) +
         "\" href=\"" + html_escape(run.page) + "#diff\">" + text + "</a>";
}

// One row per matrix column (stack version on a platform): its latest run, newest first.
std::string overview(const SiteModel& model) {
  std::vector<int> latest(model.columns.size(), -1);
  for (size_t i = 0; i < model.runs.size(); ++i) latest[static_cast<size_t>(model.runs[i].column)] = static_cast<int>(i);
  std::sort(latest.begin(), latest.end(), std::greater<>());
  std::string html = "<section id=\"overview\"><h2>Latest run per stack and platform</h2>\n<table class=\"grid\">\n";
  html += html_row({"platform", "stack", "run", "suite", "started", "status", "pass", "fail", "skip", "other",
                    "regressions vs previous"}, "th");
  for (const int i : latest) {
    if (i < 0) continue;
    const SiteRun& r = model.runs[static_cast<size_t>(i)];
    const SiteColumn& c = model.columns[static_cast<size_t>(r.column)];
    html += html_row({html_escape(c.platform), "<span title=\"" + html_escape(c.fingerprint) + "\">" + html_escape(c.label) + "</span>",
                      html_link(r.page, run_ref(r.run.id)), html_escape(r.run.suite),
                      html_escape(r.run.started_at), status_badge(r.run.status), count_of(r, "pass"),
                      count_of(r, "fail"), count_of(r, "skip"), std::to_string(other_count(r)),
                      regression_cell(model, r)});
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
    const std::string text = v == "established"     ? "Day-0 readiness established"
                             : v == "service_level" ? "Day-0 readiness established at the service level "
                                                      "(the executor checks did not run: each such stage says why)"
                                                    : "Day-0 readiness NOT established";
    html += "<p class=\"verdict verdict-" + html_escape(v) + "\">" + html_escape(text) + "</p>\n";
  }
  html += "<ol class=\"checklist\">\n";
  for (const auto& s : run.day0) {
    html += "<li data-stage=\"" + html_escape(s.id) + "\">" + status_badge(s.status) + " " + html_escape(s.title);
    if (!s.summary.empty()) html += " <span class=\"muted\">" + html_escape(s.summary) + "</span>";
    if (s.cases > 0) html += " <span class=\"muted\">(" + std::to_string(s.cases) + " cases, " + std::to_string(s.failed) + " failing)</span>";
    html += "</li>\n";
  }
  return html + "</ol></section>\n";
}

std::string index_page(const SiteModel& model) {
  const PageSpec page{"Dashboard", "", "index", {}, {"data/site.js"}, false};
  std::string html = page_begin(page);
  html += "<h1>Regression dashboard</h1>\n<p class=\"muted\">" + std::to_string(model.runs.size()) + " runs, " +
          std::to_string(model.cases.size()) + " checks, from " + html_escape(model.db_path) + ", generated " +
          html_escape(model.generated_at) + "</p>\n";
  if (model.runs.empty()) html += "<p>No runs match.</p>\n";
  html += overview(model);
  for (auto it = model.runs.rbegin(); it != model.runs.rend(); ++it) {
    if (!it->day0.empty()) {
      html += day0_panel(*it, "");
      break;
    }
  }
  html += "<section id=\"matrix-section\"><h2>Matrix</h2>\n<p class=\"muted\">Checks by stack version (oldest "
          "first). Red: failing; outlined: a regression against the previous stack version of the platform. "
          "Hover for the key metric, click for the check.</p>\n"
          "<input id=\"matrix-filter\" type=\"search\" placeholder=\"filter checks\">\n"
          "<div id=\"matrix\" class=\"matrix\"></div></section>\n";
  return html + page_end(page);
}

}  // namespace h0::report
