// The launcher starting, waiting for and stopping the fake server (and plain shell commands).
#include "service/launcher.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "service/client.h"
#include "test_util.h"

namespace h0::service {
namespace {

using Clock = std::chrono::steady_clock;

using test::read_file;
using test::since;

// Whether a process other than a zombie is in process group `pgid`, by /proc/*/stat.
bool group_alive(pid_t pgid) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::string stat = read_file(entry.path() / "stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 1));
    char state = 0;
    long ppid = 0, pgrp = 0;
    if ((fields >> state >> ppid >> pgrp) && pgrp == pgid && state != 'Z' && state != 'X') {
      return true;
    }
  }
  return false;
}

// A spec that runs the fake server on a free port in `mode`, `before` put in front of it.
LaunchSpec fake_spec(const test::TempDir& dir, const std::string& mode,
                     const std::string& before = "", const std::string& flags = "") {
  LaunchSpec spec;
  int port = free_port();
  spec.url = "http://127.0.0.1:" + std::to_string(port);
  spec.health = "/health";
  spec.env = {{"H0_FAKE_BIN", H0_FAKE_SERVER}};
  spec.command =
      before + "exec \"$H0_FAKE_BIN\" --port " + std::to_string(port) + " --mode " + mode + flags;
  spec.log_path = dir.file("logs/service.log");
  spec.startup_timeout_s = 5;
  spec.stop_grace_s = 2;
  return spec;
}

TEST(Launcher, StartsWithEnvironmentAndWaitsUntilReady) {
  test::TempDir dir;
  LaunchSpec spec = fake_spec(dir, "ok", "echo \"marker=$H0_MARK\"; ", " --ready-after 0.5");
  spec.env["H0_MARK"] = "day0";
  ServiceProcess service;
  ASSERT_TRUE(service.start(spec)) << service.error() << "\n" << service.log_tail();
  EXPECT_GE(service.startup_s(), 0.5);
  EXPECT_LT(service.startup_s(), 3);
  EXPECT_TRUE(service.running());
  ClientOptions options;
  options.base_url = spec.url;
  EXPECT_TRUE(Client(options).probe("/v1/models", 1));
  std::string log = read_file(spec.log_path);
  EXPECT_NE(log.find("marker=day0"), std::string::npos) << log;
  EXPECT_NE(log.find("listening on 127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("GET /health"), std::string::npos) << log;
  pid_t pgid = service.pid();
  Clock::time_point t0 = Clock::now();
  service.stop();
  EXPECT_LT(since(t0), 1);  // SIGTERM is enough
  EXPECT_FALSE(service.running());
  EXPECT_FALSE(group_alive(pgid));
  service.stop();  // idempotent
}

TEST(Launcher, NeverHealthyTimesOut) {
  test::TempDir dir;
  LaunchSpec spec = fake_spec(dir, "never_healthy");
  spec.startup_timeout_s = 1;
  ServiceProcess service;
  Clock::time_point t0 = Clock::now();
  EXPECT_FALSE(service.start(spec));
  EXPECT_LT(since(t0), 1.6);
  EXPECT_GE(since(t0), 1);
  EXPECT_NE(service.error().find("not healthy after 1 s"), std::string::npos) << service.error();
  EXPECT_FALSE(service.running());
}

TEST(Launcher, ProcessExitingEarlyIsReportedWithItsLog) {
  test::TempDir dir;
  LaunchSpec spec = fake_spec(dir, "never_healthy", "", " --exit-after-start");
  ServiceProcess service;
  Clock::time_point t0 = Clock::now();
  EXPECT_FALSE(service.start(spec));
  EXPECT_LT(since(t0), 1.5);
  EXPECT_NE(service.error().find(
                "the service exited with status 3 before it became healthy; its log ends: "),
            std::string::npos)
      << service.error();
  EXPECT_NE(service.error().find("exiting with status 3"), std::string::npos)
      << service.error();  // why, from its log
  EXPECT_NE(service.log_tail(1).find("exiting with status 3"), std::string::npos)
      << service.log_tail();
  EXPECT_EQ(service.log_tail(1).find("listening"), std::string::npos) << service.log_tail(1);
}

TEST(Launcher, StopKillsAGroupThatIgnoresSigterm) {
  test::TempDir dir;
  // The shell, the background sleep and the server all ignore SIGTERM.
  LaunchSpec spec = fake_spec(dir, "ok", "trap '' TERM; sleep 60 & ");
  spec.stop_grace_s = 0.5;
  ServiceProcess service;
  ASSERT_TRUE(service.start(spec)) << service.error() << "\n" << service.log_tail();
  pid_t pgid = service.pid();
  EXPECT_TRUE(group_alive(pgid));
  Clock::time_point t0 = Clock::now();
  service.stop();
  EXPECT_GE(since(t0), 0.5);
  EXPECT_LT(since(t0), 2.5);
  EXPECT_FALSE(group_alive(pgid));
}

TEST(Launcher, StopKillsChildrenOfTheService) {
  test::TempDir dir;
  LaunchSpec spec = fake_spec(dir, "ok", "sleep 60 & ");
  pid_t pgid = -1;
  {
    ServiceProcess service;
    ASSERT_TRUE(service.start(spec)) << service.error() << "\n" << service.log_tail();
    pgid = service.pid();
  }  // the destructor stops it
  EXPECT_FALSE(group_alive(pgid));
}

TEST(Launcher, ExternalServiceIsOnlyProbed) {
  test::TempDir dir;
  ServiceProcess fake;
  ASSERT_TRUE(fake.start(fake_spec(dir, "ok"))) << fake.error();
  LaunchSpec spec;
  spec.url = fake.spec().url;
  spec.startup_timeout_s = 2;
  ServiceProcess external;
  ASSERT_TRUE(external.start(spec)) << external.error();  // the default health: /v1/models
  EXPECT_TRUE(external.running());
  EXPECT_EQ(external.pid(), -1);
  EXPECT_EQ(external.log_tail(), "");
  external.stop();
  EXPECT_TRUE(fake.running());
  ClientOptions options;
  options.base_url = spec.url;
  EXPECT_TRUE(Client(options).probe("/health", 1));

  spec.url = "http://127.0.0.1:" + std::to_string(free_port());  // nothing there
  spec.startup_timeout_s = 0.5;
  EXPECT_FALSE(external.start(spec));
  EXPECT_NE(external.error().find("not healthy after 0.5 s"), std::string::npos)
      << external.error();
}

TEST(Launcher, LogTail) {
  test::TempDir dir;
  LaunchSpec spec;
  spec.command = "printf 'one\\ntwo\\nthree\\n'; exit 1";
  spec.url = "http://127.0.0.1:" + std::to_string(free_port());
  spec.log_path = dir.file("tail.log");
  ServiceProcess service;
  EXPECT_FALSE(service.start(spec));
  EXPECT_NE(service.error().find("exited with status 1"), std::string::npos) << service.error();
  EXPECT_EQ(service.log_tail(2), "two\nthree\n");
  EXPECT_EQ(service.log_tail(1), "three\n");
  EXPECT_EQ(service.log_tail(10), "one\ntwo\nthree\n");
}

TEST(Launcher, FreePortCanBeBound) {
  int port = free_port();
  ASSERT_GT(port, 0);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(uint16_t(port));
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  close(fd);
}

}  // namespace
}  // namespace h0::service
