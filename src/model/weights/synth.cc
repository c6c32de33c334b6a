#include "model/weights/synth.h"

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
#include "model/config/architecture.h"
#include "model/weights/inventory.h"
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

// Tensor `w` written in pieces of at most kChunk elements (the same bytes as one synth_elements
// call for all of it), so a 600-million-element embedding costs 13 bytes an element of one piece,
// not of the whole.
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

// MXFP4 experts (GPT-OSS's released layout): blocks [E, out, in / 32, 16] of two E2M1 codes a
// byte and E8M0 scales [E, out, in / 32], drawn directly rather than quantized from a float draw.
// E2M1's magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6} drawn uniformly have RMS 2.93, so the scales are
// 2^k around 1 / (2.93 sqrt(in)), giving the 1/sqrt(fan_in) of the float matrices, with k moved
// by -1, 0 or +1 from block to block so that a kernel ignoring the scales is caught.
void stream_mxfp4(const WeightInfo& w, uint64_t seed, const io::ByteSink& write) {
  const bool blocks = w.role != WeightRole::kQuantScale;
  H0_CHECK(w.shape.size() == (blocks ? 4u : 3u)) << w.name << ": not an MXFP4 tensor";
  const tensor::Philox philox(seed, stream_of(w.name));
  const size_t n = static_cast<size_t>(w.numel());
  const double in = static_cast<double>(w.shape[2] * 32);
  const int base = 127 + static_cast<int>(std::lround(std::log2(1.0 / (2.93 * std::sqrt(in)))));
  std::vector<unsigned char> bytes(std::min(n, kChunk));
  for (size_t first = 0; first < n; first += kChunk) {
    const size_t m = std::min(kChunk, n - first);
    for (size_t j = 0; j < m; ++j) {
      const uint32_t word = philox.word(first + j);
      bytes[j] = blocks ? static_cast<unsigned char>(word)
                        : static_cast<unsigned char>(std::clamp(base + int(word % 3) - 1, 1, 254));
    }
    write(bytes.data(), m);
  }
}

// A quantized projection of an fp8 checkpoint (quantization_config fp8): the weight drawn as the
// unquantized checkpoint has it (the config's dtype, so the two checkpoints are one model before
// and after quantization), then block-quantized by the catalogue's quantize (granularity block2d,
// f8_e4m3: scale = f32(amax / 448) per br x bc block, q = f8(x / scale)). A block's scale covers
// rows of one stripe of br rows, so the weight is made a stripe at a time (the same bytes as the
// whole tensor quantized at once): q streamed to `write`, the weight_scale_inv returned.
tensor::Tensor stream_quantized(const WeightInfo& w, DType original, const Quantization& q,
                                uint64_t seed, const io::ByteSink& write) {
  H0_CHECK(w.shape.size() == 2) << w.name << ": an fp8 projection is [out, in]";
  const int64_t rows = w.shape[0], cols = w.shape[1], br = q.block_rows, bc = q.block_cols;
  WeightInfo dense = w;
  dense.dtype = original;
  const ops::OpDef& op = ops::quantize_op();
  const ops::Json attrs = ops::validate_attrs(op, {{"dtype", "f8_e4m3"},
                                                   {"granularity", "block2d"},
                                                   {"block_rows", q.block_rows},
                                                   {"block", q.block_cols}});
  tensor::Tensor scale =
      tensor::Tensor::zeros(DType::kF32, {(rows + br - 1) / br, (cols + bc - 1) / bc});
  for (int64_t r0 = 0; r0 < rows; r0 += br) {
    const int64_t n = std::min(br, rows - r0);
    tensor::Tensor x = tensor::Tensor::zeros(original, {n, cols});
    synth_elements(dense, seed, static_cast<size_t>(r0 * cols), static_cast<size_t>(n * cols),
                   x.mutable_data());
    const auto out = ops::infer_outputs(op, {{x.dtype(), x.shape(), true}}, attrs);
    tensor::Tensor qt = tensor::Tensor::zeros(out[0].dtype, out[0].shape);
    tensor::Tensor st = tensor::Tensor::zeros(out[1].dtype, out[1].shape);
    op.reference({&x}, {&qt, &st}, attrs);
    write(qt.data(), qt.nbytes());
    std::memcpy(static_cast<char*>(scale.mutable_data()) + (r0 / br) * st.nbytes(), st.data(),
                st.nbytes());
  }
  return scale;
}

// Splits the tensors, in inventory order, into `shards` groups of about equal bytes; a
// quantization scale goes with the weight before it (both come out of one quantization).
std::vector<std::vector<size_t>> assign_shards(const std::vector<WeightInfo>& weights, int shards) {
  int64_t total = 0;
  for (const WeightInfo& w : weights) total += w.bytes();
  std::vector<std::vector<size_t>> groups(static_cast<size_t>(shards));
  int64_t before = 0;
  size_t g = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const int64_t mid = before + weights[i].bytes() / 2;
    if (i == 0 || weights[i].role != WeightRole::kQuantScale)
      g = std::min(static_cast<size_t>(mid * shards / std::max<int64_t>(total, 1)),
                   groups.size() - 1);
    groups[g].push_back(i);
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

  const bool mxfp4 = arch.quantization.method == "mxfp4";
  const auto groups = assign_shards(inv.weights, options.shards);
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string file =
        options.shards == 1 ? "model.safetensors" : shard_name(int(g), options.shards);
    // The shard's tensors by name, dtype and shape; their bytes made one at a time as the writer
    // asks for them in layout order. A quantized weight and its scale come from one quantization:
    // the scales, laid out before the F8 weights, are written after them (kept until then: 1/4096
    // of the weight's bytes for 128 x 128 blocks).
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
    std::map<std::string, tensor::Tensor> scales;  // by the scale's name
    io::write_safetensors_streamed(
        (fs::path(out_dir) / file).string(), std::move(specs), {{"format", "pt"}},
        [&](const io::NamedTensor& spec, const io::ByteSink& write) {
          const WeightInfo& w = *by_name.at(spec.name);
          if (mxfp4 && (w.quantized || w.role == WeightRole::kQuantScale))
            return stream_mxfp4(w, options.seed, write);
          if (w.role == WeightRole::kQuantScale) {
            const auto it = scales.find(w.name);
            H0_CHECK(it != scales.end()) << w.name << " has no weight in " << file;
            write(it->second.data(), it->second.nbytes());
            scales.erase(it);
            return;
          }
          if (!w.quantized) return stream_tensor(w, options.seed, write);
          scales[w.name + "_scale_inv"] =
              stream_quantized(w, original, arch.quantization, options.seed, write);
        },
        [&](const io::NamedTensor& spec) {
          return !mxfp4 && by_name.at(spec.name)->role == WeightRole::kQuantScale;
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
