// Accuracy metrics of an actual tensor against an expected one, in one pass over both,
// accumulating in f64. Either side may be any dtype (each is upcast to f64; integers compare
// exactly under the `exact` preset); the element counts must match. Positions where either side is
// NaN or infinite count only in the NaN/Inf statistics; every error metric is over the positions
// where both are finite.
//
//   max_abs_err, mean_abs_err, rmse   of d = |a - e|
//   max_rel_err                       of d / |e|, and d / eps(expected dtype) where e == 0
//                                     (msprobe's convention: it shifts both sides by eps there)
//   ratio_rel_lt_1e-3, _5e-3          share of positions with that relative error below 1e-3 / 5e-3
//   cosine                            a.e / (|a| |e|); 1 when both norms are 0, 0 when one is
//   rel_l2                            |a - e| / |e| (L2 norms); |a - e| when |e| is 0
//   max_ulp                           largest distance in units in the last place, same float dtype
//   only nan_mismatch                      positions where exactly one side is NaN inf_mismatch
//   positions, neither NaN, with an infinity and a != e
// The element-wise tolerance |a - e| <= atol + rtol |e| is evaluated in the same pass, and so is
// the rounding bias of a float output of 16 bits or fewer (f16, bf16, f8: where the rounding is a
// kernel's choice and one ULP is large), in units of the actual (output) dtype's ULP at each
// expected value, u = (a - e) / ulp(e), over the positions where both are finite and e != 0, each
// u clipped to [-2, 2] so that an outlier is not a bias:
//   bias_ulp             mean of u: > 0 upward, < 0 downward (round toward +/-inf)
//   magnitude_bias_ulp   mean of sign(e) u: < 0 toward zero (truncation), > 0 away from zero
//   bias_rel             mean of (a - e) / |e|, unclipped
// Round-to-nearest leaves both means near 0 (its error is symmetric, |u| <= 1/2 against an exact
// golden); truncation moves magnitude_bias_ulp to about -1/2 although every element may be well
// inside tolerance. ulp(e) = 2^(max(floor(log2 |e|), emin) - mantissa bits) of the actual dtype.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace h0::compare {

struct ElementTolerance {
  double rtol = 0;
  double atol = 0;
  bool enabled = true;  // false: skip the element-wise check (metric thresholds only)
};

struct Metrics {
  int64_t count = 0;         // elements compared
  int64_t finite_count = 0;  // positions where both are finite
  double max_abs_err = 0;
  double max_rel_err = 0;
  double mean_abs_err = 0;
  double rmse = 0;
  double cosine = 1;
  double rel_l2 = 0;
  double ratio_rel_lt_1e3 = 1;
  double ratio_rel_lt_5e3 = 1;
  std::optional<uint64_t> max_ulp;  // absent when the dtypes differ
  int64_t nan_actual = 0, nan_expected = 0, inf_actual = 0, inf_expected = 0;
  int64_t nan_mismatch = 0, inf_mismatch = 0;
  int64_t worst_index = -1;  // first position of max_abs_err; -1 if none
  double worst_actual = 0, worst_expected = 0;
  // Element-wise tolerance: positions outside it (NaN/Inf mismatches included) and the
  // position exceeding it by the most (-1 if none).
  int64_t mismatch_count = 0;
  int64_t worst_excess_index = -1;
  double worst_excess = 0;  // |a - e| - (atol + rtol |e|) there
  // Rounding bias (above); bias_count 0 for other dtypes, or when nothing counted.
  int64_t bias_count = 0;
  double bias_ulp = 0, magnitude_bias_ulp = 0, bias_rel = 0;
  double bias_sd_ulp = 0, magnitude_bias_sd_ulp = 0;  // sample standard deviations of the two
};

// Computes every metric above; the rounding bias only `with_bias` (it costs a scalar pass over
// the upcast block: op cases ask for it, the large comparisons of logits and dumps do not).
// Throws InputError if the element counts differ. Runs on worker threads for large inputs; the
// result does not depend on the thread count.
Metrics compute_metrics(const tensor::Tensor& actual, const tensor::Tensor& expected,
                        const ElementTolerance& tolerance, bool with_bias = false);

// The metrics under their stable names (max_abs_err, max_rel_err, mean_abs_err, rmse, cosine,
// ratio_rel_lt_1e-3, ratio_rel_lt_5e-3, max_ulp (if defined), nan_mismatch, inf_mismatch,
// mismatch_count, and bias_ulp, magnitude_bias_ulp, bias_rel when bias_count > 0). These names
// reach the store and never change.
std::vector<std::pair<std::string, double>> metric_values(const Metrics& m);

}  // namespace h0::compare
