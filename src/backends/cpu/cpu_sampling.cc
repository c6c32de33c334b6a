// Token selection from logits[T,V] -> ids[T] (i64).
//   argmax: the largest logit, ties -> lowest index (NaN counts as the largest, as torch).
//   sample: row r draws with u = Philox(seed, stream = step).uniform(r), so every platform picks
//     the same token from the same logits. temperature <= 0 is argmax. Else z = logits / T in
//     f64; order by z descending (ties -> lower index); keep the first top_k (0 = all);
//     p = exp(z − max z) normalised over the kept; top_p < 1 keeps the shortest prefix whose
//     cumulative p >= top_p (at least one) and renormalises; the pick is the first kept index
//     whose cumulative p exceeds u (the last kept if none). A NaN logit is HB_INVALID_ARGUMENT.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"
#include "tensor/philox.h"

namespace h0::backends::cpu {
namespace {

int64_t argmax_row(const float* v, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) return i;
    if (v[i] > v[best]) best = i;
  }
  return best;
}

void check_logits(const Operands& call, const char* name) {
  const hb_tensor& x = call.in[0];
  require_tensor(call, x, name, {-1, -1}, x.dtype);
  require(call, x.shape[1] > 0,
          std::string(name) + " needs at least one column, got " + describe(x));
  require_tensor(call, call.out[0], "ids", {x.shape[0]}, HB_I64);
}

constexpr int64_t kNanRow = -1;

// ids[r] = fn(r, logits row r as f32, V) over the rows of in[0]; fn returns kNanRow for a row
// it rejects, reported after the parallel loop (nothing may throw on a worker thread).
template <typename Fn>
void for_logit_rows(const Operands& call, Fn fn) {
  const hb_tensor& x = call.in[0];
  const int64_t t = x.shape[0], v = x.shape[1];
  auto* ids = static_cast<int64_t*>(call.out[0].data);
  base::parallel_for(static_cast<size_t>(t), row_grain(v), [&](size_t, size_t b, size_t e) {
    std::vector<float> row(static_cast<size_t>(v));
    for (size_t r = b; r < e; ++r) {
      load_f32(x, r * static_cast<size_t>(v), static_cast<size_t>(v), row.data());
      ids[r] = fn(r, row.data(), v);
    }
  });
  for (int64_t r = 0; r < t; ++r) {
    require(call, ids[r] != kNanRow, "row " + std::to_string(r) + " of the logits holds a NaN");
  }
}

}  // namespace

void argmax_kernel(const Operands& call) {
  check_logits(call, "x");
  for_logit_rows(call, [](size_t, const float* row, int64_t v) { return argmax_row(row, v); });
}

void sample_kernel(const Operands& call) {
  check_logits(call, "logits");
  const double temperature = attr_f(call.attrs, "temperature", 1.0);
  const int64_t top_k = attr_i(call.attrs, "top_k", 0);
  const double top_p = attr_f(call.attrs, "top_p", 1.0);
  require(call, top_k >= 0, "attr top_k must be >= 0, got " + std::to_string(top_k));
  require(call, top_p > 0 && top_p <= 1,
          "attr top_p must be in (0, 1], got " + std::to_string(top_p));
  const tensor::Philox rng(static_cast<uint64_t>(attr_i(call.attrs, "seed", 0)),
                           static_cast<uint64_t>(attr_i(call.attrs, "step", 0)));
  for_logit_rows(call, [&](size_t r, const float* row, int64_t v) -> int64_t {
    if (temperature <= 0) return argmax_row(row, v);
    std::vector<double> z(static_cast<size_t>(v));
    for (int64_t i = 0; i < v; ++i) {
      if (std::isnan(row[i])) return kNanRow;
      z[static_cast<size_t>(i)] = static_cast<double>(row[i]) / temperature;
    }
    std::vector<int64_t> order(static_cast<size_t>(v));
    std::iota(order.begin(), order.end(), 0);
    auto before = [&](int64_t a, int64_t b) {
      const double za = z[static_cast<size_t>(a)], zb = z[static_cast<size_t>(b)];
      return za > zb || (za == zb && a < b);
    };
    const int64_t kept_k = top_k > 0 ? std::min(top_k, v) : v;
    std::partial_sort(order.begin(), order.begin() + kept_k, order.end(), before);
    order.resize(static_cast<size_t>(kept_k));
    const double zmax = z[static_cast<size_t>(order[0])];
    std::vector<double> p(order.size());
    double sum = 0;
    for (size_t i = 0; i < order.size(); ++i)
      sum += (p[i] = std::exp(z[static_cast<size_t>(order[i])] - zmax));
    for (double& x : p) x /= sum;
    size_t kept = p.size();
    if (top_p < 1) {
      double cum = 0;
      for (size_t i = 0; i < p.size(); ++i) {
        cum += p[i];
        if (cum >= top_p) {
          kept = i + 1;
          break;
        }
      }
      double kept_sum = 0;
      for (size_t i = 0; i < kept; ++i) kept_sum += p[i];
      for (size_t i = 0; i < kept; ++i) p[i] /= kept_sum;
    }
    const double u = static_cast<double>(rng.uniform(r));
    double cum = 0;
    for (size_t i = 0; i < kept; ++i) {
      cum += p[i];
      if (cum > u) return order[i];
    }
    return order[kept - 1];
  });
}

}  // namespace h0::backends::cpu
