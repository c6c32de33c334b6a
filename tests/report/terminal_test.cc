// The terminal checklist: exact lines with and without color, color detection (TTY, NO_COLOR,
// TERM=dumb) on a pseudo-terminal, and the live status line's bytes.
#include "report/terminal.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <optional>
#include <string>

namespace h0::report {
namespace {

store::ResultData result(const std::string& case_id, const std::string& status,
                         const std::string& message = "") {
  store::ResultData r;
  r.case_id = case_id;
  r.status = status;
  r.message = message;
  return r;
}

store::RunData run_of(int pass, int fail) {
  store::RunData run;
  run.suite = "ops";
  run.platform = "cpu";
  run.status = fail > 0 ? "fail" : "pass";
  run.started_at = "2024-05-01T12:00:00Z";
  run.finished_at = "2024-05-01T12:00:13Z";
  run.stack.backend = "cpu";
  run.stack.versions_json = R"({"backend":{"op_library":"OpenBLAS 0.3.21"}})";
  for (int i = 0; i < pass; ++i) run.results.push_back(result("a", "pass"));
  for (int i = 0; i < fail; ++i) run.results.push_back(result("b", "fail"));
  return run;
}

// Sets (or, with nullopt, unsets) an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A pseudo-terminal: `slave` is a TTY as a program's stdout would be.
struct Pty {
  Pty() {
    master = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master >= 0 && ::grantpt(master) == 0 && ::unlockpt(master) == 0) {
      slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
    }
  }
  ~Pty() {
    if (slave >= 0) ::close(slave);
    if (master >= 0) ::close(master);
  }
  int master = -1, slave = -1;
};

// What `write` printed to a ProgressLine's stream.
template <typename F>
std::string captured(bool active, size_t width, F write) {
  std::FILE* f = std::tmpfile();
  {
    ProgressLine line(f, active, width);
    write(line);
  }
  std::rewind(f);
  std::string out;
  for (int c; (c = std::fgetc(f)) != EOF;) out += static_cast<char>(c);
  std::fclose(f);
  return out;
}

TEST(TerminalTest, CaseLinePlain) {
  store::ResultData r = result("rmsnorm[dtype=f32,shape=7x4096]", "pass");
  r.metrics = {
      {"gbps", 12.5}, {"median_ms", 0.12}, {"cosine", 0.99999999}, {"max_abs_err", 2.4e-07}};
  EXPECT_EQ(case_line(r, 3, 120, false),
            "[  3/120] PASS    rmsnorm[dtype=f32,shape=7x4096]  max_abs 2.4e-07  cos 1  0.12 ms\n");
  EXPECT_EQ(case_line(r, 120, 120, false),
            "[120/120] PASS    rmsnorm[dtype=f32,shape=7x4096]  max_abs 2.4e-07  cos 1  0.12 ms\n");
}

TEST(TerminalTest, CaseLineColored) {
  store::ResultData r = result("add[dtype=f32]", "pass");
  r.metrics = {{"median_ms", 0.5}};
  EXPECT_EQ(case_line(r, 1, 9, true), "[1/9] \033[32mPASS\033[0m    add[dtype=f32]  0.5 ms\n");
  EXPECT_EQ(case_line(result("x", "skip", "unsupported"), 2, 9, true),
            "[2/9] \033[33mSKIP\033[0m    x\n      unsupported\n");
  EXPECT_EQ(case_line(result("x", "xfail"), 3, 9, true), "[3/9] \033[33mXFAIL\033[0m   x\n");
  EXPECT_EQ(case_line(result("x", "crash"), 4, 9, true), "[4/9] \033[31mCRASH\033[0m   x\n");
}

TEST(TerminalTest, MessageGoesOnIndentedLinesForNonPass) {
  store::ResultData r =
      result("rope[dtype=bf16]", "fail", "max_abs_err 0.03 > atol 0.016\nat [3, 2]\n");
  r.metrics = {{"max_abs_err", 0.03125}, {"cosine", 0.99912}};
  EXPECT_EQ(case_line(r, 4, 120, false),
            "[  4/120] FAIL    rope[dtype=bf16]  max_abs 0.03125  cos 0.99912\n"
            "          max_abs_err 0.03 > atol 0.016\n"
            "          at [3, 2]\n");
  EXPECT_EQ(case_line(result("moe", "timeout", "no result in 30 s"), 7, 7, false),
            "[7/7] TIMEOUT moe\n      no result in 30 s\n");
  EXPECT_EQ(case_line(result("ok", "pass", "fell back to host"), 1, 1, false),
            "[1/1] PASS    ok\n");
}

TEST(TerminalTest, SummaryLine) {
  EXPECT_EQ(summary_line(run_of(200, 2), false),
            "ops on cpu (OpenBLAS 0.3.21): 202 cases: 200 pass, 2 fail in 13.0 s: FAIL\n");
  EXPECT_EQ(summary_line(run_of(200, 2), true),
            "ops on cpu (OpenBLAS 0.3.21): 202 cases: 200 pass, 2 fail in 13.0 s: "
            "\033[31mFAIL\033[0m\n");
  EXPECT_EQ(summary_line(run_of(1, 0), true),
            "ops on cpu (OpenBLAS 0.3.21): 1 case: 1 pass in 13.0 s: \033[32mPASS\033[0m\n");
}

TEST(TerminalTest, SummaryOrdersStatusesAndTimesTheRun) {
  store::RunData run = run_of(2, 0);
  run.stack.versions_json = "{}";
  run.started_at = "2024-05-01T23:59:59.25Z";
  run.finished_at = "2024-05-02T00:00:01.75Z";
  for (const char* s : {"xpass", "skip", "weird", "crash", "xfail", "timeout", "error"}) {
    run.results.push_back(result("c", s));
  }
  EXPECT_EQ(summary_line(run, false),
            "ops on cpu (cpu): 9 cases: 2 pass, 1 error, 1 skip, 1 crash, 1 timeout, 1 xfail, "
            "1 xpass, 1 weird in 2.5 s: FAIL\n");

  store::RunData unfinished = run_of(2, 0);
  unfinished.status = "incomplete";
  unfinished.finished_at = "";
  unfinished.results[0].duration_s = 1.2;
  unfinished.results[1].duration_s = 2.0;
  EXPECT_EQ(summary_line(unfinished, false),
            "ops on cpu (OpenBLAS 0.3.21): 2 cases: 2 pass in 3.2 s: INCOMPLETE\n");
}

TEST(TerminalTest, ColorEnabledOnlyOnATerminalWithoutNoColor) {
  Pty pty;
  ASSERT_GE(pty.slave, 0) << "no pseudo-terminal";
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  {
    ScopedEnv no_color("NO_COLOR", std::nullopt), term("TERM", "xterm-256color");
    EXPECT_TRUE(color_enabled(pty.slave));
    EXPECT_FALSE(color_enabled(pipe_fds[1]));
  }
  {
    ScopedEnv no_color("NO_COLOR", "1"), term("TERM", "xterm-256color");
    EXPECT_FALSE(color_enabled(pty.slave));
  }
  {
    ScopedEnv no_color("NO_COLOR", ""), term("TERM", "xterm");  // empty = unset (no-color.org)
    EXPECT_TRUE(color_enabled(pty.slave));
  }
  {
    ScopedEnv no_color("NO_COLOR", std::nullopt), term("TERM", "dumb");
    EXPECT_FALSE(color_enabled(pty.slave));
  }
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST(TerminalTest, ProgressLineIsActiveOnlyOnATerminal) {
  Pty pty;
  ASSERT_GE(pty.slave, 0) << "no pseudo-terminal";
  std::FILE* tty = ::fdopen(::dup(pty.slave), "w");
  EXPECT_TRUE(ProgressLine(tty).active());
  std::fclose(tty);
  std::FILE* file = std::tmpfile();
  EXPECT_FALSE(ProgressLine(file).active());
  std::fclose(file);
}

TEST(TerminalTest, ProgressLineRewritesAndClears) {
  EXPECT_EQ(captured(true, 80,
                     [](ProgressLine& p) {
                       p.update(57, 202, "rope[dtype=bf16,shape=7x8x64]");
                       p.update(58, 202, "add[x]");
                       p.print("[ 57/202] PASS    rope\n");
                       p.update(59, 202, "mul[x]");
                     }),
            "\r[ 57/202] running rope[dtype=bf16,shape=7x8x64]"
            "\r[ 58/202] running add[x]" +
                std::string(23, ' ') + "\r" + std::string(24, ' ') +
                "\r[ 57/202] PASS    rope\n"
                "\r[ 59/202] running mul[x]"
                "\r" +
                std::string(24, ' ') + "\r");  // the destructor clears
}

TEST(TerminalTest, ProgressLineIsCutToTheTerminalWidth) {
  EXPECT_EQ(captured(true, 20, [](ProgressLine& p) { p.update(1, 2, "attention[long]"); }),
            "\r[1/2] running atten\r" + std::string(19, ' ') + "\r");
}

TEST(TerminalTest, ProgressLinePrintsNothingButLinesWhenNotATerminal) {
  EXPECT_EQ(captured(false, 80,
                     [](ProgressLine& p) {
                       p.update(1, 2, "a");
                       p.print("[1/2] PASS    a\n");
                       p.update(2, 2, "b");
                       p.clear();
                     }),
            "[1/2] PASS    a\n");
}

}  // namespace
}  // namespace h0::report
