// Shared by the suite tests: the kinds they register, and a fixture that writes YAML files into
// a temporary directory and strips that directory from error messages.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "suite/suite.h"
#include "test_util.h"

namespace h0::suite {

// The kinds every suite test file registers, identically, so messages that list the
// registered kinds do not depend on which test ran first.
inline void register_test_kinds() {
  register_kind({"op", {"op", "attrs", "inputs", "golden", "reference"}});
  register_kind({"layer", {"model", "layer", "golden"}});
}

class SuiteFixture : public ::testing::Test {
 protected:
  void SetUp() override { register_test_kinds(); }

  // Writes `text` to `name` under the temporary directory; returns its path.
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_.file(name);
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << text;
    return path;
  }

  // `message` with the temporary directory's path cut out ("/tmp/x/s.yaml:1:2" -> "s.yaml:1:2").
  std::string relative(std::string message) const {
    const std::string prefix = dir_.path() + "/";
    for (size_t at; (at = message.find(prefix)) != std::string::npos;)
      message.erase(at, prefix.size());
    return message;
  }

  test::TempDir dir_;
};

}  // namespace h0::suite
