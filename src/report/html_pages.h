// The pages and data files of the dashboard, each a function of the SiteModel (paths in it are
// relative to the site root). html_site.h writes them to disk.
#pragma once

#include <cstddef>
#include <string>

#include "report/site_model.h"

namespace h0::report {

// index.html: the overview (latest run per stack and platform, the Day-0 checklist) and the
// matrix (rendered by site.js from the run data files).
std::string index_page(const SiteModel& model);
// runs/run-<id>.html: the run's fingerprint, counts, Day-0 checklist, diff against the previous
// run of its platform, and its cases (a client-side filterable table).
std::string run_page(const SiteModel& model, size_t run);
// checks/<stem>.html: one case across runs: per stack version table and trend charts (from the
// run data files), the last failure's evidence, the latest metrics and profile rows.
std::string check_page(const SiteModel& model, size_t case_index);

// The Day-0 checklist panel of a run (stages in order with status); "" if not a Day-0 run.
// `root` is the page's way back to the site root ("" for index.html, "../" under runs/): the
// run's link is root + run.page.
std::string day0_panel(const SiteRun& run, const std::string& root);

// data/site.js: `H0.site = {...}`: runs, columns, cases and groups for every page.
std::string site_data_js(const SiteModel& model);
// data/run-<id>.js: `H0.runs[<index>] = {...}`: the run's case digests, column by column.
std::string run_data_js(const SiteModel& model, size_t run);

}  // namespace h0::report
