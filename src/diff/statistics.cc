#include "diff/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

namespace h0::diff {
namespace {

// Below this many values in both samples, and without ties, U's exact distribution is used.
constexpr size_t kExactMaxSize = 10;

// P(U >= u) for the U of a sample of n1 among n1 + n2 distinct values, all C(n1 + n2, n1)
// rank subsets equally likely. Counts subsets by rank sum, one rank at a time:
// ways[j][s] = number of j-subsets of the ranks seen so far with sum s. O(n1 * n * max_sum).
double exact_u_survival(double u, size_t n1, size_t n2) {
  const size_t n = n1 + n2;
  const size_t max_sum = n * (n + 1) / 2;
  std::vector<std::vector<double>> ways(n1 + 1, std::vector<double>(max_sum + 1, 0.0));
  ways[0][0] = 1;
  for (size_t rank = 1; rank <= n; ++rank) {
    for (size_t j = std::min(rank, n1); j >= 1; --j) {
      for (size_t s = max_sum; s >= rank; --s) ways[j][s] += ways[j - 1][s - rank];
    }
  }
  const double min_sum = static_cast<double>(n1 * (n1 + 1) / 2);
  double total = 0, tail = 0;
  for (size_t s = 0; s <= max_sum; ++s) {
    total += ways[n1][s];
    if (static_cast<double>(s) - min_sum >= u) tail += ways[n1][s];
  }
  return tail / total;
}

double normal_survival(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

}  // namespace

MannWhitney mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y) {
  MannWhitney r;
  const size_t n1 = x.size(), n2 = y.size(), n = n1 + n2;
  if (n1 == 0 || n2 == 0) return r;

  // Average ranks (1-based) of the pooled sample; tie_term = sum over tie groups of t^3 - t.
  std::vector<std::pair<double, bool>> pooled;  // (value, from x)
  pooled.reserve(n);
  for (double v : x) pooled.emplace_back(v, true);
  for (double v : y) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum_x = 0, tie_term = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k) rank_sum_x += pooled[k].second ? rank : 0.0;
    tie_term += t * t * t - t;
    i = j;
  }

  const double d1 = static_cast<double>(n1), d2 = static_cast<double>(n2), dn = d1 + d2;
  r.u = rank_sum_x - d1 * (d1 + 1) / 2;
  const double mu = d1 * d2 / 2;
  const double u_max = std::max(r.u, d1 * d2 - r.u);
  const double sigma = std::sqrt(d1 * d2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1))));
  const double excess = std::max(0.0, u_max - mu - 0.5);  // continuity-corrected |U - mu|
  if (sigma > 0) r.z = std::copysign(excess / sigma, r.u - mu);
  if (r.u == mu) r.z = 0;

  double one_sided;
  if (n1 <= kExactMaxSize && n2 <= kExactMaxSize && tie_term == 0) {
    one_sided = exact_u_survival(u_max, n1, n2);
  } else {
    one_sided = sigma > 0 ? normal_survival(excess / sigma) : 0.5;
  }
  r.p_value = std::min(1.0, 2 * one_sided);
  return r;
}

double median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double geometric_mean(const std::vector<double>& values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  double log_sum = 0;
  for (double v : values) {
    if (!(v > 0)) return std::numeric_limits<double>::quiet_NaN();
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(values.size()));
}

double median_absolute_deviation(const std::vector<double>& values) {
  const double m = median(values);
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double v : values) deviations.push_back(std::abs(v - m));
  return median(std::move(deviations));
}

}  // namespace h0::diff
