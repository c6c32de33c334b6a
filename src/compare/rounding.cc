#include "compare/rounding.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/check.h"

namespace h0::compare {

const char* rounding_name(Rounding r) {
  switch (r) {
    case Rounding::kNearestEven:
      return "nearest_even";
    case Rounding::kTowardZero:
      return "toward_zero";
    case Rounding::kHalfAway:
      return "half_away";
    case Rounding::kUpward:
      return "upward";
    case Rounding::kDownward:
      return "downward";
  }
  return "?";
}

std::string rounding_description(Rounding r, bool flushes_subnormals) {
  std::string out;
  switch (r) {
    case Rounding::kNearestEven:
      out = "rounds to nearest, ties to even";
      break;
    case Rounding::kTowardZero:
      out = "rounds toward zero (truncation)";
      break;
    case Rounding::kHalfAway:
      out = "rounds to nearest, ties away from zero";
      break;
    case Rounding::kUpward:
      out = "rounds upward (toward +inf)";
      break;
    case Rounding::kDownward:
      out = "rounds downward (toward -inf)";
      break;
  }
  return flushes_subnormals ? out + ", flushing subnormal results to zero" : out;
}

double ulp_of(double v, tensor::DType dtype) {
  int e = 0;
  std::frexp(v, &e);  // |v| = m 2^e, 1/2 <= m < 1
  return std::ldexp(
      1.0, std::max(e - 1, tensor::min_normal_exponent(dtype)) - tensor::info(dtype).mantissa_bits);
}

double round_as(double v, tensor::DType dtype, Rounding r, bool flush) {
  if (v == 0 || !std::isfinite(v)) return v;
  const int p = tensor::info(dtype).mantissa_bits, emin = tensor::min_normal_exponent(dtype);
  H0_CHECK(p > 0 && p <= 23) << "round_as: " << tensor::dtype_name(dtype);
  const double a = std::fabs(v);
  const double ulp = ulp_of(a, dtype);
  const double q = a / ulp, lo = std::floor(q), frac = q - lo;
  const bool odd = std::fmod(lo, 2.0) == 1.0;
  double k = lo;  // the magnitude in ULPs
  switch (r) {
    case Rounding::kNearestEven:
      k = frac > 0.5 || (frac == 0.5 && odd) ? lo + 1 : lo;
      break;
    case Rounding::kTowardZero:
      break;
    case Rounding::kHalfAway:
      k = frac >= 0.5 ? lo + 1 : lo;
      break;
    case Rounding::kUpward:
      k = v > 0 && frac > 0 ? lo + 1 : lo;
      break;
    case Rounding::kDownward:
      k = v < 0 && frac > 0 ? lo + 1 : lo;
      break;
  }
  double out = k * ulp;
  if (flush && out < std::ldexp(1.0, emin)) out = 0;
  return std::copysign(out, v);
}

std::vector<RoundingProbe> rounding_probes(const std::string& op, tensor::DType dtype) {
  // f32, bf16 and f16; casts to f8 are not probed.
  if (dtype != tensor::DType::kF32 && dtype != tensor::DType::kBF16 && dtype != tensor::DType::kF16)
    return {};
  const int p = tensor::info(dtype).mantissa_bits;
  const double u = std::ldexp(1.0, -p);  // the ULP in [1, 2)
  const double min_normal = std::ldexp(1.0, tensor::min_normal_exponent(dtype));
  std::vector<RoundingProbe> out;
  const auto both_signs = [&](double x, double y, const std::string& what) {
    const double exact = op == "add" ? x + y : x * y;
    out.push_back({x, y, exact, what});
    // add: both negative; mul: one negative, so the product is.
    if (op == "add")
      out.push_back({-x, -y, -exact, what + ", negative"});
    else
      out.push_back({-x, y, -exact, what + ", negative"});
  };
  if (op == "add") {
    both_signs(1 + 2 * u, u / 2, "tie, lower neighbour even");
    both_signs(1 + 3 * u, u / 2, "tie, lower neighbour odd");
    both_signs(1 + 2 * u, 3 * u / 4, "just above a tie");
    both_signs(1 + 2 * u, u / 4, "just below a tie");
    both_signs(1.5 * min_normal, -min_normal, "subnormal result");
  } else if (op == "mul") {
    // (1 + a u)(1 + b u) = 1 + (a + b) u + a b u^2: a tie where a b = 2^(p-1).
    const double half = std::ldexp(1.0, p - 1), quarter = std::ldexp(1.0, p - 2);
    both_signs(1 + u, 1 + half * u, "tie, lower neighbour odd");
    both_signs(1 + 2 * u, 1 + quarter * u, "tie, lower neighbour even");
    both_signs(1 + 3 * u, 1 + quarter * u, "just above a tie");
    both_signs(1 + u, 1 + quarter * u, "just below a tie");
    both_signs(1.5 * min_normal, 0.5, "subnormal result");
  }
  return out;
}

RoundingVerdict classify_rounding(const std::vector<RoundingProbe>& probes,
                                  const std::vector<double>& outputs, tensor::DType dtype) {
  H0_CHECK(probes.size() == outputs.size()) << probes.size() << " vs " << outputs.size();
  RoundingVerdict v;
  const Rounding kAll[] = {Rounding::kNearestEven, Rounding::kTowardZero, Rounding::kHalfAway,
                           Rounding::kUpward, Rounding::kDownward};
  const auto explains = [&](Rounding r, bool flush, size_t i) {
    return outputs[i] == round_as(probes[i].exact, dtype, r, flush);
  };
  for (bool flush : {false, true}) {
    for (Rounding r : kAll) {
      bool all = true;
      for (size_t i = 0; i < probes.size() && all; ++i) all = explains(r, flush, i);
      if (all && !v.matched) {
        v.matched = r;
        v.flushes_subnormals = flush;
      }
    }
  }
  v.nearest_even = v.matched == Rounding::kNearestEven && !v.flushes_subnormals;
  const std::string n = std::to_string(probes.size()) + " probes";
  if (v.matched) {
    v.summary = rounding_description(*v.matched, v.flushes_subnormals) + " (" + n + ")";
    return v;
  }
  for (size_t i = 0; i < probes.size() && v.first_unexplained < 0; ++i) {
    bool any = false;
    for (bool flush : {false, true}) {
      for (Rounding r : kAll) any = any || explains(r, flush, i);
    }
    if (!any) v.first_unexplained = static_cast<int>(i), v.unexplained_output = outputs[i];
  }
  if (v.first_unexplained >= 0) {
    const RoundingProbe& p = probes[v.first_unexplained];
    char buf[200];
    std::snprintf(buf, sizeof buf, "%.17g (exact %.17g, to nearest even %.17g)",
                  v.unexplained_output, p.exact,
                  round_as(p.exact, dtype, Rounding::kNearestEven, false));
    v.summary = "no rounding explains the outputs (" + n + "): " + p.what + " gave " + buf;
  } else {
    v.summary = "the outputs mix roundings (" + n +
                "): each probe is some rounding's, no one "
                "rounding's all";
  }
  return v;
}

}  // namespace h0::compare
