// The statistics behind `harness diff` and `harness history`: the Mann-Whitney U test (the
// rank test LNT and asv use to tell a real timing change from noise), median and geometric mean;
// and behind the task-accuracy gate (kind: eval): the Wilson interval of a score, the exact
// McNemar test of paired right/wrong outcomes, a seeded paired bootstrap of the score delta and
// the unpaired two-proportion z-test (to show what an unpaired comparison would have said).
#pragma once

#include <cstdint>
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

// The two-sided p-value of U from its exact distribution whatever the sizes (the normal
// approximation mann_whitney_u uses past 10 values is poor for unbalanced samples: 36 values
// against 4, fully separated, is p = 2.2e-5 exactly and 1.3e-3 approximated). NaN when there
// are ties (unless the samples are fully separated: 2 / C(n, m) then) or a sample is empty. O(m (n
// + m)^3) for the smaller sample's size m: keep m small.
double mann_whitney_exact_p(const std::vector<double>& x, const std::vector<double>& y);

// The middle value; the mean of the two middle values for an even count; NaN when empty.
double median(std::vector<double> values);
// The weighted median of (value, weight) pairs: the smallest value at which the weights of the
// values up to it reach half the total. NaN when empty or the weights sum to 0.
double weighted_median(std::vector<std::pair<double, double>> values);

// exp(mean(log v)). NaN when empty or when any value is not positive.
double geometric_mean(const std::vector<double>& values);

// The median absolute deviation from the median (unscaled); NaN when empty.
double median_absolute_deviation(const std::vector<double>& values);

// Student's t tests, for timings whose unit of replication is a run (its calibrated median):
// `harness diff` over several runs a side (Welch) and `harness ab`'s interleaved rounds (paired).
struct TTest {
  double t = 0;        // > 0 when the first sample (or the paired differences) tends larger
  double df = 0;       // degrees of freedom (Welch-Satterthwaite for welch_t_test)
  double p_value = 1;  // two-sided; 1 when there is no variance to test with
};
// Welch's unequal-variances t test, as scipy.stats.ttest_ind(x, y, equal_var=False). Needs 2
// values a side.
TTest welch_t_test(const std::vector<double>& x, const std::vector<double>& y);
// The one-sample t test of mean(d) = 0, as scipy.stats.ttest_1samp(d, 0) (ttest_rel of the
// pairs d = a - b). Needs 2 values.
TTest one_sample_t_test(const std::vector<double>& d);
// P(|T| >= |t|) for Student's t with `df` degrees of freedom (the regularized incomplete beta
// function by its continued fraction, to ~1e-14).
double student_t_two_sided_p(double t, double df);

// The standard normal quantile Φ⁻¹(p) for p in (0, 1), to ~1e-15 relative (Acklam's rational
// approximation refined by Newton steps on erfc). ±inf at 0 and 1, NaN outside.
double normal_quantile(double p);

struct Interval {
  double lo = 0, hi = 0;
};

// The two-sided (1 - alpha) Wilson score interval of `successes` of `n`, as statsmodels'
// proportion_confint(successes, n, alpha, method="wilson"). n = 0: [0, 1].
Interval wilson_interval(int64_t successes, int64_t n, double alpha);

// The exact McNemar test of paired binary outcomes from the discordant pairs alone: `b` items
// right on one side only, `c` on the other only. Two-sided, as statsmodels' mcnemar(table,
// exact=True): min(1, 2 * P(Binomial(b + c, 1/2) <= min(b, c))). No discordant pair: 1.
double mcnemar_exact_p(int64_t b, int64_t c);

// The pooled two-proportion z-test of x1/n1 against x2/n2, two-sided, as statsmodels'
// proportions_ztest([x1, x2], [n1, n2]): the p-value an unpaired comparison of two scores
// gives. 1 when the pooled proportion is 0 or 1 (no variance).
double two_proportion_z_p(int64_t x1, int64_t n1, int64_t x2, int64_t n2);

// The percentile interval of mean(head[i] - ref[i]) over `resamples` paired bootstrap samples:
// each draws n item indices with replacement (numpy's legacy RandomState(seed).randint(0, n,
// size=n) stream: MT19937 and masked rejection, so golden/tools reproduces it draw for draw),
// and the interval is numpy.percentile(deltas, [100 alpha/2, 100 (1 - alpha/2)]) (linear).
// head and ref hold 0/1 per item, of one length n > 0; seed < 2^32.
Interval paired_bootstrap_delta(const std::vector<int>& head, const std::vector<int>& ref,
                                int resamples, uint32_t seed, double alpha);

}  // namespace h0::diff
