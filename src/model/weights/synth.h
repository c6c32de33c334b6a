// Synthesized checkpoints: a complete Hugging Face model directory (config.json, safetensors
// shards + index, tokenizer and processor files) with Philox weights, deterministic to the byte
// for a given model directory, seed and shard count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace h0::model {

struct SynthOptions {
  uint64_t seed = 0;
  int shards = 1;  // 1: model.safetensors; N > 1: model-0000i-of-0000N.safetensors + index
};

struct SynthReport {
  std::vector<std::string> files;  // written, relative to the output directory
  int64_t tensors = 0;
  int64_t parameters = 0;  // elements of parameter tensors (HF num_parameters, MTP excluded)
  int64_t bytes = 0;       // tensor data bytes over all shards
};

// Weight values: element i of tensor `name` is Philox(seed, stream = first 8 bytes of
// sha256(name)).normal(i) scaled by the tensor's role (documented in synth.cc), rounded to the
// checkpoint dtype. A config with quantization_config fp8 (weight_block_size [br, bc]) gets its
// projections as DeepSeek-V3's checkpoints store them: F8_E4M3 plus an F32 weight_scale_inv per
// br x bc block, quantized from exactly the values the same config without quantization_config
// synthesizes (amax / 448 per block, q = f8(x / scale); the bf16 original of the fp8 checkpoint).
// `model_dir` holds config.json and optionally tokenizer.json,
// tokenizer_config.json, preprocessor_config.json, generation_config.json (copied verbatim).
// Throws InputError for a bad model directory or an unwritable `out_dir`.
SynthReport synthesize_checkpoint(const std::string& model_dir, const std::string& out_dir,
                                  const SynthOptions& options);

}  // namespace h0::model
