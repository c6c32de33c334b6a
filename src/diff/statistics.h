// The statistics behind `harness diff` and `harness history`: the Mann-Whitney U test (the
// rank test LNT and asv use to tell a real timing change from noise), median and geometric mean.
#pragma once

#include <vector>

namespace h0::diff {

struct MannWhitney {
  double u = 0;        // U of the first sample: pairs (x_i, y_j) with x_i > y_j, ties count 1/2
  double z = 0;        // normal score of u, tie- and continuity-corrected; > 0 when x tends larger
  double p_value = 1;  // two-sided
};

// Two-sided Mann-Whitney U test of x against y, as scipy.stats.mannwhitneyu(x, y): the exact
// distribution of U when both samples have at most 10 values and there are no ties, otherwise
// the normal approximation with tie correction and continuity correction. p is clipped to 1;
// all values equal, or an empty sample, gives p = 1. O((n + m) log(n + m)).
MannWhitney mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y);

// The middle value; the mean of the two middle values for an even count; NaN when empty.
double median(std::vector<double> values);

// exp(mean(log v)). NaN when empty or when any value is not positive.
double geometric_mean(const std::vector<double>& values);

// The median absolute deviation from the median (unscaled); NaN when empty.
double median_absolute_deviation(const std::vector<double>& values);

}  // namespace h0::diff
