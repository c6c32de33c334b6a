#include "base/scratch_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>

#include "base/error.h"

namespace h0::base {
namespace fs = std::filesystem;
namespace {

constexpr int kSlots = 8;
constexpr size_t kPathMax = 4096;

// The directories the handler removes: fixed storage, written before `live` is set.
// `owner`: the process that made it (a forked child inherits the table, not the directories).
struct Slot {
  char path[kPathMax];
  std::atomic<pid_t> owner{0};
  std::atomic<bool> live{false};
};
std::array<Slot, kSlots> g_slots;
std::mutex g_mu;  // taking and freeing slots (never in the handler)

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_previous[NSIG];

// Removes the contents of the directory `dirfd` (closed here), then nothing else: unlinkat and
// getdents64 only, so it may run in a signal handler. `depth` bounds the recursion.
void remove_contents(int dirfd, int depth) {
  alignas(8) char buf[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dirfd, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      struct Entry {
        uint64_t ino;
        int64_t off;
        unsigned short reclen;
        unsigned char type;
        char name[1];
      };
      const auto* e = reinterpret_cast<const Entry*>(buf + off);
      off += e->reclen;
      if (std::strcmp(e->name, ".") == 0 || std::strcmp(e->name, "..") == 0) continue;
      if (::unlinkat(dirfd, e->name, 0) == 0) continue;
      if (depth > 0) {
        const int sub = ::openat(dirfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) remove_contents(sub, depth - 1);
      }
      ::unlinkat(dirfd, e->name, AT_REMOVEDIR);
    }
  }
  ::close(dirfd);
}

void remove_tree_signal_safe(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) remove_contents(fd, 8);
  ::rmdir(path);
}

void on_fatal_signal(int sig) {
  const pid_t self = ::getpid();
  for (Slot& s : g_slots) {
    if (s.owner.load() == self && s.live.exchange(false)) remove_tree_signal_safe(s.path);
  }
  // The previous disposition (default, or a handler installed before ours), then again.
  ::sigaction(sig, &g_previous[sig], nullptr);
  ::raise(sig);
}

void install_handlers_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    for (int sig : kSignals) {
      struct sigaction old {};
      ::sigaction(sig, nullptr, &old);
      if (old.sa_handler == SIG_IGN) continue;  // ignored stays ignored (nohup)
      g_previous[sig] = old;
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

// Removes <parent>/<prefix>-<pid> directories whose pid is no process now.
void remove_stale(const fs::path& parent, const std::string& prefix) {
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix + "-", 0) != 0) continue;
    const std::string digits = name.substr(prefix.size() + 1);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const pid_t pid = static_cast<pid_t>(std::atol(digits.c_str()));
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
  }
}

}  // namespace

ScratchDir::ScratchDir(const std::string& prefix) {
  std::error_code ec;
  fs::path parent = fs::temp_directory_path(ec);
  if (ec) parent = "/tmp";
  remove_stale(parent, prefix);
  path_ = (parent / (prefix + "-" + std::to_string(::getpid()))).string();
  fs::create_directories(path_, ec);
  if (ec) throw InputError(path_, "cannot create the scratch directory: " + ec.message());
  if (path_.size() >= kPathMax) return;  // kept by the destructor only
  install_handlers_once();
  std::lock_guard<std::mutex> lock(g_mu);
  for (int i = 0; i < kSlots; ++i) {
    if (g_slots[i].live.load()) continue;
    std::memcpy(g_slots[i].path, path_.c_str(), path_.size() + 1);
    g_slots[i].owner.store(::getpid());
    g_slots[i].live.store(true);
    slot_ = i;
    break;
  }
}

ScratchDir::~ScratchDir() {
  if (slot_ >= 0) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_slots[slot_].live.store(false);
  }
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace h0::base
