// Running work in a child process so that a platform that crashes (abort, segfault) or hangs
// costs one case, not the run. The worker is forked from the harness before any backend is
// opened and serves requests over pipes: length-prefixed messages both ways. A worker that
// dies or overruns its deadline is reaped (SIGKILL) and the caller starts a new one.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

namespace h0::run {

class Worker {
 public:
  using Serve = std::function<std::string(const std::string& request)>;
  // Forks a worker that answers each request with serve(request) until its input closes.
  // The caller must have no other threads running (fork).
  explicit Worker(Serve serve);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  enum class Reply { kOk, kCrashed, kTimedOut };
  // Sends `request` and waits up to `timeout_s` for the response. After kCrashed or
  // kTimedOut the worker is gone; `why` says how it ended (signal, exit code, deadline).
  Reply call(const std::string& request, double timeout_s, std::string* response, std::string* why);
  bool alive() const { return pid_ > 0; }

 private:
  void reap(std::string* why, bool kill_first);

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
};

}  // namespace h0::run
