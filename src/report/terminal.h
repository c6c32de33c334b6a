// The terminal checklist of a run: one line per case as it finishes, a live status line while
// a case runs (TTY only), and the summary.
//   [ 3/120] PASS    rmsnorm[dtype=f32,shape=7x4096]  max_abs 2.4e-07  cos 1  0.12 ms
//   [ 4/120] FAIL    rope[dtype=bf16,shape=7x8x64]  max_abs 0.031  cos 0.99912  0.05 ms
//            max_abs_err 0.031 > atol 0.016 at [3, 2, 17]
//   ops on cpu (OpenBLAS 0.3.21): 202 cases: 200 pass, 2 fail in 13.0 s: FAIL
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include "store/run_data.h"

namespace h0::report {

// Whether `fd` is the user's terminal: a terminal, and no launcher started this process (a
// rank's terminal is the launcher's pty, its output collected): progress lines redraw there.
bool user_terminal(int fd);
// `harness --color`: auto (the default) decides by color_enabled's rules; always and never
// override them for the whole process.
enum class ColorMode { kAuto, kAlways, kNever };
void set_color_mode(ColorMode mode);
// Whether output to `fd` gets ANSI colors: --color always or never; else (auto) the user's
// terminal, NO_COLOR unset or empty (no-color.org), TERM not "dumb".
bool color_enabled(int fd);

// One case, ending in "\n": "[done/total]" (done padded to the width of total), the status in
// capitals padded to 7 columns (colored when `color`), the case id, and the key numbers that are
// present among its metrics (max_abs_err, cosine, median_ms). A status other than pass with a
// message adds the message below, indented to the status column (each of its lines).
std::string case_line(const store::ResultData& result, size_t done, size_t total, bool color);

// "<suite> on <platform> (<op library>): N cases: n1 pass, n2 fail in T s: VERDICT\n". Statuses
// in the order pass, fail, error, skip, crash, timeout, xfail, xpass (others after, by name).
// The op library is versions_json's backend.op_library, else the stack's backend. T is
// finished_at - started_at, else the sum of the case durations. VERDICT is FAIL if any case
// failed (fail, error, crash, timeout), else INCOMPLETE for an incomplete run, else PASS.
std::string summary_line(const store::RunData& run, bool color);

// The live status line "[ 57/202] running rope[...]" on a terminal: each update() rewrites it in
// place with \r (cut to the terminal's width so it never wraps); print() erases it, prints a
// line, and the next update() draws it again. Not a terminal: update() and clear() print
// nothing and print() just prints. Uses no escape sequences, so it works with TERM=dumb.
class ProgressLine {
 public:
  // Active when `out` is a terminal.
  explicit ProgressLine(std::FILE* out);
  // For tests: active as told, with a fixed width in columns.
  ProgressLine(std::FILE* out, bool active, size_t width);
  ~ProgressLine();  // clears the line
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool active() const { return active_; }
  // `done` is the number of the case now running (1-based).
  void update(size_t done, size_t total, const std::string& what);
  // Erases the status line, if one is shown.
  void clear();
  // clear(), then writes `text` as is (e.g. a case_line) and flushes.
  void print(const std::string& text);

 private:
  size_t width() const;

  std::FILE* out_;
  bool active_;
  size_t fixed_width_;  // 0: ask the terminal
  size_t shown_ = 0;    // bytes of the status line now on screen
};

}  // namespace h0::report
