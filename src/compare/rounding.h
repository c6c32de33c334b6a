// Which rounding a platform's kernels use, told from probes whose exact result is known: inputs
// in the output dtype chosen so that add or mul lands exactly on a tie between two neighbours
// (the lower one even or odd), just above or below a tie, on both signs, and in the subnormal
// range. The exact result is representable in f64 (the sum or product of two values of at most
// 24 significant bits), so every rounding's answer is known bit for bit, and the platform's
// outputs name the one it used: round to nearest even (IEEE's default, what PyTorch's casts do),
// toward zero (truncation), to nearest with ties away from zero, upward, downward; each with or
// without flushing subnormal results to zero.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace h0::compare {

enum class Rounding { kNearestEven, kTowardZero, kHalfAway, kUpward, kDownward };
// "nearest_even", "toward_zero", "half_away", "upward", "downward".
const char* rounding_name(Rounding r);
// "rounds to nearest, ties to even", "rounds toward zero (truncation)", ...
std::string rounding_description(Rounding r, bool flushes_subnormals);

// The ULP of `dtype` at |v|: 2^(max(floor(log2 |v|), emin) - mantissa bits) (at 0, the ULP at
// 2^-1, as frexp gives it).
double ulp_of(double v, tensor::DType dtype);

// `v` rounded to `dtype` (a float dtype of at most 24 significant bits: f32, bf16, f16, f8) by
// `r`; with `flush`, a result below the smallest normal becomes a zero of its sign. Overflow
// is not modelled (the probes stay far from it).
double round_as(double v, tensor::DType dtype, Rounding r, bool flush);

struct RoundingProbe {
  double x = 0, y = 0;  // the inputs, exactly representable in the dtype
  double exact = 0;     // x + y or x * y, exact in f64
  std::string what;     // "tie, lower neighbour even", "just above a tie", "subnormal result", ...
};

// Probes of `op` ("add" or "mul") in `dtype` (f32, bf16 or f16). Empty for an op or dtype it
// has none for.
std::vector<RoundingProbe> rounding_probes(const std::string& op, tensor::DType dtype);

struct RoundingVerdict {
  bool nearest_even = false;        // every output is round-to-nearest-even's
  std::optional<Rounding> matched;  // the rounding every output agrees with (nearest even first)
  bool flushes_subnormals = false;  // ... when it flushes subnormal results to zero
  // When no rounding explains them all: the first probe whose output none explains, and the
  // output there.
  int first_unexplained = -1;
  double unexplained_output = 0;
  std::string summary;  // one line: which rounding, or what no rounding explains
};

// Classifies `outputs` (the platform's, as f64, one per probe).
RoundingVerdict classify_rounding(const std::vector<RoundingProbe>& probes,
                                  const std::vector<double>& outputs, tensor::DType dtype);

}  // namespace h0::compare
