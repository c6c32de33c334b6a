#include "report/html_page.h"

#include <cmath>
#include <cstdio>

#include "diff/diff.h"
#include "report/html_text.h"

namespace h0::report {

const char* const kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; base-uri 'none'; form-action 'none'";

std::string page_begin(const PageSpec& page) {
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  html += "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
          std::string(kContentSecurityPolicy) + "\">\n";
  html += "<title>" + html_escape(page.title) + "</title>\n";
  html += "<link rel=\"stylesheet\" href=\"" + page.root + "assets/site.css\">\n";
  html += "<script src=\"" + page.root + "assets/guard.js\"></script>\n</head>\n";
  html += "<body data-page=\"" + page.kind + "\" data-root=\"" + page.root + "\"";
  for (const auto& [name, value] : page.body_data)
    html += " data-" + name + "=\"" + html_escape(value) + "\"";
  html += ">\n<nav><a href=\"" + page.root + "index.html\">day0 harness</a> · " +
          html_escape(page.title) + "</nav>\n<main>\n";
  return html;
}

std::string page_end(const PageSpec& page) {
  std::string html = "</main>\n";
  for (const auto& s : page.scripts)
    html += "<script src=\"" + page.root + html_escape(s) + "\"></script>\n";
  if (page.charts) html += "<script src=\"" + page.root + "assets/chart.min.js\"></script>\n";
  html += "<script src=\"" + page.root + "assets/site.js\"></script>\n</body></html>\n";
  return html;
}

std::string html_row(const std::vector<std::string>& cells, std::string_view cell) {
  std::string html = "<tr>";
  for (const auto& c : cells) html.append("<").append(cell).append(">").append(c);
  return html + "\n";
}

std::string html_link(const std::string& href, const std::string& text) {
  return "<a href=\"" + html_escape(href) + "\">" + html_escape(text) + "</a>";
}

std::string status_badge(const std::string& status) {
  const std::string s = html_escape(status);
  return "<span class=\"st st-" + s + "\">" + s + "</span>";
}

std::string run_ref(int64_t id) {
  std::string ref = "#";
  ref += std::to_string(id);
  return ref;
}

std::string number_text(double v) {
  if (std::isnan(v)) return "–";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string ns_text(double ns) { return std::isnan(ns) ? "–" : html_escape(diff::format_ns(ns)); }

}  // namespace h0::report
