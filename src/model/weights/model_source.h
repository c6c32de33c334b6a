// Where a model's weights come from: a checkpoint directory as is, or, for a model directory
// that holds only a config (configs/models/tiny-llama), a synthesized checkpoint (Philox seed 0
// unless told otherwise) cached under $TMPDIR/h0-synth keyed by the config files' sha256.
#pragma once

#include <cstdint>
#include <string>

namespace h0::model {

struct ModelSource {
  std::string dir;  // the checkpoint directory to open
  bool synthesized = false;
};

// Throws InputError for a path that is neither a checkpoint nor a model config directory.
ModelSource resolve_model(const std::string& path, uint64_t seed = 0);

}  // namespace h0::model
