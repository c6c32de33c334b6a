// Runs the built `harness` binary; helpers shared by the command-line tests.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "test_util.h"

namespace h0::test {

struct Result {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs a shell command line from the source tree root: its exit code, stdout and stderr.
inline Result run_shell(const std::string& command) {
  TempDir dir;
  const std::string cmd = "cd " + source_path("") + " && " + command + " 2>" + dir.file("err");
  Result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(dir.file("err"));
  r.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  return r;
}

// Runs `harness ARGS` from the source tree root; `launcher` (e.g. "mpirun -np 2 ") goes before it.
inline Result run_harness(const std::string& args, const std::string& launcher = "") {
  return run_shell(launcher + std::string(H0_HARNESS_BIN) + " " + args);
}

// `harness day0 --json`'s stages by id.
inline std::map<std::string, nlohmann::json> stages_of(const std::string& json_text) {
  std::map<std::string, nlohmann::json> out;
  const auto j = nlohmann::json::parse(json_text);
  for (const auto& s : j["stages"]) out[s["id"].get<std::string>()] = s;
  return out;
}

// day0 --json's stages (all 17 of them, 18 for a model with the accuracy stage), each expected to
// pass or not to apply (status not_applicable, its summary saying why: never "pass"); the stages
// for further checks.
inline std::map<std::string, nlohmann::json> expect_every_stage_passes(const std::string& json_text,
                                                                       size_t count = 17) {
  auto stages = stages_of(json_text);
  EXPECT_EQ(stages.size(), count);
  for (const auto& [id, s] : stages) {
    if (s["status"] == "not_applicable") {  // never "pass", and it says why
      EXPECT_EQ(s["summary"].get<std::string>().rfind("not applicable: ", 0), 0u) << id;
    } else {
      EXPECT_EQ(s["status"], "pass") << id << ": " << s["summary"];
    }
  }
  return stages;
}

// A model directory in `dir` holding only `config` (a path in the source tree) as config.json.
inline std::string config_only_model(const TempDir& dir, const std::string& config,
                                     const std::string& name) {
  std::filesystem::create_directories(dir.file(name));
  std::filesystem::copy_file(source_path(config), dir.file(name + "/config.json"));
  return dir.file(name);
}

// tiny-llama under another name, so no shipped golden is its: the model in dir/my-llama, and
// its dump_hf.py (probes, logits) and gen_e2e.py (served answers) goldens in dir/goldens.
inline void copy_tiny_llama_without_shipped_goldens(const TempDir& dir) {
  std::filesystem::copy(source_path("configs/models/tiny-llama"), dir.file("my-llama"));
  std::filesystem::copy(source_path("golden/models/tiny-llama"), dir.file("goldens"));
  for (const auto& e : std::filesystem::directory_iterator(source_path("golden/e2e/tiny-llama")))
    std::filesystem::copy(e.path(), dir.file("goldens/" + e.path().filename().string()),
                          std::filesystem::copy_options::recursive);  // long/: the long stage's
}

}  // namespace h0::test
