// The module map as a test: every folder of src/ has a layer, and no file includes a header of a
// module in a higher layer (a module may use its own layer and the ones below). The one pair that
// shares a layer both ways is backend/ and backends/: the registry names the built-in backends,
// which implement the plugin ABI backend/ declares.
//
// The layers are the include graph as it is (acyclic apart from that pair). compare/ sits above
// the modules whose outputs it compares (io's dumps, service's answers, the tokenizer's text);
// run/ (the runner, its records and listeners) above everything a run reads or writes.
//
// model/ is split by job, each folder a module of its own: config/ (config.json read into an
// Architecture, tensor names, the family files) below weights/ (the checkpoint's tensors) below
// vision/ (images and their index arithmetic) below exec/ (the executor and what it runs) below
// blocks/ (one file per block, all of its parts: the hubs below reach it through config/block.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace h0 {
namespace {

namespace fs = std::filesystem;

// Lowest first; modules in one string share a layer.
const std::vector<std::vector<std::string>> kLayers = {
    {"base"},          {"tensor"},       {"ops"},        {"backend", "backends"},
    {"store"},         {"io"},           {"mesh"},       {"model/config"},
    {"model/weights"}, {"model/vision"}, {"model/exec"}, {"model/blocks"},
    {"tokenizer"},     {"service"},      {"suite"},      {"compare"},
    {"diff"},          {"eval"},         {"plan"},       {"checks"},
    {"report"},        {"run"},          {"day0"},
};

// The folders of src/ split into modules of their own (their subfolders are the modules).
const std::vector<std::string> kSplit = {"model"};

bool is_split(const std::string& m) {
  return std::find(kSplit.begin(), kSplit.end(), m) != kSplit.end();
}

// A file's module: its first folder under src/, or the first two for a split folder.
std::string module_of(const fs::path& rel) {
  auto it = rel.begin();
  std::string m = it->string();
  if (is_split(m) && ++it != rel.end()) m.append("/").append(it->string());
  return m;
}

std::map<std::string, int> layer_of() {
  std::map<std::string, int> out;
  for (size_t i = 0; i < kLayers.size(); ++i)
    for (const auto& m : kLayers[i]) out[m] = int(i);
  return out;
}

TEST(IncludeGraph, EveryModuleHasALayer) {
  const auto layers = layer_of();
  for (const auto& e : fs::directory_iterator(test::source_path("src"))) {
    if (!e.is_directory()) continue;
    const std::string m = e.path().filename().string();
    if (is_split(m)) {
      for (const auto& sub : fs::directory_iterator(e.path())) {
        const std::string s = std::string(m).append("/").append(sub.path().filename().string());
        if (sub.is_directory()) {
          EXPECT_TRUE(layers.contains(s)) << "src/" << s << "/ has no layer in " << __FILE__;
        } else {
          ADD_FAILURE() << "src/" << s << ": src/" << m << "/ holds only its modules' folders";
        }
      }
      continue;
    }
    EXPECT_TRUE(layers.contains(m)) << "src/" << m << "/ has no layer in " << __FILE__;
  }
}

TEST(IncludeGraph, NoModuleIncludesAHigherOne) {
  const auto layers = layer_of();
  // The first folder of the included path, and the second (a split folder's module).
  const std::regex include("#include\\s+\"([a-z_0-9]+)/(?:([a-z_0-9]+)/)?[^\"]+\"");
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(test::source_path("src"))) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".cc" && ext != ".h" && ext != ".cu" && ext != ".inc") continue;
    const fs::path rel = fs::relative(e.path(), test::source_path("src"));
    const std::string module = module_of(rel);
    if (!layers.contains(module)) continue;  // EveryModuleHasALayer names it
    ++files;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), include), end; it != end; ++it) {
      std::string target = (*it)[1].str();
      if (is_split(target)) target.append("/").append((*it)[2].str());
      const auto t = layers.find(target);
      if (t == layers.end()) continue;  // not a module: a generated or system header
      EXPECT_LE(t->second, layers.at(module))
          << "src/" << rel.string() << " includes " << (*it)[0].str() << ": " << module
          << " may not use the higher module " << target;
    }
  }
  EXPECT_GT(files, 300u);  // the scan saw the tree
}

}  // namespace
}  // namespace h0
