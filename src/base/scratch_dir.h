// A scratch directory of this process's own, $TMPDIR/<prefix>-<pid>, that does not outlive it:
// removed by the destructor, and — when a signal ends the process (SIGINT, SIGTERM, SIGHUP, or a
// crash: SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) — by an async-signal-safe handler that then
// re-raises the signal with its default action. Forked children (isolated case workers) leave it
// alone. Making one also removes what a SIGKILLed run left: <prefix>-<pid> of a pid now gone.
#pragma once

#include <string>

namespace h0::base {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int slot_ = -1;  // its place in the signal handler's table
};

}  // namespace h0::base
