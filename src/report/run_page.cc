// runs/run-<id>.html: one run, its fingerprint, and its diff against the previous run.
#include <nlohmann/json.hpp>

#include "base/json_read.h"
#include "report/html_page.h"
#include "report/html_pages.h"
#include "report/html_text.h"

namespace h0::report {
namespace {

constexpr size_t kMaxDiffRows = 200;  // per table; the rest is counted

std::string labels_text(const std::map<std::string, std::string>& labels) {
  std::string text;
  for (const auto& [k, v] : labels) text += (text.empty() ? "" : ", ") + k + "=" + v;
  return text;
}

std::string pretty_json(const std::string& text) {
  const auto j = base::parse_json_or_discarded(text);
  return j.is_discarded() ? text : j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string fingerprint(const store::RunData& r) {
  std::string html =
      "<section id=\"fingerprint\"><h2>Stack fingerprint</h2>\n<table class=\"kv\">\n";
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"uuid", r.uuid},
      {"suite", r.suite + " (" + r.suite_file + ")"},
      {"platform", r.platform + " (" + r.platform_file + ")"},
      {"fingerprint", r.stack.fingerprint},
      {"backend", r.stack.backend},
      {"host", r.host},
      {"mesh", r.mesh},
      {"started", r.started_at},
      {"finished", r.finished_at},
      {"labels", labels_text(r.labels)}};
  for (const auto& [k, v] : rows) html += html_row({html_escape(k), html_escape(v)});
  html +=
      "</table>\n<pre>" + html_escape(pretty_json(r.stack.versions_json)) + "</pre></section>\n";
  return html;
}

// The link to a case's check page, by case id.
std::string case_link(const SiteModel& model, const std::string& case_id) {
  const auto it = model.case_index.find(case_id);
  if (it == model.case_index.end()) return html_escape(case_id);
  return html_link("../" + model.cases[static_cast<size_t>(it->second)].page, case_id);
}

std::string more_rows(size_t total, size_t shown) {
  return total > shown
             ? "<p class=\"muted\">… and " + std::to_string(total - shown) + " more.</p>\n"
             : "";
}

std::string diff_section(const SiteModel& model, const SiteRun& run) {
  std::string html = "<section id=\"diff\"><h2>Diff against the previous run</h2>\n";
  if (!run.diff)
    return html + "<p class=\"muted\">No earlier complete run of this platform.</p></section>\n";
  const diff::DiffReport& d = *run.diff;
  const SiteRun& prev = model.runs[static_cast<size_t>(run.previous)];
  const auto& s = d.summary;
  html += "<p>Against " + html_link("../" + prev.page, "run " + run_ref(prev.run.id)) + ": " +
          std::to_string(s.compared) + " compared, <b class=\"diff-regressions\">" +
          std::to_string(s.regressions) + "</b> regressions, " + std::to_string(s.fixed) +
          " fixed, " + std::to_string(s.changed) + " changed, " + std::to_string(s.added) +
          " new, " + std::to_string(s.removed) + " removed, " + std::to_string(s.metric_drift) +
          " metric drifts, " + std::to_string(s.perf_regressions) + " timing regressions, " +
          std::to_string(s.perf_improvements) + " timing improvements.</p>\n";
  if (!d.statuses.empty()) {
    html += "<h3>Status changes</h3>\n<table class=\"grid\">\n" +
            html_row({"kind", "case", "before", "now", "message"}, "th");
    for (size_t i = 0; i < d.statuses.size() && i < kMaxDiffRows; ++i) {
      const auto& c = d.statuses[i];
      html += html_row(
          {"<span class=\"flip-" + html_escape(c.kind) + "\">" + html_escape(c.kind) + "</span>",
           case_link(model, c.case_id), html_escape(c.base_status), html_escape(c.head_status),
           html_escape(c.message)});
    }
    html += "</table>\n" + more_rows(d.statuses.size(), kMaxDiffRows);
  }
  if (!d.drifts.empty()) {
    html += "<h3>Metric drift</h3>\n<table class=\"grid\">\n" +
            html_row({"case", "metric", "before", "now", "factor"}, "th");
    for (size_t i = 0; i < d.drifts.size() && i < kMaxDiffRows; ++i) {
      const auto& m = d.drifts[i];
      html += html_row({case_link(model, m.case_id), html_escape(m.metric), number_text(m.base),
                        number_text(m.head), number_text(m.factor)});
    }
    html += "</table>\n" + more_rows(d.drifts.size(), kMaxDiffRows);
  }
  if (!d.perf.empty()) {
    html += "<h3>Timing changes</h3>\n<table class=\"grid\">\n" +
            html_row({"case", "phase", "before", "now", "change", "p", "verdict"}, "th");
    for (size_t i = 0; i < d.perf.size() && i < kMaxDiffRows; ++i) {
      const auto& p = d.perf[i];
      html +=
          html_row({case_link(model, p.case_id), html_escape(p.phase), ns_text(p.base_median_ns),
                    ns_text(p.head_median_ns), number_text(100 * p.change) + "%",
                    number_text(p.p_value), html_escape(p.verdict)});
    }
    html += "</table>\n" + more_rows(d.perf.size(), kMaxDiffRows);
  }
  return html + "</section>\n";
}

std::string counts(const SiteRun& run) {
  std::string html = "<p class=\"counts\">" + std::to_string(run.cases.size()) + " cases:";
  for (const auto& [status, n] : run.counts)
    html.append(" ").append(status_badge(status)).append(" ").append(std::to_string(n));
  return html + "</p>\n";
}

}  // namespace

std::string run_page(const SiteModel& model, size_t run) {
  const SiteRun& r = model.runs[run];
  const std::string title =
      "run #" + std::to_string(r.run.id) + " · " + r.run.suite + " on " + r.run.platform;
  PageSpec page{title, "../", "run", {{"run", std::to_string(run)}}, {"data/site.js", r.data},
                false};
  std::string html = page_begin(page);
  html += "<h1>Run #" + std::to_string(r.run.id) + " " + status_badge(r.run.status) + "</h1>\n";
  html += "<p>" + html_escape(r.run.suite) + " on " + html_escape(r.run.platform) + ", stack " +
          html_escape(model.columns[static_cast<size_t>(r.column)].label) + ", started " +
          html_escape(r.run.started_at) + "</p>\n";
  html += counts(r) + day0_panel(r, "../") + fingerprint(r.run) + diff_section(model, r);
  html +=
      "<section id=\"cases-section\"><h2>Cases</h2>\n<div class=\"controls\">"
      "<input id=\"case-filter\" type=\"search\" placeholder=\"filter by case id or message\">"
      "<select id=\"status-filter\"><option value=\"\">any status</option></select></div>\n"
      "<div id=\"cases\"></div></section>\n";
  return html + page_end(page);
}

}  // namespace h0::report
