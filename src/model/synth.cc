#include "model/synth.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/error.h"
#include "base/sha256.h"
#include "io/safetensors_writer.h"
#include "model/architecture.h"
#include "model/inventory.h"
#include "ops/op_list.h"
#include "tensor/convert.h"
#include "tensor/philox.h"

namespace h0::model {
namespace {

namespace fs = std::filesystem;
using tensor::DType;

// Files of a model directory copied next to the weights when present.
constexpr const char* kSideFiles[] = {"tokenizer.json",          "tokenizer_config.json",
                                      "special_tokens_map.json", "preprocessor_config.json",
                                      "generation_config.json",  "chat_template.jinja"};

uint64_t stream_of(const std::string& name) {
  const std::string hex = base::sha256_hex(name.data(), name.size());
  return std::stoull(hex.substr(0, 16), nullptr, 16);
}

// value = mean + std * normal. Matrices: std 1/sqrt(fan_in) so activations stay O(1) through
// the layers and logits are spread (greedy decoding is then robust to rounding); embeddings
// std 1; norm weights 1 + 0.1·normal (so a kernel that ignores them is caught); biases and
// the router correction bias 0.1·normal.
void init_params(const WeightInfo& w, double* mean, double* std) {
  *mean = 0;
  if (w.shape.size() == 1) {
    // "norm.weight" also covers layernorm / pre_layrnorm (CLIP's spelling).
    const bool norm = w.name.ends_with("norm.weight") || w.name.ends_with("layer_norm1.weight") ||
                      w.name.ends_with("layer_norm2.weight");
    *mean = norm ? 1.0 : 0.0;
    *std = 0.1;
    return;
  }
  if (w.name.find("embed_tokens") != std::string::npos ||
      w.name.find("position_embedding") != std::string::npos) {
    *std = 1.0;
    return;
  }
  int64_t fan_in = 1;
  for (size_t i = 1; i < w.shape.size(); ++i) fan_in *= w.shape[i];
  *std = 1.0 / std::sqrt(double(fan_in));
}

tensor::Tensor synth_tensor(const WeightInfo& w, uint64_t seed) {
  double mean = 0, std = 0;
  init_params(w, &mean, &std);
  const size_t n = static_cast<size_t>(w.numel());
  std::vector<double> normal(n);
  tensor::Philox(seed, stream_of(w.name)).fill_normal(normal.data(), n);
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(mean + std * normal[i]);
  tensor::Tensor t = tensor::Tensor::zeros(w.dtype, tensor::Shape(w.shape.begin(), w.shape.end()));
  tensor::convert(values.data(), DType::kF32, t.mutable_data(), w.dtype, n);
  return t;
}

// A quantized projection of an fp8 checkpoint (quantization_config fp8): the weight drawn as the
// unquantized checkpoint has it (the config's dtype, so the two checkpoints are one model before
// and after quantization), then block-quantized by the catalogue's quantize (granularity block2d,
// f8_e4m3: scale = f32(amax / 448) per br x bc block, q = f8(x / scale)). Returns q; *scale gets
// the weight_scale_inv.
tensor::Tensor synth_quantized(const WeightInfo& w, DType original, const Quantization& q,
                               uint64_t seed, tensor::Tensor* scale) {
  WeightInfo dense = w;
  dense.dtype = original;
  const tensor::Tensor x = synth_tensor(dense, seed);
  const ops::OpDef& op = ops::quantize_op();
  const ops::Json attrs = ops::validate_attrs(op, {{"dtype", "f8_e4m3"},
                                                   {"granularity", "block2d"},
                                                   {"block_rows", q.block_rows},
                                                   {"block", q.block_cols}});
  const auto out = ops::infer_outputs(op, {{x.dtype(), x.shape(), true}}, attrs);
  tensor::Tensor qt = tensor::Tensor::zeros(out[0].dtype, out[0].shape);
  *scale = tensor::Tensor::zeros(out[1].dtype, out[1].shape);
  op.reference({&x}, {&qt, scale}, attrs);
  return qt;
}

// Splits the tensors, in inventory order, into `shards` groups of about equal bytes.
std::vector<std::vector<size_t>> assign_shards(const std::vector<WeightInfo>& weights, int shards) {
  int64_t total = 0;
  for (const WeightInfo& w : weights) total += w.bytes();
  std::vector<std::vector<size_t>> groups(static_cast<size_t>(shards));
  int64_t before = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const int64_t mid = before + weights[i].bytes() / 2;
    size_t g = static_cast<size_t>(mid * shards / std::max<int64_t>(total, 1));
    groups[std::min(g, groups.size() - 1)].push_back(i);
    before += weights[i].bytes();
  }
  return groups;
}

std::string shard_name(int i, int n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", i + 1, n);
  return buf;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw InputError(path.string(), "cannot write");
}

}  // namespace

SynthReport synthesize_checkpoint(const std::string& model_dir, const std::string& out_dir,
                                  const SynthOptions& options) {
  if (options.shards < 1) throw InputError("--shards", "must be at least 1");
  const Architecture arch = load_architecture(model_dir);
  const Inventory inv =
      build_inventory(arch, {.dtype = std::nullopt, .quantized = true, .include_mtp = true});
  const DType original =
      arch.text.dtype.value_or(DType::kBF16);  // the inventory's rule for unquantized tensors
  std::map<std::string, tensor::Tensor>
      scales;  // weight_scale_inv, made with their weights (shards keep inventory order)
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw InputError(out_dir, "cannot create: " + ec.message());

  SynthReport report;
  const fs::path src =
      fs::is_directory(model_dir) ? fs::path(model_dir) : fs::path(model_dir).parent_path();
  fs::copy_file(config_path(model_dir), fs::path(out_dir) / "config.json",
                fs::copy_options::overwrite_existing, ec);
  if (ec) throw InputError(out_dir, "cannot write config.json: " + ec.message());
  report.files.push_back("config.json");
  for (const char* side : kSideFiles) {
    if (!fs::exists(src / side)) continue;
    fs::copy_file(src / side, fs::path(out_dir) / side, fs::copy_options::overwrite_existing, ec);
    if (ec) throw InputError(out_dir, std::string("cannot write ") + side + ": " + ec.message());
    report.files.push_back(side);
  }

  const auto groups = assign_shards(inv.weights, options.shards);
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string file =
        options.shards == 1 ? "model.safetensors" : shard_name(int(g), options.shards);
    std::vector<io::NamedTensor> tensors;
    for (size_t i : groups[g]) {
      const WeightInfo& w = inv.weights[i];
      if (w.quantized) {
        tensor::Tensor scale;
        tensors.push_back(
            {w.name, synth_quantized(w, original, arch.quantization, options.seed, &scale)});
        scales[w.name + "_scale_inv"] = std::move(scale);
      } else if (w.role == WeightRole::kQuantScale) {
        auto it = scales.find(w.name);  // made with its weight, just before it in inventory order
        H0_CHECK(it != scales.end()) << w.name << " before its weight";
        tensors.push_back({w.name, std::move(it->second)});
        scales.erase(it);
      } else {
        tensors.push_back({w.name, synth_tensor(w, options.seed)});
      }
      weight_map[w.name] = file;
      report.bytes += w.bytes();
      ++report.tensors;
    }
    io::write_safetensors((fs::path(out_dir) / file).string(), std::move(tensors),
                          {{"format", "pt"}});
    report.files.push_back(file);
  }
  if (options.shards > 1) {
    const nlohmann::json index = {{"metadata", {{"total_size", report.bytes}}},
                                  {"weight_map", weight_map}};
    write_text(fs::path(out_dir) / "model.safetensors.index.json", index.dump(2) + "\n");
    report.files.push_back("model.safetensors.index.json");
  }
  report.parameters = inv.counts.total;
  return report;
}

}  // namespace h0::model
