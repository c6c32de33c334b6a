// The dashboard's own static files, embedded at build time from src/report/assets/ (see
// src/CMakeLists.txt): the error guard every page loads first, the renderer and the style sheet.
#pragma once

namespace h0::report {

extern const char* const kGuardJs;  // assets/guard.js
extern const char* const kSiteJs;   // assets/site.js
extern const char* const kSiteCss;  // assets/site.css

}  // namespace h0::report
