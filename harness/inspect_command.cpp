// harness inspect FILE [--json] [--no-sha256]
// Every tensor of a safetensors file or sharded checkpoint: name, dtype, shape, bytes, sha256.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "base/sha256.h"
#include "cli_output.h"
#include "commands.h"
#include "io/sharded_checkpoint.h"

namespace h0::cli {
namespace {

struct InspectOptions {
  std::string path;
  bool json = false;
  bool no_sha256 = false;
};

int run_inspect(const InspectOptions& opt) {
  const auto ckpt = io::ShardedCheckpoint::open(opt.path);
  uint64_t total = 0;
  for (const auto& name : ckpt.names()) total += ckpt.find(name)->nbytes();
  const bool progress = !opt.no_sha256 && total > (uint64_t{1} << 30) && ::isatty(STDERR_FILENO);

  nlohmann::json tensors = nlohmann::json::array();
  uint64_t hashed = 0;
  for (const auto& name : ckpt.names()) {
    const io::SafetensorsFile& shard = ckpt.shard_of(name);
    const io::TensorEntry& e = *shard.find(name);
    nlohmann::json t = {{"name", name},
                        {"dtype", tensor::dtype_name(e.dtype)},
                        {"shape", e.shape},
                        {"bytes", e.nbytes()}};
    if (ckpt.num_shards() > 1) t["shard"] = shard.path();
    if (!opt.no_sha256) {
      t["sha256"] = base::sha256_hex(shard.tensor_bytes(e), e.nbytes());
      hashed += e.nbytes();
      if (progress) {
        std::fprintf(stderr, "\rhashing: %s of %s", human_bytes(hashed).c_str(),
                     human_bytes(total).c_str());
      }
    }
    tensors.push_back(std::move(t));
  }
  if (progress) std::fprintf(stderr, "\n");

  nlohmann::json metadata = nlohmann::json::object();
  if (ckpt.num_shards() == 1) {
    for (const auto& [k, v] : ckpt.shard(0).metadata()) metadata[k] = v;
  }
  if (opt.json) {
    nlohmann::json out = {{"file", ckpt.path()},
                          {"shards", ckpt.num_shards()},
                          {"tensor_bytes", total},
                          {"metadata", metadata},
                          {"tensors", tensors}};
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%s: %zu tensors, %s in %zu shard%s\n", ckpt.path().c_str(), tensors.size(),
              human_bytes(total).c_str(), ckpt.num_shards(), ckpt.num_shards() == 1 ? "" : "s");
  for (const auto& [k, v] : metadata.items()) {
    std::printf("metadata %s = %s\n", k.c_str(), v.get<std::string>().c_str());
  }
  size_t width = 4;
  for (const auto& t : tensors) width = std::max(width, t["name"].get<std::string>().size());
  std::printf("%-*s  %-8s %-18s %12s  %s\n", static_cast<int>(width), "name", "dtype", "shape",
              "bytes", opt.no_sha256 ? "" : "sha256");
  for (const auto& t : tensors) {
    std::string shape = tensor::shape_string(t["shape"].get<tensor::Shape>());
    std::printf("%-*s  %-8s %-18s %12llu  %s\n", static_cast<int>(width),
                t["name"].get<std::string>().c_str(), t["dtype"].get<std::string>().c_str(),
                shape.c_str(), static_cast<unsigned long long>(t["bytes"].get<uint64_t>()),
                t.contains("sha256") ? t["sha256"].get<std::string>().c_str() : "");
  }
  return kExitOk;
}

}  // namespace

void register_inspect(CLI::App& app, Run* run) {
  auto opt = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand(
      "inspect",
      "List every tensor of a safetensors file or checkpoint (dtype, shape, bytes, sha256)");
  sub->add_option("file", opt->path,
                  "A .safetensors file, a model.safetensors.index.json, or a checkpoint directory")
      ->required();
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->add_flag("--no-sha256", opt->no_sha256,
                "Skip hashing the tensor data (fast on huge checkpoints)");
  sub->callback([run, opt] { *run = [opt] { return run_inspect(*opt); }; });
}

}  // namespace h0::cli
