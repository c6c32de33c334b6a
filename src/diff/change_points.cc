#include "diff/change_points.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "base/check.h"
#include "diff/statistics.h"

namespace h0::diff {
namespace {

constexpr size_t kExactSide = 10;  // the exact U test when the smaller side has at most this

struct Split {
  size_t tau = 0;  // absolute index of the first point right of the split
  double q = -1;   // its energy statistic; -1: no split leaves min_segment on both sides
};

double pairs(size_t m) { return m < 2 ? 0 : double(m) * double(m - 1) / 2; }

// The energy statistic of every split of w (one segment) with sums kept incrementally, so the
// whole scan is O(L^2): moving point p from the right side to the left adds its distances to the
// left points to the left's within-sum and takes its distances to the remaining right points
// out of the right's.
Split best_split(const std::vector<double>& w, size_t offset, size_t min_segment) {
  const size_t L = w.size();
  Split best;
  if (L < 2 * min_segment) return best;
  double total = 0;
  for (size_t i = 0; i < L; ++i)
    for (size_t k = i + 1; k < L; ++k) total += std::abs(w[i] - w[k]);
  double left = 0, right = total, between = 0;
  for (size_t p = 0; p + 1 < L; ++p) {  // after this step the split is at tau = p + 1
    double to_left = 0, to_right = 0;
    for (size_t i = 0; i < p; ++i) to_left += std::abs(w[i] - w[p]);
    for (size_t j = p + 1; j < L; ++j) to_right += std::abs(w[p] - w[j]);
    left += to_left;
    right -= to_right;
    between += to_right - to_left;
    const size_t m = p + 1, n = L - m;
    if (m < min_segment || n < min_segment) continue;
    const double x_within = pairs(m) > 0 ? left / pairs(m) : 0;
    const double y_within = pairs(n) > 0 ? right / pairs(n) : 0;
    const double q = double(m) * double(n) / double(L) *
                     (2 * between / (double(m) * double(n)) - x_within - y_within);
    if (q > best.q) best = {offset + m, q};
  }
  return best;
}

// p-value of the split of x[begin, end) at tau: the two-sided Mann-Whitney test of the points
// left of it against those right of it (Hunter / Apache Otava test the split the energy statistic
// chose with a two-sample test, at a strict alpha, rather than by permutations: as strict on
// noise, and a step down and back up, whose first split leaves a mixed side, is still found).
double split_p(const std::vector<double>& x, size_t begin, size_t tau, size_t end) {
  const std::vector<double> left(x.begin() + std::ptrdiff_t(begin),
                                 x.begin() + std::ptrdiff_t(tau));
  const std::vector<double> right(x.begin() + std::ptrdiff_t(tau), x.begin() + std::ptrdiff_t(end));
  const double p = mann_whitney_u(left, right).p_value;
  // The normal approximation understates an unbalanced split (a step 4 runs before the end):
  // near significance, with a small side, the exact distribution decides.
  if (p < 0.05 && std::min(left.size(), right.size()) <= kExactSide) {
    if (const double exact = mann_whitney_exact_p(left, right); !std::isnan(exact)) return exact;
  }
  return p;
}

double mean_of(const std::vector<double>& x, size_t begin, size_t end) {
  double s = 0;
  for (size_t i = begin; i < end; ++i) s += x[i];
  return end > begin ? s / double(end - begin) : 0;
}

}  // namespace

double energy_statistic(const std::vector<double>& x, size_t begin, size_t tau, size_t end) {
  H0_CHECK(begin < tau && tau < end && end <= x.size()) << "split out of range";
  const size_t m = tau - begin, n = end - tau;
  double between = 0, left = 0, right = 0;
  for (size_t i = begin; i < tau; ++i)
    for (size_t j = tau; j < end; ++j) between += std::abs(x[i] - x[j]);
  for (size_t i = begin; i < tau; ++i)
    for (size_t k = i + 1; k < tau; ++k) left += std::abs(x[i] - x[k]);
  for (size_t j = tau; j < end; ++j)
    for (size_t k = j + 1; k < end; ++k) right += std::abs(x[j] - x[k]);
  const double x_within = pairs(m) > 0 ? left / pairs(m) : 0;
  const double y_within = pairs(n) > 0 ? right / pairs(n) : 0;
  return double(m) * double(n) / double(m + n) *
         (2 * between / (double(m) * double(n)) - x_within - y_within);
}

std::vector<ChangePoint> find_change_points(const std::vector<double>& x,
                                            const ChangePointOptions& o) {
  H0_CHECK(o.min_segment >= 1) << "bad change point options";
  std::set<size_t> cuts = {0, x.size()};  // segment bounds
  while (true) {
    // Candidates: the energy statistic's best split of every seeded interval inside a segment
    // (the segment itself, then halves, quarters, ... overlapping by half, down to 2 *
    // min_segment points: seeded binary segmentation, Kovacs et al. 2020), each tested on its own
    // interval. A short excursion (a step and a step back) is then a clean split of a short
    // interval even where no split of the whole segment separates it. The most significant wins.
    double best_p = 2;
    size_t best_tau = 0;
    for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
      const size_t b = *it, e = *std::next(it);
      for (size_t len = e - b; len >= 2 * o.min_segment; len = (len + 1) / 2) {
        const size_t step = std::max<size_t>(1, len / 2);
        for (size_t s = b; s + len <= e; s = s + len == e ? e : std::min(s + step, e - len)) {
          const std::vector<double> w(x.begin() + std::ptrdiff_t(s),
                                      x.begin() + std::ptrdiff_t(s + len));
          const Split split = best_split(w, s, o.min_segment);
          if (split.q < 0) continue;
          const double p = split_p(x, s, split.tau, s + len);
          if (p < best_p) best_p = p, best_tau = split.tau;
        }
        if (len == 2 * o.min_segment) break;
      }
    }
    if (best_p > o.alpha) break;
    cuts.insert(best_tau);
  }
  // Drop the weakest split whose mean change is below min_change, one at a time (its neighbours'
  // segments merge, so every remaining change is measured between its final neighbours).
  while (true) {
    std::vector<size_t> bounds(cuts.begin(), cuts.end());
    size_t weakest = 0;
    double weakest_change = o.min_change;
    for (size_t i = 1; i + 1 < bounds.size(); ++i) {
      const double before = mean_of(x, bounds[i - 1], bounds[i]);
      const double after = mean_of(x, bounds[i], bounds[i + 1]);
      const double change = before != 0 ? std::abs(after / before - 1) : INFINITY;
      if (change < weakest_change) weakest = i, weakest_change = change;
    }
    if (weakest == 0) break;
    cuts.erase(bounds[weakest]);
  }
  std::vector<ChangePoint> out;
  const std::vector<size_t> bounds(cuts.begin(), cuts.end());
  for (size_t i = 1; i + 1 < bounds.size(); ++i) {
    ChangePoint c;
    c.index = bounds[i];
    c.p_value = split_p(x, bounds[i - 1], bounds[i], bounds[i + 1]);
    c.before_points = bounds[i] - bounds[i - 1];
    c.after_points = bounds[i + 1] - bounds[i];
    c.before_mean = mean_of(x, bounds[i - 1], bounds[i]);
    c.after_mean = mean_of(x, bounds[i], bounds[i + 1]);
    c.before_median =
        median({x.begin() + std::ptrdiff_t(bounds[i - 1]), x.begin() + std::ptrdiff_t(bounds[i])});
    c.after_median =
        median({x.begin() + std::ptrdiff_t(bounds[i]), x.begin() + std::ptrdiff_t(bounds[i + 1])});
    c.change = c.before_mean != 0 ? c.after_mean / c.before_mean - 1 : INFINITY;
    out.push_back(c);
  }
  return out;
}

}  // namespace h0::diff
