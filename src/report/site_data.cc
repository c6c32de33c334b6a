// The data files site.js renders from: data/site.js (shared tables) and data/run-<id>.js (one
// run's cases, column by column, numbers rounded to 4 significant digits to keep them small).
#include <map>
#include <nlohmann/json.hpp>

#include "report/html_pages.h"
#include "report/html_text.h"

namespace h0::report {
namespace {

using nlohmann::json;

constexpr size_t kMaxMessage = 500;  // bytes of a case message kept in the run data

json runs_table(const SiteModel& model) {
  json runs = json::array();
  for (const auto& r : model.runs) {
    runs.push_back({{"id", r.run.id},
                    {"suite", r.run.suite},
                    {"platform", r.run.platform},
                    {"col", r.column},
                    {"started", r.run.started_at},
                    {"status", r.run.status},
                    {"page", r.page},
                    {"data", r.data}});
  }
  return runs;
}

json columns_table(const SiteModel& model) {
  json cols = json::array();
  for (const auto& c : model.columns)
    cols.push_back({{"platform", c.platform}, {"label", c.label}, {"fp", c.fingerprint}});
  return cols;
}

// cases: [case id, group, page stem, key metric]; groups: [suite, layer].
void cases_and_groups(const SiteModel& model, json* cases, json* groups) {
  std::map<std::pair<std::string, std::string>, int> group_ids;
  *cases = json::array();
  *groups = json::array();
  const std::string prefix = "checks/", suffix = ".html";
  for (const auto& c : model.cases) {
    const auto [it, added] =
        group_ids.emplace(std::make_pair(c.suite, c.layer), static_cast<int>(groups->size()));
    if (added) groups->push_back({c.suite, c.layer});
    const std::string stem =
        c.page.substr(prefix.size(), c.page.size() - prefix.size() - suffix.size());
    cases->push_back({c.case_id, it->second, stem, c.key_metric});
  }
}

// The case indices as [first, count] ranges of consecutive indices (a run of a suite is mostly
// one range).
json index_ranges(const std::vector<CaseDigest>& cases) {
  json ranges = json::array();
  for (size_t i = 0; i < cases.size();) {
    size_t n = 1;
    while (i + n < cases.size() &&
           cases[i + n].case_index == cases[i].case_index + static_cast<int>(n))
      ++n;
    ranges.push_back({cases[i].case_index, n});
    i += n;
  }
  return ranges;
}

// status_code() letter -> status, and '?' -> "other".
json statuses_table() {
  json statuses = json::object();
  for (const auto& s : kStatusCodes) statuses[std::string(1, s.code)] = s.status;
  statuses["?"] = "other";
  return statuses;
}

}  // namespace

std::string site_data_js(const SiteModel& model) {
  json site = {{"generated", model.generated_at},
               {"db", model.db_path},
               {"runs", runs_table(model)},
               {"cols", columns_table(model)},
               {"statuses", statuses_table()}};
  cases_and_groups(model, &site["cases"], &site["groups"]);
  return "H0.site=" + script_json(site) + ";\n";
}

std::string run_data_js(const SiteModel& model, size_t run) {
  const SiteRun& r = model.runs[run];
  json k = json::array(), t = json::array(), m = json::array(), p = json::array(),
       msg = json::object();
  std::string s;
  for (size_t i = 0; i < r.cases.size(); ++i) {
    const CaseDigest& x = r.cases[i];
    s += x.status;
    k.push_back(rounded(x.key));
    t.push_back(x.tolerance);
    m.push_back(rounded(x.median_ns));
    p.push_back(rounded(x.p99_ns));
    if (!x.message.empty()) msg[std::to_string(i)] = x.message.substr(0, kMaxMessage);
  }
  const json data = {{"c", index_ranges(r.cases)}, {"s", s}, {"k", k}, {"t", t},
                     {"tol", r.tolerances},        {"m", m}, {"p", p}, {"msg", msg}};
  return "H0.runs[" + std::to_string(run) + "]=" + script_json(data) + ";\n";
}

}  // namespace h0::report
