// Starting and stopping a serving engine from a platform file's `service:` section: the start
// command in its own process group with the given environment, its stdout and stderr captured
// to a log file, health polled until ready (or the process dies, or the startup timeout), then
// stopped with SIGTERM to the group and SIGKILL after a grace period.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace h0::service {

struct LaunchSpec {
  std::string command;  // run by /bin/sh -c; empty: an already running service at `url`
  std::string url;      // base URL, e.g. "http://127.0.0.1:8000"
  std::string health = "/v1/models";
  double startup_timeout_s = 600;
  double stop_grace_s = 10;
  std::map<std::string, std::string> env;  // added to the harness's environment
  std::string log_path;                    // where stdout and stderr go (created)
  std::string api_key;                     // sent with the health probes (vLLM --api-key)
};

class ServiceProcess {
 public:
  ServiceProcess() = default;
  ~ServiceProcess();  // stops the service if this object started it
  ServiceProcess(const ServiceProcess&) = delete;
  ServiceProcess& operator=(const ServiceProcess&) = delete;

  // Starts `spec.command` (if any) and waits until GET url+health answers 2xx. False when the
  // process exits first, cannot be started, or the timeout passes; error() says which and
  // log_tail() holds the last lines of its log.
  bool start(const LaunchSpec& spec);
  // SIGTERM to the process group, SIGKILL after the grace period; reaps it. Idempotent.
  void stop();
  // Whether the started process is still running (true for an external service once start()
  // succeeded). Reaps the process if it has exited; stop() still sweeps its group.
  bool running();

  double startup_s() const { return startup_s_; }
  const std::string& error() const { return error_; }
  const LaunchSpec& spec() const { return spec_; }
  pid_t pid() const { return pid_; }
  // The last `lines` lines of the log (empty for an external service).
  std::string log_tail(int lines = 40) const;

 private:
  // Reaps the started process if it has exited (WNOHANG); true once it is reaped.
  bool reap();

  LaunchSpec spec_;
  pid_t pid_ = -1;  // the started process, also its process group id; -1 when none
  bool reaped_ = false;
  int exit_status_ = 0;    // waitpid's status once reaped_
  bool external_ = false;  // start() succeeded on a service it did not start
  double startup_s_ = 0;
  std::string error_;
};

// A free TCP port on 127.0.0.1 (bound and released; the usual small race applies); 0 when no
// socket can be bound.
int free_port();

}  // namespace h0::service
