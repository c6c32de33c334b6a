// One tensor against its golden: shapes, then metrics, then the tolerance verdict. The unit
// every accuracy check (op, layer, model) and `harness compare` are built on.
#pragma once

#include <string>
#include <vector>

#include "compare/metrics.h"
#include "compare/tolerance.h"
#include "tensor/tensor.h"

namespace h0::compare {

struct Comparison {
  bool pass = false;
  bool metrics_valid = false;  // false when the element counts differ
  Metrics metrics;
  Tolerance tolerance;  // the one applied, with `auto` resolved to a dtype preset
  std::vector<std::string> failures;
};

// `tolerance.preset == "auto"` picks the preset of the less precise dtype, keeping the given
// thresholds. A shape difference fails (metrics are still computed when the counts agree).
Comparison compare_tensors(const tensor::Tensor& actual, const tensor::Tensor& expected,
                           const Tolerance& tolerance);

}  // namespace h0::compare
