// `harness report`: the self-contained static dashboard (opens from disk; no server, no network).
//   index.html              overview, Day-0 checklist, matrix
//   runs/run-<id>.html      one per run;  checks/<stem>.html  one per case (check)
//   data/site.js, data/run-<id>.js   the data site.js renders from (JSON assigned to H0.*)
//   assets/guard.js site.js site.css chart.min.js (Chart.js, copied from the system package)
// Every string from the store is HTML-escaped, or JSON-escaped for <script>; the pages' CSP
// lets only these script files run.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "report/site_model.h"

namespace h0::report {

struct SiteStats {
  int pages = 0;  // .html files
  int files = 0;  // all files, pages included
  uint64_t bytes = 0;
  bool charts = false;   // Chart.js was found and copied
  std::string chart_js;  // where it came from
};

// The UMD build of Chart.js from the Debian package libjs-chart.js (or `flag` if not empty);
// "" if none exists.
std::string find_chart_js(const std::string& flag = "");

// Writes the site for `model` into `out_dir` (created if missing; files there are replaced, other
// files left alone). `chart_js` is a Chart.js UMD file to copy, or "" (pages then say that charts
// need libjs-chart.js). `progress(done, total)` follows the pages. Throws InputError naming a file
// that cannot be written.
SiteStats write_site(const SiteModel& model, const std::string& out_dir,
                     const std::string& chart_js,
                     const std::function<void(size_t, size_t)>& progress = {});

}  // namespace h0::report
