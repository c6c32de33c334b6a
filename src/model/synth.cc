#include "model/synth.h"

#include <algorithm>
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

// Elements [first, first + n) of tensor `w` in its dtype, into `out` (n x dtype size bytes).
void synth_elements(const WeightInfo& w, uint64_t seed, size_t first, size_t n, void* out) {
  double mean = 0, std = 0;
  init_params(w, &mean, &std);
  std::vector<double> normal(n);
  tensor::Philox(seed, stream_of(w.name)).fill_normal(normal.data(), n, first);
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(mean + std * normal[i]);
  tensor::convert(values.data(), DType::kF32, out, w.dtype, n);
}

tensor::Tensor synth_tensor(const WeightInfo& w, uint64_t seed) {
  tensor::Tensor t = tensor::Tensor::zeros(w.dtype, tensor::Shape(w.shape.begin(), w.shape.end()));
  synth_elements(w, seed, 0, static_cast<size_t>(w.numel()), t.mutable_data());
  return t;
}

// Tensor `w` written in pieces of at most kChunk elements (the same bytes as synth_tensor's),
// so a 600-million-element embedding costs 13 bytes an element of one piece, not of the whole.
constexpr size_t kChunk = size_t{1} << 22;
void stream_tensor(const WeightInfo& w, uint64_t seed, const io::ByteSink& write) {
  const size_t n = static_cast<size_t>(w.numel()), size = tensor::dtype_size(w.dtype);
  std::vector<unsigned char> bytes(std::min(n, kChunk) * size);
  for (size_t first = 0; first < n; first += kChunk) {
    const size_t m = std::min(kChunk, n - first);
    synth_elements(w, seed, first, m, bytes.data());
    write(bytes.data(), m * size);
  }
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
    // The shard's tensors by name, dtype and shape; their bytes made one at a time as the writer
    // asks for them in layout order. A quantized weight and its scale come from one
    // quantization; the writer asks for the F32 scales before the F8 weights, so each pair is
    // made twice (once for each) rather than every F8 weight held until its turn.
    std::vector<io::NamedTensor> specs;
    std::map<std::string, const WeightInfo*> by_name;
    for (size_t i : groups[g]) {
      const WeightInfo& w = inv.weights[i];
      specs.push_back(
          {w.name, tensor::Tensor::view(w.dtype, tensor::Shape(w.shape.begin(), w.shape.end()),
                                        nullptr, nullptr)});
      by_name[w.name] = &w;
      weight_map[w.name] = file;
      report.bytes += w.bytes();
      ++report.tensors;
    }
    io::write_safetensors_streamed(
        (fs::path(out_dir) / file).string(), std::move(specs), {{"format", "pt"}},
        [&](const io::NamedTensor& spec, const io::ByteSink& write) {
          const WeightInfo& w = *by_name.at(spec.name);
          if (!w.quantized && w.role != WeightRole::kQuantScale)
            return stream_tensor(w, options.seed, write);
          const std::string weight = w.quantized ? w.name : w.name.substr(0, w.name.size() - 10);
          const auto it = std::find_if(inv.weights.begin(), inv.weights.end(),
                                       [&](const WeightInfo& x) { return x.name == weight; });
          H0_CHECK(it != inv.weights.end() && it->quantized) << w.name << " has no weight";
          tensor::Tensor scale;
          const tensor::Tensor q =
              synth_quantized(*it, original, arch.quantization, options.seed, &scale);
          const tensor::Tensor& out = w.quantized ? q : scale;
          write(out.data(), out.nbytes());
        });
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
