// The skeleton every dashboard page shares and small HTML builders. Every page carries
//   <meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'self';
//   ...">
// so only script files the harness wrote next to the pages run (no inline script, no event
// handler attribute, nothing from the network); data rides in those files or in
// <script type="application/json"> blocks, which never execute. assets/guard.js loads first and
// records JavaScript errors and CSP violations on <html data-js-errors="N">.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace h0::report {

// Contains no '"' or '&': it stands in the attribute as it is.
extern const char* const kContentSecurityPolicy;

struct PageSpec {
  std::string title;  // plain text; escaped here
  std::string root;   // the site root relative to the page: "" or "../"
  std::string kind;   // <body data-page>: "index", "run" or "check"
  std::vector<std::pair<std::string, std::string>> body_data;  // more data-* attributes
  std::vector<std::string> scripts;  // data files relative to the root, run before site.js
  bool charts = false;               // load assets/chart.min.js
};

// From <!doctype html> to the opening <body> and the navigation bar.
std::string page_begin(const PageSpec& page);
// The footer, the scripts and the closing tags.
std::string page_end(const PageSpec& page);

// <tr> of cells that are HTML already; `cell` is "td" or "th". The end tags are left out, as HTML
// allows (pages with thousands of rows stay small).
std::string html_row(const std::vector<std::string>& cells, std::string_view cell = "td");
// <a href="..">text</a>; `href` is a site path (escaped), `text` plain text (escaped).
std::string html_link(const std::string& href, const std::string& text);
// <span class="st st-fail">fail</span>
std::string status_badge(const std::string& status);
// "#12": how pages name a run.
std::string run_ref(int64_t id);
// A number for tables: 4 significant digits, "–" for NaN.
std::string number_text(double v);
// A duration in ns as "12.3 µs"; "–" for NaN.
std::string ns_text(double ns);

}  // namespace h0::report
