// The malformed inputs of the black-box probe (../shared/reproducers/README.md), each through the
// commands it broke: exit 2 with the problem named, within 2 s of CPU time and 200 MB of peak
// memory (measured: the child's rusage), never a signal, a hang or an "internal error". The small
// inputs are copied under tests/data/reproducers/; the three 200 KB deep-JSON ones are rebuilt
// here, byte for byte the reproducers' shape (checked against ../shared when it is there).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace h0::test {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int code = -1;        // exit code; -1 when a signal ended it
  int signal = 0;       // the signal that ended it, or 0
  double cpu_s = 0;     // user + system
  double peak_mb = 0;   // ru_maxrss
  bool killed = false;  // still running after 20 s
  std::string err;
};

// `harness args...` from the source root, stdout and stderr to files, waited for with wait4.
Outcome run_measured(const std::vector<std::string>& args) {
  TempDir dir;
  const std::string out_file = dir.file("out"), err_file = dir.file("err");
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(source_path("").c_str()) != 0) ::_exit(126);
    const int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    std::vector<std::string> argv_s = {H0_HARNESS_BIN};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  Outcome o;
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  struct rusage ru {};
  for (;;) {
    const pid_t done = ::wait4(pid, &status, WNOHANG, &ru);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(20) && !o.killed) {
      ::kill(pid, SIGKILL);
      o.killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  o.cpu_s = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
            double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  o.peak_mb = double(ru.ru_maxrss) / 1024.0;
  o.err = read_file(err_file);
  return o;
}

// The deep-JSON inputs, as the probe wrote them: a 1 inside 100,000 levels of [ ].
std::string deep(size_t levels = 100000) {
  return std::string(levels, '[') + "1" + std::string(levels, ']');
}

std::string safetensors_of(const std::string& header) {
  std::string padded = header;
  while ((8 + padded.size()) % 8 != 0) padded += ' ';
  std::string out(8, '\0');
  uint64_t n = padded.size();
  for (int i = 0; i < 8; ++i) out[i] = char((n >> (8 * i)) & 0xff);
  return out + padded + std::string(1, '\0');
}

class Reproducers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    write(dir_->file("deep_shape.safetensors"),
          safetensors_of("{\"t\":{\"dtype\":\"U8\",\"shape\":" + deep() +
                         ",\"data_offsets\":[0,1]}}"));
    write(dir_->file("deep_metadata_100k.safetensors"),
          safetensors_of("{\"__metadata__\":{\"x\":" + deep() +
                         "},\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}"));
    // cfg_deep_bias: the llama config of cfg_layers_2e31 with a sane layer count and a 100k-deep
    // attention_bias (a field whose error message echoes the value).
    std::string config =
        read_file(source_path("tests/data/reproducers/cfg_layers_2e31/config.json"));
    replace(config, "2147483647", "2");
    replace(config, "\"attention_bias\": false", "\"attention_bias\": " + deep());
    fs::create_directories(dir_->file("cfg_deep_bias"));
    write(dir_->file("cfg_deep_bias/config.json"), config);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  static void replace(std::string& s, const std::string& from, const std::string& to) {
    const size_t at = s.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    s.replace(at, from.size(), to);
  }
  static std::string built(const std::string& name) { return dir_->file(name); }
  static std::string copied(const std::string& name) {
    return source_path("tests/data/reproducers/" + name);
  }

  // Runs `args` and expects the clean refusal: exit 2, `named` in stderr, no "internal error",
  // bounded CPU and memory.
  static void expect_clean_refusal(const std::vector<std::string>& args, const std::string& named) {
    std::string line;
    for (const auto& a : args) line += a.substr(0, 120) + " ";
    const Outcome o = run_measured(args);
    EXPECT_FALSE(o.killed) << line << ": still running after 20 s";
    EXPECT_EQ(o.signal, 0) << line << ": ended by signal " << o.signal;
    EXPECT_EQ(o.code, 2) << line << "\n" << o.err.substr(0, 2000);
    EXPECT_NE(o.err.find(named), std::string::npos) << line << "\n" << o.err.substr(0, 2000);
    EXPECT_EQ(o.err.find("internal error"), std::string::npos) << line << "\n"
                                                               << o.err.substr(0, 2000);
    EXPECT_LT(o.cpu_s, 2.0) << line;
    EXPECT_LT(o.peak_mb, 200.0) << line;
  }

  static TempDir* dir_;
};
TempDir* Reproducers::dir_ = nullptr;

TEST_F(Reproducers, TheRebuiltDeepInputsAreTheProbesOwn) {
  const fs::path shared = source_path("../shared/reproducers");
  if (!fs::exists(shared / "deep_shape.safetensors"))
    GTEST_SKIP() << "no ../shared/reproducers here";
  for (const char* f :
       {"deep_shape.safetensors", "deep_metadata_100k.safetensors", "cfg_deep_bias/config.json"}) {
    // Compared as a flag: the 200 KB texts are not worth printing.
    EXPECT_TRUE(read_file(built(f)) == read_file((shared / f).string()))
        << f << " differs from the probe's";
  }
}

TEST_F(Reproducers, DeepSafetensorsHeaders) {
  for (const char* f : {"deep_shape.safetensors", "deep_metadata_100k.safetensors"}) {
    expect_clean_refusal({"inspect", built(f)}, "nested deeper than 256");
    expect_clean_refusal({"compare", built(f), built(f)}, "nested deeper than 256");
  }
}

TEST_F(Reproducers, DeepConfigValue) {
  expect_clean_refusal({"model", "info", "--model", built("cfg_deep_bias")},
                       "nested deeper than 256");
  expect_clean_refusal(
      {"day0", "--model", built("cfg_deep_bias"), "--dry-run", "--no-db", "--no-report"},
      "nested deeper than 256");
}

TEST_F(Reproducers, BillionsOfLayers) {
  expect_clean_refusal({"model", "info", "--model", copied("cfg_layers_2e31")},
                       "num_hidden_layers");
}

TEST_F(Reproducers, AliasBombInAMatrixAxis) {
  const std::string f = copied("suite_alias_bomb_matrix.yaml");
  expect_clean_refusal({"list", f}, "expands to more than 1000000 nodes");
  expect_clean_refusal({"run", f, "--no-db", "-q"}, "expands to more than 1000000 nodes");
}

TEST_F(Reproducers, ToleranceNullOrAMap) {
  for (const char* f : {"suite_tolerance_preset_null.yaml", "suite_tolerance_preset_map.yaml"}) {
    expect_clean_refusal({"run", copied(f), "--no-db", "-q"}, "preset");
  }
}

TEST_F(Reproducers, AGoldenNameOver255Bytes) {
  expect_clean_refusal({"run", copied("suite_long_golden.yaml"), "--no-db", "-q"}, "255");
}

TEST_F(Reproducers, InvalidUtf8InSuitesAndPlatforms) {
  for (const char* f : {"suite_badutf8_id.yaml", "suite_badutf8_dtype.yaml"}) {
    expect_clean_refusal({"list", copied(f), "--json"}, "invalid UTF-8");
    expect_clean_refusal({"run", copied(f), "--no-db", "-q"}, "invalid UTF-8");
  }
  expect_clean_refusal({"run", "suites/ops.yaml", "--no-db", "-q", "--platform",
                        copied("platform_badutf8_backend_ff.yaml")},
                       "invalid UTF-8");
}

// A YAML alias inside its own anchor is a node that contains itself (found by the fuzz target:
// a stack overflow before); a FIFO or a device as an input is refused, never waited on.
TEST_F(Reproducers, SelfContainingAliasesAndFifos) {
  write(built("cycle.yaml"), "suite: s\nchecks: &x [*x]\n");
  expect_clean_refusal({"list", built("cycle.yaml")}, "nested deeper than 256 levels");
  ASSERT_EQ(::mkfifo(built("golden.fifo").c_str(), 0600), 0);
  expect_clean_refusal({"inspect", built("golden.fifo")}, "not a regular file (a FIFO)");
  expect_clean_refusal({"list", built("golden.fifo")}, "golden.fifo");
  expect_clean_refusal({"inspect", "/dev/zero"}, "not a regular file (a character device)");
  fs::create_directories(built("fifo-model"));
  ASSERT_EQ(::mkfifo(built("fifo-model/config.json").c_str(), 0600), 0);
  expect_clean_refusal({"model", "info", "--model", built("fifo-model")},
                       "not a regular file (a FIFO)");
}

}  // namespace
}  // namespace h0::test
