#include "service/launcher.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "service/client.h"

extern char** environ;

namespace h0::service {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kHealthPollS = 0.15;  // between health probes
constexpr double kStopPollS = 0.02;    // between checks that the group is gone
constexpr double kKillWaitS = 2;       // for the group to vanish after SIGKILL

// The process groups of the services this process started and has not stopped, for the handler
// of the signals that end a run from outside (a CI job's timeout sends SIGTERM, a terminal
// SIGINT or SIGHUP): the engines must not outlive the harness. Each service leads its own
// session (spawn's setsid), so nothing else would stop it.
constexpr int kMaxLive = 32;
std::atomic<pid_t> g_live[kMaxLive];
constexpr int kEndingSignals[] = {SIGTERM, SIGINT, SIGHUP};

// Async-signal-safe: SIGTERM to every live group, up to 2 s for them to go, SIGKILL to what is
// left; then the signal's default action, so the harness still ends by it.
void stop_live_services(int sig) {
  for (auto& slot : g_live) {
    if (const pid_t pg = slot.load(); pg > 0) ::kill(-pg, SIGTERM);
  }
  for (int i = 0; i < 200; ++i) {
    bool alive = false;
    for (auto& slot : g_live) {
      const pid_t pg = slot.load();
      if (pg <= 0) continue;
      ::waitpid(pg, nullptr, WNOHANG);  // the leader, our child, reaped once it exits
      alive = alive || ::kill(-pg, 0) == 0;
    }
    if (!alive) break;
    const timespec tick{0, 10'000'000};
    ::nanosleep(&tick, nullptr);
  }
  for (auto& slot : g_live) {
    if (const pid_t pg = slot.load(); pg > 0) ::kill(-pg, SIGKILL);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Tracks a started service (`live`) or forgets a stopped one; the handler is installed on the
// first, for each ending signal still at its default action (a caller's own handler is left alone).
void track(pid_t pid, bool live) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    // A forked child (a stage worker) does not own its parent's services.
    ::pthread_atfork(nullptr, nullptr, [] {
      for (auto& slot : g_live) slot.store(0);
    });
    for (const int sig : kEndingSignals) {
      struct sigaction old = {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction action = {};
      action.sa_handler = &stop_live_services;
      sigemptyset(&action.sa_mask);
      ::sigaction(sig, &action, nullptr);
    }
  });
  for (auto& slot : g_live) {
    pid_t expected = live ? 0 : pid;
    if (slot.compare_exchange_strong(expected, live ? pid : 0)) return;
  }
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// "exited with status 3", "was killed by signal 9 (Killed)"; `status` from waitpid, -1 when
// someone else reaped the process.
std::string how_it_ended(int status) {
  if (status == -1) return "exited";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "ended";
}

// Whether a process of group `pgid` is alive: zombies do not count (orphans are reaped by
// PID 1, which in a container may never do it). Linux: reads /proc/<pid>/stat.
bool group_alive(pid_t pgid) {
  if (kill(-pgid, 0) != 0 && errno == ESRCH) return false;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return true;
  bool alive = false;
  while (dirent* entry = readdir(proc)) {
    if (alive || entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream file(std::string("/proc/") + entry->d_name + "/stat");
    std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    alive = pgrp == pgid && state != 'Z' && state != 'X';
  }
  closedir(proc);
  return alive;
}

// The environment of the child: the harness's, with `extra` added or replacing.
std::vector<std::string> child_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    if (!extra.contains(std::string(text.substr(0, text.find('='))))) env.emplace_back(text);
  }
  for (const auto& [name, value] : extra) env.push_back(name + "=" + value);
  return env;
}

// In the forked child: a session and process group of its own, stdio redirected, default
// signal dispositions and an empty mask, no inherited descriptors but `report_fd` (close on
// exec), where an exec failure's errno goes; then /bin/sh -c command. Only async-signal-safe
// calls: the parent may have other threads.
[[noreturn]] void exec_child(const char* command, char** envp, int stdin_fd, int log_fd,
                             int report_fd) {
  setsid();
  dup2(stdin_fd, STDIN_FILENO);
  dup2(log_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  dup2(report_fd, 3);
  fcntl(3, F_SETFD, FD_CLOEXEC);
  if (close_range(4, ~0U, 0) != 0) {
    for (int fd = 4; fd < 65536; ++fd) close(fd);
  }
  struct sigaction action = {};
  action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  const char* argv[] = {"sh", "-c", command, nullptr};
  execve("/bin/sh", const_cast<char**>(argv), envp);
  int error = errno;
  ssize_t ignored = write(3, &error, sizeof(error));
  (void)ignored;
  _exit(127);
}

// Starts `spec.command` with its output appended to `spec.log_path`; returns once the child
// has called exec (so it leads its own process group). The pid, or -1 with `error` set.
pid_t spawn(const LaunchSpec& spec, std::string* error) {
  std::string log_path = spec.log_path.empty() ? "/dev/null" : spec.log_path;
  std::error_code ec;
  std::filesystem::path parent = std::filesystem::path(log_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  int log_fd = open(log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    *error = "cannot open the log " + log_path + ": " + std::strerror(errno);
    return -1;
  }
  int stdin_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int report[2] = {-1, -1};
  if (stdin_fd < 0 || pipe2(report, O_CLOEXEC) != 0) {
    *error = std::string("cannot set up the service's stdio: ") + std::strerror(errno);
    for (int fd : {log_fd, stdin_fd, report[0], report[1]}) {
      if (fd >= 0) close(fd);
    }
    return -1;
  }
  std::vector<std::string> env = child_environment(spec.env);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) exec_child(spec.command.c_str(), envp.data(), stdin_fd, log_fd, report[1]);
  int fork_errno = errno;
  close(log_fd);
  close(stdin_fd);
  close(report[1]);
  int exec_errno = 0;
  ssize_t got = 0;
  if (pid > 0) {
    while ((got = read(report[0], &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR) {
    }
  }
  close(report[0]);
  if (pid < 0) {
    *error = std::string("cannot fork: ") + std::strerror(fork_errno);
    return -1;
  }
  if (got == sizeof(exec_errno)) {
    waitpid(pid, nullptr, 0);
    *error = std::string("cannot run /bin/sh: ") + std::strerror(exec_errno);
    return -1;
  }
  return pid;
}

}  // namespace

ServiceProcess::~ServiceProcess() { stop(); }

bool ServiceProcess::reap() {
  if (reaped_) return true;
  int status = 0;
  pid_t got = waitpid(pid_, &status, WNOHANG);
  if (got == pid_ || (got < 0 && errno == ECHILD)) {
    reaped_ = true;
    exit_status_ = got == pid_ ? status : -1;
  }
  return reaped_;
}

bool ServiceProcess::start(const LaunchSpec& spec) {
  stop();
  spec_ = spec;
  error_.clear();
  startup_s_ = 0;
  external_ = false;
  Clock::time_point t0 = Clock::now();
  if (!spec.command.empty()) {
    pid_ = spawn(spec, &error_);
    reaped_ = false;
    if (pid_ < 0) return false;
    track(pid_, true);
  }

  ClientOptions options;
  options.base_url = spec.url;
  options.api_key = spec.api_key;
  options.retries = 0;
  Client client(options);
  while (true) {
    if (pid_ > 0 && reap()) {
      error_ = "the service " + how_it_ended(exit_status_) + " before it became healthy";
      // Its last line usually says why (harness serve: the InputError).
      std::string last = log_tail(1);
      while (!last.empty() && (last.back() == '\n' || last.back() == '\r')) last.pop_back();
      if (!last.empty())
        error_ += "; its log ends: " + (last.size() > 400 ? last.substr(0, 400) + "..." : last);
      stop();
      return false;
    }
    double left = spec.startup_timeout_s - since(t0);
    if (client.probe(spec.health, std::clamp(left, 0.05, 2.0))) {
      startup_s_ = since(t0);
      external_ = pid_ <= 0;
      return true;
    }
    left = spec.startup_timeout_s - since(t0);
    if (left <= 0) {
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%g", spec.startup_timeout_s);
      error_ =
          "not healthy after " + std::string(seconds) + " s (GET " + spec.url + spec.health + ")";
      stop();
      return false;
    }
    sleep_s(std::min(kHealthPollS, left));
  }
}

void ServiceProcess::stop() {
  external_ = false;
  if (pid_ <= 0) return;
  kill(-pid_, SIGTERM);
  Clock::time_point t0 = Clock::now();
  while (!(reap() && !group_alive(pid_)) && since(t0) < spec_.stop_grace_s) sleep_s(kStopPollS);
  if (!reaped_ || group_alive(pid_)) {
    kill(-pid_, SIGKILL);
    if (!reaped_) {
      int status = 0;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
      exit_status_ = status;
    }
    t0 = Clock::now();
    while (group_alive(pid_) && since(t0) < kKillWaitS) sleep_s(kStopPollS);
  }
  track(pid_, false);
  pid_ = -1;
}

bool ServiceProcess::running() {
  if (external_) return true;
  return pid_ > 0 && !reap();
}

std::string ServiceProcess::log_tail(int lines) const {
  if (spec_.command.empty() || spec_.log_path.empty() || lines <= 0) return "";
  std::ifstream file(spec_.log_path, std::ios::binary);
  if (!file) return "";
  constexpr std::streamoff kMaxRead = 64 << 10;
  file.seekg(0, std::ios::end);
  std::streamoff size = file.tellg();
  std::streamoff start = std::max<std::streamoff>(0, size - kMaxRead);
  file.seekg(start);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // Back from the end over `lines` line ends (a final newline ends the last line).
  size_t begin = text.size();
  if (begin > 0 && text[begin - 1] == '\n') --begin;
  for (int found = 0; begin > 0; --begin) {
    if (text[begin - 1] == '\n' && ++found == lines) break;
  }
  return text.substr(begin);
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace h0::service
