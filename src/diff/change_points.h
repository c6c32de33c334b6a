// Change points of a timing history: E-Divisive with means (Matteson & James 2014, "A
// Nonparametric Approach for Multiple Change Point Analysis of Multivariate Data"; the method
// MongoDB's performance CI and Apache Otava (Hunter) run over nightly results). The series is
// split where the energy distance between the two sides is largest; the split is kept when a
// two-sample test of its two sides (Mann-Whitney, at a strict alpha, as Hunter tests the split
// with a t-test) finds it significant; each segment is searched again, strongest first, until
// no split is. Deterministic: no random draws.
//
// A split must also move the mean by at least `min_change` (relative) and leave `min_segment`
// points on each side, so one outlier is not a step and a change too small to act on is not
// reported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace h0::diff {

struct ChangePointOptions {
  double alpha = 0.001;      // significance of the split's two-sample test (Hunter's default)
  size_t min_segment = 3;    // points on each side of a split
  double min_change = 0.05;  // |mean after / mean before - 1| a reported change must reach
};

struct ChangePoint {
  size_t index = 0;    // the first point of the new level
  double p_value = 1;  // Mann-Whitney, the segment before against the segment after
  // Means and medians of the segments on either side (between the neighbouring change points).
  double before_mean = 0, after_mean = 0;
  double before_median = 0, after_median = 0;
  size_t before_points = 0, after_points = 0;
  double change = 0;  // after_mean / before_mean - 1
};

// The change points of `series` in index order. Fewer than 2 * min_segment points: none.
std::vector<ChangePoint> find_change_points(const std::vector<double>& series,
                                            const ChangePointOptions& options = {});

// The energy statistic of splitting x[begin, end) at tau (begin < tau < end), as E-Divisive
// defines it with exponent 1: (m n / (m + n)) (2 E|X - Y| - E|X - X'| - E|Y - Y'|), X the left
// side (m points), Y the right (n points). Exposed for tests.
double energy_statistic(const std::vector<double>& x, size_t begin, size_t tau, size_t end);

}  // namespace h0::diff
