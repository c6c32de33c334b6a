// Judging a model run against its golden: logits metrics (cosine, errors, KL divergence of the
// softmaxes, top-1 agreement, top-5 overlap), greedy generation compared vLLM-style, and the
// per-probe comparison that names the first divergent probe (first layer, then sublayer, in
// execution order) — msprobe's advisor and Polygraphy's layerwise mode in one step.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/safetensors_reader.h"
#include "tensor/tensor.h"

namespace h0::compare {

struct LogitsMetrics {
  double cosine = 0, max_abs_err = 0, kl_mean = 0, kl_max = 0, top1_agreement = 0, top5_overlap = 0;
  int64_t first_top1_mismatch = -1;  // position; -1 when all agree
};
// actual and golden are [T, V].
LogitsMetrics compare_logits(const tensor::Tensor& actual, const tensor::Tensor& golden);

struct GreedyResult {
  bool identical = false;
  bool close =
      false;  // identical, or at the first difference each side's token is in the other's top 5
  int64_t first_mismatch = -1;  // step
  std::string detail;           // "step 3: ours 17 (golden top-5: ...), golden 42 (our top-5: ...)"
};
// ours_top5 / golden_top5: per step, the 5 ids.
GreedyResult compare_greedy(const std::vector<int64_t>& ours,
                            const std::vector<std::vector<int64_t>>& ours_top5,
                            const std::vector<int64_t>& golden,
                            const std::vector<std::vector<int64_t>>& golden_top5);

struct ProbeRow {
  std::string name;
  double cosine = 0, max_abs_err = 0, rel_l2 = 0;
  bool ok = true;
  // Compared by statistics only (a dump without tensors): cosine is NaN, max_abs_err the largest
  // difference of max/min/mean/norm, rel_l2 the largest relative one (io/msprobe_dump.h).
  bool statistics = false;
};
struct ProbeReport {
  std::vector<ProbeRow> rows;      // in execution order; probes the golden lacks are skipped
  int first_divergent = -1;        // index into rows
  nlohmann::json to_json() const;  // {"first_divergence": {...}, "probes": [...]}
  std::string first_divergence()
      const;  // "model.layers.1.self_attn (layer model.layers.1, sublayer self_attn)"
};
// A probe diverges when its cosine against the golden is below `cosine_min` (a wrong
// direction) or its relative L2 error |a - g| / |g| above `rel_l2_max` (cosine is blind to a
// wrong scale).
// `golden(name)` returns the golden tensor of a probe, or nullopt when the golden lacks it.
using GoldenLookup = std::function<std::optional<tensor::Tensor>(const std::string& name)>;
ProbeReport compare_probes(const std::vector<std::pair<std::string, tensor::Tensor>>& actual,
                           const GoldenLookup& golden, double cosine_min, double rel_l2_max);
// The same against one golden dump file.
ProbeReport compare_probes(const std::vector<std::pair<std::string, tensor::Tensor>>& actual,
                           const io::SafetensorsFile& golden, double cosine_min, double rel_l2_max);

// Where the first NaN or infinity came from, golden-free: the first probe in execution order
// that holds one. Every probe captured before it holds none — its inputs among them — so the
// module of that probe made it.
struct NonFiniteOrigin {
  int probe = -1;                 // index in the probes
  std::string name;               // the probe (an HF module name)
  int64_t index = -1;             // the flat index of its first non-finite element
  std::vector<int64_t> position;  // that index in the probe's shape
  double value = 0;               // NaN, +inf or -inf
  int64_t count = 0;              // the non-finite elements of that probe
  int64_t numel = 0;              // the elements of that probe
  nlohmann::json to_json() const;
  // "model.layers.1.mlp at [0, 3, 17] (nan; 1 of 1024 elements not finite)"
  std::string describe() const;
};
// nullopt when every probe is finite.
std::optional<NonFiniteOrigin> first_non_finite(
    const std::vector<std::pair<std::string, tensor::Tensor>>& probes);

}  // namespace h0::compare
