#include "diff/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
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

double mann_whitney_exact_p(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.empty() || y.empty()) return std::numeric_limits<double>::quiet_NaN();
  const std::vector<double>& small = x.size() <= y.size() ? x : y;
  const std::vector<double>& large = x.size() <= y.size() ? y : x;
  std::vector<double> pooled(small);
  pooled.insert(pooled.end(), large.begin(), large.end());
  std::sort(pooled.begin(), pooled.end());
  if (std::adjacent_find(pooled.begin(), pooled.end()) != pooled.end()) {
    // Ties. The samples fully separated (every value of one below every value of the other) is
    // still exact: one of the C(n, m) equally likely labellings of the pooled values, per side.
    const auto [smin, smax] = std::minmax_element(small.begin(), small.end());
    const auto [lmin, lmax] = std::minmax_element(large.begin(), large.end());
    if (*smax < *lmin || *lmax < *smin) {
      double ways = 1;  // C(n, m)
      for (size_t k = 1; k <= small.size(); ++k) ways = ways * double(large.size() + k) / double(k);
      return std::min(1.0, 2 / ways);
    }
    return std::numeric_limits<double>::quiet_NaN();
  }
  double u = 0;  // pairs (s, l) with s > l
  for (double v : small)
    u += double(std::lower_bound(pooled.begin(), pooled.end(), v) - pooled.begin());
  u -= double(small.size()) * double(small.size() - 1) / 2;  // ranks among the small sample
  const double mn = double(small.size()) * double(large.size());
  return std::min(1.0, 2 * exact_u_survival(std::max(u, mn - u), small.size(), large.size()));
}

double weighted_median(std::vector<std::pair<double, double>> values) {
  double total = 0;
  for (const auto& v : values) total += v.second;
  if (values.empty() || !(total > 0)) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  double acc = 0;
  for (const auto& [value, weight] : values)
    if ((acc += weight) >= total / 2) return value;
  return values.back().first;
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

namespace h0::diff {
namespace {

// Acklam's rational approximation of Φ⁻¹ (relative error < 1.2e-9), the start for Newton.
double acklam(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  const double low = 0.02425;
  if (p < low) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - low) return -acklam(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

// P(Binomial(n, 1/2) <= k), summed in log space (n up to millions stays finite).
double binomial_half_cdf(int64_t k, int64_t n) {
  if (k >= n) return 1;
  double sum = 0;
  const double log_half_n = double(n) * std::log(0.5);
  for (int64_t i = 0; i <= k; ++i) {
    const double log_choose =
        std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1);
    sum += std::exp(log_choose + log_half_n);
  }
  return std::min(1.0, sum);
}

// numpy's legacy bounded integer in [0, max]: a 32-bit MT19937 draw under the smallest
// all-ones mask that covers max, redrawn while above it.
uint32_t masked_draw(std::mt19937& g, uint32_t max) {
  uint32_t mask = max;
  for (int s : {1, 2, 4, 8, 16}) mask |= mask >> s;
  for (;;) {
    const uint32_t v = uint32_t(g()) & mask;
    if (v <= max) return v;
  }
}

// numpy.percentile's linear interpolation of sorted `x` at q in [0, 1] (its _lerp, which
// interpolates from the upper neighbour when the fraction is >= 0.5).
double percentile_linear(const std::vector<double>& x, double q) {
  const double h = double(x.size() - 1) * q;
  const size_t i = size_t(std::floor(h));
  const double t = h - double(i);
  if (i + 1 >= x.size()) return x.back();
  const double a = x[i], b = x[i + 1], diff = b - a;
  return t >= 0.5 ? b - diff * (1 - t) : a + diff * t;
}

}  // namespace

namespace {

// The continued fraction of the regularized incomplete beta function I_x(a, b) (modified Lentz),
// valid for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::abs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a - 1 + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
    d = 1 + aa * d;
    if (std::abs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < kEps) break;
  }
  return h;
}

// I_x(a, b).
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / double(v.size());
}

// The sample variance (n - 1 in the denominator); 0 when it is only the rounding of equal
// values (below (1e-12 mean)^2), which is no evidence of a difference.
double variance_of(const std::vector<double>& v, double mean) {
  double s = 0;
  for (double x : v) s += (x - mean) * (x - mean);
  s /= double(v.size() - 1);
  return s <= 1e-24 * mean * mean ? 0 : s;
}

}  // namespace

double student_t_two_sided_p(double t, double df) {
  if (std::isnan(t) || !(df > 0)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(t)) return 0;
  return std::min(1.0, incomplete_beta(df / 2, 0.5, df / (df + t * t)));
}

TTest welch_t_test(const std::vector<double>& x, const std::vector<double>& y) {
  TTest r;
  if (x.size() < 2 || y.size() < 2) return r;
  const double mx = mean_of(x), my = mean_of(y);
  const double vx = variance_of(x, mx) / double(x.size()),
               vy = variance_of(y, my) / double(y.size());
  if (vx + vy <= 0) return r;
  r.t = (mx - my) / std::sqrt(vx + vy);
  r.df = (vx + vy) * (vx + vy) / (vx * vx / double(x.size() - 1) + vy * vy / double(y.size() - 1));
  r.p_value = student_t_two_sided_p(r.t, r.df);
  return r;
}

TTest one_sample_t_test(const std::vector<double>& d) {
  TTest r;
  if (d.size() < 2) return r;
  const double m = mean_of(d), v = variance_of(d, m) / double(d.size());
  if (v <= 0) return r;
  r.t = m / std::sqrt(v);
  r.df = double(d.size() - 1);
  r.p_value = student_t_two_sided_p(r.t, r.df);
  return r;
}

double normal_quantile(double p) {
  if (!(p >= 0 && p <= 1)) return std::numeric_limits<double>::quiet_NaN();
  if (p == 0) return -std::numeric_limits<double>::infinity();
  if (p == 1) return std::numeric_limits<double>::infinity();
  // The upper half by symmetry, from 1 - p (as Cephes' ndtri, which scipy uses): Newton on
  // Φ(x) - p near 1 would lose the digits of 1 - p.
  if (p > 0.5) return -normal_quantile(1 - p);
  double x = acklam(p);
  for (int i = 0; i < 3; ++i) {  // Newton on Φ(x) - p, Φ(x) = erfc(-x/√2)/2
    const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    if (pdf == 0) break;
    x -= e / pdf;
  }
  return x;
}

Interval wilson_interval(int64_t successes, int64_t n, double alpha) {
  if (n <= 0) return {0, 1};
  const double z = normal_quantile(1 - alpha / 2), z2 = z * z;
  const double nn = double(n), p = double(successes) / nn;
  const double denom = 1 + z2 / nn;
  const double center = (p + z2 / (2 * nn)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / denom;
  return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

double mcnemar_exact_p(int64_t b, int64_t c) {
  const int64_t n = b + c;
  if (n == 0) return 1;
  return std::min(1.0, 2 * binomial_half_cdf(std::min(b, c), n));
}

double two_proportion_z_p(int64_t x1, int64_t n1, int64_t x2, int64_t n2) {
  if (n1 <= 0 || n2 <= 0) return 1;
  const double p1 = double(x1) / double(n1), p2 = double(x2) / double(n2);
  const double pooled = double(x1 + x2) / double(n1 + n2);
  const double var = pooled * (1 - pooled) * (1.0 / double(n1) + 1.0 / double(n2));
  if (var <= 0) return 1;
  const double z = (p1 - p2) / std::sqrt(var);
  return std::min(1.0, 2 * normal_survival(std::fabs(z)));
}

Interval paired_bootstrap_delta(const std::vector<int>& head, const std::vector<int>& ref,
                                int resamples, uint32_t seed, double alpha) {
  const size_t n = head.size();
  if (n == 0 || ref.size() != n || resamples <= 0) return {0, 0};
  std::vector<int> diff(n);
  for (size_t i = 0; i < n; ++i) diff[i] = head[i] - ref[i];
  std::mt19937 g(seed);  // init_genrand(seed), as RandomState(seed)
  std::vector<double> deltas(static_cast<size_t>(resamples));
  for (double& d : deltas) {
    int64_t sum = 0;
    for (size_t k = 0; k < n; ++k) sum += diff[masked_draw(g, uint32_t(n - 1))];
    d = double(sum) / double(n);
  }
  std::sort(deltas.begin(), deltas.end());
  return {percentile_linear(deltas, alpha / 2), percentile_linear(deltas, 1 - alpha / 2)};
}

}  // namespace h0::diff
