#include "report/html_site.h"

#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "base/input_file.h"
#include "base/parallel.h"
#include "report/html_pages.h"
#include "report/report_assets.h"

namespace h0::report {
namespace fs = std::filesystem;
namespace {

void make_directories(const fs::path& dir) {
  for (const char* sub : {"assets", "data", "runs", "checks"}) {
    std::error_code ec;
    fs::create_directories(dir / sub, ec);
    if (ec) throw InputError((dir / sub).string(), "cannot create directory: " + ec.message());
  }
}

// Writes `text` to dir/rel as a new file (truncating an old one in place makes ext4 flush it on
// close, auto_da_alloc, which costs seconds over thousands of pages) and counts it in `stats`.
void write_file(const fs::path& dir, const std::string& rel, const std::string& text,
                SiteStats* stats) {
  const fs::path path = dir / rel;
  std::error_code ec;
  fs::remove(path, ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) throw InputError(path.string(), "cannot write the file");
  ++stats->files;
  if (rel.ends_with(".html")) ++stats->pages;
  stats->bytes += text.size();
}

// The check pages, the bulk of the site, on every core. Rethrows the first error.
void write_check_pages(const SiteModel& model, const fs::path& dir, SiteStats* stats) {
  constexpr size_t kGrain = 256;
  const size_t n = model.cases.size(), chunks = (n + kGrain - 1) / kGrain;
  std::vector<SiteStats> chunk_stats(chunks);
  std::vector<std::exception_ptr> errors(chunks);
  base::parallel_for(n, kGrain, [&](size_t chunk, size_t begin, size_t end) {
    try {
      for (size_t i = begin; i < end; ++i)
        write_file(dir, model.cases[i].page, check_page(model, i), &chunk_stats[chunk]);
    } catch (...) {
      errors[chunk] = std::current_exception();
    }
  });
  for (size_t c = 0; c < chunks; ++c) {
    if (errors[c]) std::rethrow_exception(errors[c]);
    stats->files += chunk_stats[c].files;
    stats->pages += chunk_stats[c].pages;
    stats->bytes += chunk_stats[c].bytes;
  }
}

std::string read_file(const std::string& path) { return base::read_regular_file(path); }

}  // namespace

std::string find_chart_js(const std::string& flag) {
  if (!flag.empty()) return fs::is_regular_file(flag) ? flag : "";
  // UMD builds only: Chart.js 4 (Debian 13) ships chart.umd*.js, 3.x (Debian 12) chart.min.js.
  for (const char* name : {"chart.umd.min.js", "chart.umd.js", "chart.min.js", "Chart.min.js"}) {
    const std::string path = std::string("/usr/share/javascript/chart.js/") + name;
    if (fs::is_regular_file(path)) return path;
  }
  return "";
}

SiteStats write_site(const SiteModel& model, const std::string& out_dir,
                     const std::string& chart_js,
                     const std::function<void(size_t, size_t)>& progress) {
  const fs::path dir(out_dir);
  make_directories(dir);
  SiteStats stats;
  write_file(dir, "assets/guard.js", kGuardJs, &stats);
  write_file(dir, "assets/site.js", kSiteJs, &stats);
  write_file(dir, "assets/site.css", kSiteCss, &stats);
  if (!chart_js.empty()) {
    write_file(dir, "assets/chart.min.js", read_file(chart_js), &stats);
    stats.charts = true;
    stats.chart_js = chart_js;
  }
  write_file(dir, "data/site.js", site_data_js(model), &stats);
  const size_t total = model.runs.size() + model.cases.size() + 1;
  for (size_t i = 0; i < model.runs.size(); ++i) {
    write_file(dir, model.runs[i].data, run_data_js(model, i), &stats);
    write_file(dir, model.runs[i].page, run_page(model, i), &stats);
    if (progress) progress(i + 1, total);
  }
  write_check_pages(model, dir, &stats);
  write_file(dir, "index.html", index_page(model), &stats);
  if (progress) progress(total, total);
  return stats;
}

}  // namespace h0::report
