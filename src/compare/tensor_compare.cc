#include "compare/tensor_compare.h"

namespace h0::compare {

Comparison compare_tensors(const tensor::Tensor& actual, const tensor::Tensor& expected,
                           const Tolerance& tolerance) {
  Comparison c;
  c.tolerance = tolerance;
  if (tolerance.preset == "auto") {
    c.tolerance = auto_preset(actual.dtype(), expected.dtype());
    c.tolerance.thresholds = tolerance.thresholds;
  }
  c.tolerance.rounding_bias = tolerance.rounding_bias && tensor::is_float(actual.dtype()) &&
                              tensor::info(actual.dtype()).mantissa_bits <= 10;
  if (actual.shape() != expected.shape()) {
    c.failures.push_back("shape " + tensor::shape_string(actual.shape()) +
                         " differs from expected " + tensor::shape_string(expected.shape()));
  }
  if (actual.numel() == expected.numel()) {
    c.metrics = compute_metrics(actual, expected, c.tolerance.element, c.tolerance.rounding_bias);
    c.metrics_valid = true;
    Verdict v = evaluate(c.metrics, c.tolerance);
    c.failures.insert(c.failures.end(), v.failures.begin(), v.failures.end());
  }
  c.pass = c.failures.empty();
  return c;
}

}  // namespace h0::compare
