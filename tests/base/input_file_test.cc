// Users' files opened without waiting on them, and scratch directories that do not outlive the
// process, even one ended by a signal.
#include "base/input_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/json_read.h"
#include "base/scratch_dir.h"
#include "test_util.h"

namespace h0::base {
namespace {

namespace fs = std::filesystem;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.where() + ": " + e.message();
  }
  return "";
}

TEST(InputFile, AFifoOrADeviceIsRefusedWithoutWaiting) {
  test::TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("pipe").c_str(), 0600), 0);
  // No writer ever opens the FIFO: a blocking open would wait here forever.
  EXPECT_NE(message_of([&] {
              (void)read_regular_file(dir.file("pipe"));
            }).find("not a regular file (a FIFO)"),
            std::string::npos);
  EXPECT_NE(message_of([&] { (void)read_regular_file("/dev/null"); }).find("(a character device)"),
            std::string::npos);
  EXPECT_NE(message_of([&] { (void)read_regular_file(dir.path()); }).find("(a directory)"),
            std::string::npos);
  EXPECT_NE(message_of([&] { (void)read_regular_file(dir.file("absent")); }).find("cannot open"),
            std::string::npos);
  std::ofstream(dir.file("small")) << "0123456789";
  EXPECT_EQ(read_regular_file(dir.file("small")), "0123456789");
  EXPECT_NE(message_of([&] { (void)read_regular_file(dir.file("small"), 4); }).find("at most 4"),
            std::string::npos);
}

TEST(JsonRead, NestingPastTheLimitIsAnInputErrorNotACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(message_of([&] {
              (void)parse_json(deep, "x.json");
            }).find("x.json: JSON nested deeper than 256"),
            std::string::npos);
  EXPECT_TRUE(parse_json_or_discarded(deep).is_discarded());
  EXPECT_EQ(parse_json(std::string(256, '[') + std::string(256, ']'), "ok.json").size(), 1u);
  EXPECT_NE(message_of([&] { (void)parse_json("{", "y.json"); }).find("y.json: not JSON"),
            std::string::npos);
}

// The child makes a scratch directory, fills it, and dies by `sig`; the directory must be gone
// and the child must still have died by that signal (the handler re-raises it).
void expect_removed_when_killed_by(int sig) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ScratchDir scratch("h0-test-scratch");
    fs::create_directories(scratch.path() + "/sub/deeper");
    std::ofstream(scratch.path() + "/sub/deeper/file") << "x";
    std::ofstream(scratch.path() + "/top") << "y";
    if (::write(ready[1], "r", 1) != 1) ::_exit(3);
    if (sig == SIGSEGV) {
      volatile int* null = nullptr;
      *null = 1;  // a real crash, not a sent signal
    }
    ::pause();
    ::_exit(4);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const std::string path =
      (fs::temp_directory_path() / ("h0-test-scratch-" + std::to_string(pid))).string();
  if (sig != SIGSEGV) {
    ASSERT_TRUE(fs::exists(path));
    ::kill(pid, sig);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "signal " << sig;
  EXPECT_EQ(WTERMSIG(status), sig);
  EXPECT_FALSE(fs::exists(path)) << path << " outlived signal " << sig;
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST(ScratchDir, RemovedAtEveryExit) {
  std::string path;
  {
    ScratchDir scratch("h0-test-scratch");
    path = scratch.path();
    EXPECT_TRUE(fs::is_directory(path));
  }
  EXPECT_FALSE(fs::exists(path));
  for (int sig : {SIGTERM, SIGINT, SIGSEGV}) expect_removed_when_killed_by(sig);
}

TEST(ScratchDir, ALeftoverOfAGoneProcessIsRemoved) {
  // A pid that is no process: a child that has exited and been reaped.
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  const fs::path stale = fs::temp_directory_path() / ("h0-test-scratch-" + std::to_string(pid));
  fs::create_directories(stale / "x");
  const fs::path alive =
      fs::temp_directory_path() / ("h0-test-scratch-" + std::to_string(::getppid()));
  fs::create_directories(alive);
  {
    ScratchDir scratch("h0-test-scratch");
    EXPECT_FALSE(fs::exists(stale));
    EXPECT_TRUE(fs::exists(alive)) << "the directory of a live process was removed";
  }
  fs::remove_all(alive);
}

}  // namespace
}  // namespace h0::base
