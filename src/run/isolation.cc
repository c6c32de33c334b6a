#include "run/isolation.h"

#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "base/check.h"
#include "base/text_format.h"

namespace h0::run {
namespace {

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool send_message(int fd, const std::string& m) {
  const uint64_t n = m.size();
  return write_all(fd, &n, sizeof n) && write_all(fd, m.data(), m.size());
}

bool receive_message(int fd, std::string* m) {
  uint64_t n = 0;
  if (!read_all(fd, &n, sizeof n)) return false;
  m->resize(n);
  return read_all(fd, m->data(), n);
}

// Waits until `fd` is readable or the deadline passes. False on timeout.
bool wait_readable(int fd, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return true;  // let the read report the error
  }
}

// Timings in the worker should not depend on the allocator's history: with glibc's defaults a
// buffer of 128 KiB or more is mmap'd (and page-faulted) or not depending on what was freed
// before, which moves an allocating kernel's time by tens of percent between processes. Keep
// every allocation on the heap and never give memory back.
void stable_allocator() {
  ::mallopt(M_MMAP_THRESHOLD, 1 << 30);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ::mallopt(M_TOP_PAD, 64 << 20);
}

}  // namespace

Worker::Worker(Serve serve) {
  ::signal(SIGPIPE, SIG_IGN);  // a dead worker must not kill the harness on write
  int down[2], up[2];
  H0_CHECK(::pipe(down) == 0 && ::pipe(up) == 0) << std::strerror(errno);
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  H0_CHECK(pid_ >= 0) << "fork: " << std::strerror(errno);
  if (pid_ == 0) {
    // The worker ends with the harness (a SIGTERM to it, a crash): SIGTERM when it dies, so the
    // services a stage started are stopped (service/launcher.cc) rather than left running.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(0);
    ::close(down[1]);
    ::close(up[0]);
    stable_allocator();
    std::string request;
    while (receive_message(down[0], &request)) {
      if (!send_message(up[1], serve(request))) break;
    }
    std::fflush(nullptr);
    ::_exit(0);
  }
  ::close(down[0]);
  ::close(up[1]);
  to_child_ = down[1];
  from_child_ = up[0];
}

Worker::~Worker() {
  if (pid_ > 0) {
    ::close(to_child_);  // the worker's loop ends on EOF
    to_child_ = -1;
    std::string ignored;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      ::usleep(1000);
    }
    pid_ = -1;
  }
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
}

void Worker::reap(std::string* why, bool kill_first) {
  if (kill_first) ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  if (!kill_first && why != nullptr) {
    if (WIFSIGNALED(status)) {
      *why = std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
             ::strsignal(WTERMSIG(status)) + ")";
    } else if (WIFEXITED(status)) {
      *why = "exited with status " + std::to_string(WEXITSTATUS(status));
    }
  }
  ::close(to_child_);
  ::close(from_child_);
  to_child_ = from_child_ = -1;
  pid_ = -1;
}

Worker::Reply Worker::call(const std::string& request, double timeout_s, std::string* response,
                           std::string* why) {
  H0_CHECK(pid_ > 0) << "call on a dead worker";
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  if (!send_message(to_child_, request)) {
    reap(why, false);
    return Reply::kCrashed;
  }
  if (!wait_readable(from_child_, deadline)) {
    *why = "no answer within " + printf_string("%g", timeout_s) + " s; killed";
    reap(nullptr, true);
    return Reply::kTimedOut;
  }
  if (!receive_message(from_child_, response)) {
    reap(why, false);
    return Reply::kCrashed;
  }
  return Reply::kOk;
}

}  // namespace h0::run
