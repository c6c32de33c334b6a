// The checkpoint of a tiny model for the executor tests.
#pragma once

#include <filesystem>
#include <string>

#include "model/weights/synth.h"
#include "test_util.h"

namespace h0::model::tiny {

// The checkpoint of `name`: the one transformers wrote (tests/data/models/<name>) if there is one,
// else configs/models/<name> synthesized into `dir`.
inline std::string checkpoint_of(const std::string& name, const std::string& dir) {
  const std::string written = h0::test::source_path("tests/data/models/" + name);
  if (std::filesystem::exists(written + "/config.json")) return written;
  synthesize_checkpoint(h0::test::source_path("configs/models/" + name), dir, {0, 1});
  return dir;
}

}  // namespace h0::model::tiny
