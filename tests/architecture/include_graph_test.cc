// The module map as a test: every folder of src/ has a layer, and no file includes a header of a
// module in a higher layer (a module may use its own layer and the ones below). The one pair that
// shares a layer both ways is backend/ and backends/: the registry names the built-in backends,
// which implement the plugin ABI backend/ declares.
//
// The layers are the include graph as it is (acyclic apart from that pair). compare/ sits above
// the modules whose outputs it compares (io's dumps, service's answers, the tokenizer's text);
// run/ (the runner, its records and listeners) above everything a run reads or writes.
#include <gtest/gtest.h>

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
    {"base"},      {"tensor"},  {"ops"},   {"backend", "backends"},
    {"store"},     {"io"},      {"mesh"},  {"model"},
    {"tokenizer"}, {"service"}, {"suite"}, {"compare"},
    {"diff"},      {"eval"},    {"plan"},  {"checks"},
    {"report"},    {"run"},     {"day0"},
};

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
    EXPECT_TRUE(layers.contains(m)) << "src/" << m << "/ has no layer in " << __FILE__;
  }
}

TEST(IncludeGraph, NoModuleIncludesAHigherOne) {
  const auto layers = layer_of();
  const std::regex include("#include\\s+\"([a-z_0-9]+)/[^\"]+\"");
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(test::source_path("src"))) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".cc" && ext != ".h" && ext != ".cu" && ext != ".inc") continue;
    const fs::path rel = fs::relative(e.path(), test::source_path("src"));
    const std::string module = rel.begin()->string();
    if (!layers.contains(module)) continue;  // EveryModuleHasALayer names it
    ++files;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::sregex_iterator it(s.begin(), s.end(), include), end; it != end; ++it) {
      const std::string target = (*it)[1].str();
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
