// Loads a rank's part of a checkpoint: for each requested weight, the whole tensor or one
// slice along one axis, read with pread() into owned memory (so "bytes read" is measured at the
// system-call level), in parallel threads, after checking the checkpoint against the inventory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/sharded_checkpoint.h"
#include "model/weights/inventory.h"
#include "tensor/tensor.h"

namespace h0::model {

// Indices [begin, end) of dimension `axis`; with `pieces`, those ranges of axis 0 one after
// another (WeightInfo::tp_parts; begin and end are then 0).
struct WeightSlice {
  int axis = 0;
  int64_t begin = 0, end = 0;
  std::vector<std::pair<int64_t, int64_t>> pieces;

  // [begin, end), or the pieces.
  std::vector<std::pair<int64_t, int64_t>> ranges() const {
    return pieces.empty() ? std::vector<std::pair<int64_t, int64_t>>{{begin, end}} : pieces;
  }
  int64_t extent() const {
    int64_t n = 0;
    for (const auto& [b, e] : ranges()) n += e - b;
    return n;
  }
};

struct LoadRequest {
  const WeightInfo* weight = nullptr;
  std::optional<WeightSlice> slice;  // nullopt: the whole tensor
};

struct LoadOptions {
  bool sha256 = false;  // checksum every loaded tensor
};

struct LoadedWeight {
  std::string name;
  std::optional<WeightSlice> slice;
  tensor::Tensor tensor;
  std::string sha256;  // of the loaded bytes; empty unless LoadOptions::sha256
};

struct LoadReport {
  std::vector<LoadedWeight> weights;  // in request order
  int64_t bytes_read = 0;             // sum of pread() results
  int64_t checkpoint_bytes = 0;       // tensor data bytes of the whole checkpoint
  double seconds = 0;
  double gb_per_s() const { return seconds > 0 ? double(bytes_read) / seconds / 1e9 : 0; }
};

// Compares the checkpoint's tensors with the inventory: names, shapes and dtypes. Throws one
// InputError listing every missing, unexpected and misshapen tensor (first 20 of each). A float
// tensor stored in another float dtype than the inventory's (a routing bias saved in bf16 after
// `model.to(torch.bfloat16)`) is no error unless it is quantized or a quantization scale: it is
// read as stored (the executor converts every float weight to its compute dtype) and returned
// as a note, "model.layers.3.mlp.gate.e_score_correction_bias: bf16 (the inventory's f32)".
// A quantized checkpoint may differ from the config's reference layout (DeepSeek-V3's: every
// decoder projection fp8) tensor by tensor, as quantizers do (modules_to_not_convert, experts
// left in bf16, the router quantized): a projection the layout quantizes stored in a float dtype
// with no scale, or a 2-D decoder weight the layout keeps float stored fp8 with a 2-D f32
// `<name>_scale_inv`, is read as stored and noted; the scale's block shape is checked on load.
std::vector<std::string> verify_checkpoint(const io::ShardedCheckpoint& ckpt,
                                           const Inventory& inventory);

// Reads the requested weights on base::worker_threads() threads (HARNESS_THREADS). Throws
// InputError for an absent tensor or an out-of-range slice.
LoadReport load_weights(const io::ShardedCheckpoint& ckpt, const std::vector<LoadRequest>& requests,
                        const LoadOptions& options = {});

}  // namespace h0::model
