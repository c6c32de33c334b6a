// The serving engine's kernels (phases "steady/engine*": `harness profile import`,
// io/trace_profile.h) compared between two runs. A kernel's row holds its time in each engine step;
// the machine under the engine is calibrated by the engine's own kernels: the time-weighted
// median of the kernels' head/base ratios is the machine's (or the whole stack's) speed change,
// and each kernel is judged relative to it, so a uniformly slower host moves no kernel while one
// kernel that alone became 30 % slower is named, and only it. A change must also move the step by
// DiffOptions::kernel_share of its time: the smallest kernels' relative noise is the machine's.
// Kernels on one side only are "appeared" or "vanished", with their share of their side's step
// time.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "diff/diff.h"
#include "diff/statistics.h"

namespace h0::diff {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kStepRow = "(step)";
constexpr size_t kMinCalibrationKernels = 3;

using Rows = std::map<std::pair<std::string, std::string>, const store::ProfileData*>;

Rows engine_rows(const store::ResultData& r) {
  Rows out;
  for (const auto& p : r.profiles)
    if (is_engine_phase(p.phase)) out.emplace(std::make_pair(p.phase, p.name), &p);
  return out;
}

// The time-weighted median of head/base over the kernels of `phase` on both sides with enough
// samples; NaN with fewer than kMinCalibrationKernels of them (the kernels then judged as timed).
double machine_factor(const Rows& base, const Rows& head, const std::string& phase,
                      size_t min_samples) {
  std::vector<std::pair<double, double>> ratios;  // (ratio, weight)
  for (const auto& [key, b] : base) {
    if (key.first != phase || key.second == kStepRow) continue;
    const auto h = head.find(key);
    if (h == head.end() || b->samples_ns.size() < min_samples ||
        h->second->samples_ns.size() < min_samples)
      continue;
    const double bm = row_median(*b), hm = row_median(*h->second);
    if (bm > 0 && hm > 0) ratios.emplace_back(hm / bm, b->total_ns);
  }
  return ratios.size() < kMinCalibrationKernels ? kNaN : weighted_median(std::move(ratios));
}

std::vector<double> scaled(const std::vector<double>& v, double by) {
  std::vector<double> out(v);
  for (double& x : out) x /= by;
  return out;
}

PerfChange one_side(const std::string& case_id, const store::ProfileData& p, double phase_ns,
                    bool head) {
  PerfChange c;
  c.case_id = case_id;
  c.phase = p.phase;
  c.name = p.name;
  (head ? c.head_median_ns : c.base_median_ns) = row_median(p);
  (head ? c.head_samples : c.base_samples) = p.samples_ns.size();
  c.p_value = kNaN;
  c.change = kNaN;
  c.share = phase_ns > 0 ? p.total_ns / phase_ns : kNaN;
  c.verdict = head ? "appeared" : "vanished";
  c.test = "presence";
  return c;
}

}  // namespace

bool is_engine_phase(const std::string& phase) { return phase.starts_with("steady/engine"); }

std::map<std::string, double> engine_phase_ns(const std::vector<store::ProfileData>& rows) {
  std::map<std::string, double> steps, kernels;
  for (const auto& p : rows) {
    if (is_engine_phase(p.phase)) (p.name == kStepRow ? steps : kernels)[p.phase] += p.total_ns;
  }
  for (const auto& [phase, t] : steps) kernels[phase] = t;
  return kernels;
}

void diff_engine_kernels(const store::ResultData& base, const store::ResultData& head,
                         const DiffOptions& options, double threshold, std::vector<PerfChange>* out,
                         std::vector<EngineShift>* shifts) {
  const Rows b_rows = engine_rows(base), h_rows = engine_rows(head);
  if (b_rows.empty() && h_rows.empty()) return;
  const auto b_time = engine_phase_ns(base.profiles), h_time = engine_phase_ns(head.profiles);
  std::map<std::string, double> factors;
  const size_t min_samples = static_cast<size_t>(std::max(options.min_samples, 1));
  for (const auto& [key, h] : h_rows) {
    if (key.second == kStepRow) continue;
    const auto b = b_rows.find(key);
    if (b == b_rows.end()) {
      out->push_back(
          one_side(head.case_id, *h, h_time.count(key.first) ? h_time.at(key.first) : 0, true));
      continue;
    }
    if (!factors.count(key.first))
      factors[key.first] = machine_factor(b_rows, h_rows, key.first, min_samples);
    const double factor = std::isnan(factors[key.first]) ? 1 : factors[key.first];
    PerfChange c;
    c.case_id = head.case_id;
    c.phase = key.first;
    c.name = key.second;
    c.base_median_ns = row_median(*b->second);
    c.head_median_ns = row_median(*h);
    c.base_samples = b->second->samples_ns.size();
    c.head_samples = h->samples_ns.size();
    c.threshold = threshold;
    c.normalized = !std::isnan(factors[key.first]);
    c.calibration_change = factors[key.first] - 1;
    c.test = "mann-whitney, engine-calibrated";
    c.share = h_time.count(key.first) && h_time.at(key.first) > 0
                  ? h->total_ns / h_time.at(key.first)
                  : kNaN;
    c.change = c.base_median_ns > 0 ? c.head_median_ns / c.base_median_ns / factor - 1 : kNaN;
    if (c.base_samples < min_samples || c.head_samples < min_samples) {
      c.p_value = kNaN;
      c.verdict = "not enough samples";
    } else {
      c.p_value = mann_whitney_u(scaled(h->samples_ns, factor), b->second->samples_ns).p_value;
      // Worth naming: significant, beyond the threshold, and moving the step by kernel_share of
      // its time (a 1.5 us kernel 12 % slower moves a 1.6 ms step by 0.01 %: the machine's
      // uneven slowdown, not the stack's).
      const double base_share = b_time.count(key.first) && b_time.at(key.first) > 0
                                    ? b->second->total_ns / b_time.at(key.first)
                                    : 0;
      const bool worth =
          c.p_value < options.alpha && std::abs(c.change) * base_share >= options.kernel_share;
      c.verdict = worth && c.change > threshold    ? "regression"
                  : worth && c.change < -threshold ? "improvement"
                                                   : "unchanged";
    }
    out->push_back(std::move(c));
  }
  for (const auto& [key, b] : b_rows) {
    if (key.second == kStepRow || h_rows.count(key)) continue;
    out->push_back(
        one_side(base.case_id, *b, b_time.count(key.first) ? b_time.at(key.first) : 0, false));
  }
  for (const auto& [phase, factor] : factors) {
    EngineShift e{head.case_id, phase};
    e.calibration_change = factor - 1;
    const auto b = b_rows.find({phase, kStepRow}), h = h_rows.find({phase, kStepRow});
    if (b != b_rows.end() && h != h_rows.end()) {
      e.base_step_ns = row_median(*b->second);
      e.head_step_ns = row_median(*h->second);
      if (e.base_step_ns > 0) e.step_change = e.head_step_ns / e.base_step_ns - 1;
    }
    shifts->push_back(e);
  }
}

}  // namespace h0::diff
