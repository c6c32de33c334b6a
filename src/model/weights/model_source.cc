#include "model/weights/model_source.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "base/input_file.h"
#include "base/sha256.h"
#include "model/config/architecture.h"
#include "model/weights/inventory.h"
#include "model/weights/synth.h"

namespace h0::model {
namespace {

namespace fs = std::filesystem;

bool has_weights(const fs::path& dir) {
  return fs::exists(dir / "model.safetensors") || fs::exists(dir / "model.safetensors.index.json");
}

std::string file_text(const fs::path& p) { return base::read_regular_file(p.string()); }

}  // namespace

ModelSource resolve_model(const std::string& path, uint64_t seed) {
  const fs::path dir(path);
  if (!fs::is_directory(dir))
    throw InputError(path, "not a directory (a checkpoint or a model config directory)");
  if (has_weights(dir)) return {path, false};
  if (!fs::exists(dir / "config.json"))
    throw InputError(path, "has neither safetensors weights nor config.json");
  std::string key = file_text(dir / "config.json") + "\n" + std::to_string(seed);
  for (const char* side : {"tokenizer.json", "tokenizer_config.json", "preprocessor_config.json"}) {
    if (fs::exists(dir / side)) key += file_text(dir / side);
  }
  // The tensor names this build synthesizes (Philox streams are keyed by name): an entry a build
  // with other names wrote is never reused (it once was, as "missing tensor" errors).
  for (const WeightInfo& w :
       build_inventory(load_architecture(path), {.dtype = std::nullopt, .include_mtp = true})
           .weights)
    key += "\n" + w.name;
  const std::string digest = base::sha256_hex(key.data(), key.size()).substr(0, 16);
  const fs::path cache =
      fs::temp_directory_path() / "h0-synth" / (dir.filename().string() + "-" + digest);
  if (has_weights(cache)) return {cache.string(), true};
  // Synthesize next to the cache entry and rename, so concurrent runs never see half a checkpoint.
  const fs::path tmp = cache.string() + ".tmp" + std::to_string(::getpid());
  synthesize_checkpoint(path, tmp.string(), {seed, 1});
  std::error_code ec;
  fs::rename(tmp, cache, ec);
  if (ec) fs::remove_all(tmp, ec);  // another process won the race: use its copy
  if (!has_weights(cache))
    throw InputError(cache.string(), "could not write the synthesized checkpoint");
  return {cache.string(), true};
}

}  // namespace h0::model
