// YaRN's correction range (transformers' _compute_yarn_parameters, find_correction_range): the
// rotary dims [low, high] between which a frequency ramps from extrapolated (below low) to
// interpolated (above high), for `dim` rotary dims, the original context `orig_len`, base `theta`
// and the rotation counts beta_fast / beta_slow; `truncate` floors low and ceils high (HF's
// default). Header-only: the catalogue's rope reference (ops/rope_op.cc) and the device plugins'
// frequency tables (backends/portable, built against the plugin ABI, which include it from here)
// compute it alike.
#pragma once

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

namespace h0 {

inline std::pair<double, double> yarn_correction_range(double dim, double orig_len, double theta,
                                                       double beta_fast, double beta_slow,
                                                       bool truncate) {
  const auto correction_dim = [&](double rotations) {
    return dim * std::log(orig_len / (rotations * 2 * std::numbers::pi)) / (2 * std::log(theta));
  };
  double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1);
  if (low == high) high += 0.001;  // HF: prevent a singular ramp
  return {low, high};
}

}  // namespace h0
