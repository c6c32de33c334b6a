// The name map of dump comparisons: golden names and prefixes to actual names, read through the
// suite module's YAML helpers (errors at file:line:col, repeated keys refused).
#include "compare/dump_compare.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "base/error.h"
#include "test_util.h"

namespace h0::compare {
namespace {

std::string write(const test::TempDir& dir, const std::string& text) {
  const std::string path = dir.file("map.yaml");
  std::ofstream(path) << text;
  return path;
}

// The InputError text of load_name_map(path); "" if it did not throw.
std::string error_of(const std::string& path) {
  try {
    load_name_map(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(NameMap, NamesAndPrefixes) {
  test::TempDir dir;
  const NameMap m =
      load_name_map(write(dir, "names:\n  lm_head: output\nprefixes:\n  model.layers.: blk.\n"));
  EXPECT_EQ(m.map("lm_head"), "output");
  EXPECT_EQ(m.map("model.layers.3.mlp"), "blk.3.mlp");
  EXPECT_EQ(m.map("other"), "other");
}

TEST(NameMap, ErrorsNameTheirPlace) {
  test::TempDir dir;
  const std::string syntax = error_of(write(dir, "names:\n  a: [b\n"));
  EXPECT_NE(syntax.find("map.yaml:"), std::string::npos) << syntax;
  EXPECT_NE(syntax.find("YAML syntax error"), std::string::npos) << syntax;
  const std::string repeated = error_of(write(dir, "names:\n  a: b\n  a: c\n"));
  EXPECT_NE(repeated.find("map.yaml:3:"), std::string::npos) << repeated;
  const std::string unknown = error_of(write(dir, "names: {}\nrenames: {}\n"));
  EXPECT_NE(unknown.find("map.yaml:2:1"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown key 'renames'"), std::string::npos) << unknown;
  EXPECT_NE(error_of(dir.file("absent.yaml")).find("name map not found"), std::string::npos);
}

}  // namespace
}  // namespace h0::compare
