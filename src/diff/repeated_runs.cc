// diff_repeated_runs: timings over several runs a side, the run as the unit of replication.
// Samples within one run share that run's machine state (a neighbour's load, the clock, where
// the kernel's memory landed), so a test over pooled samples treats one run's luck as evidence:
// that is what makes a pairwise diff cry wolf. Each run contributes one value, its calibrated
// median; the sides are compared by a t test on their logs, and a change must also exceed the
// base side's own run-to-run spread.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "base/check.h"
#include "diff/diff.h"
#include "diff/statistics.h"

namespace h0::diff {
namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // case, phase, name

// One run's steady row of a case that passed: its median and the host loop's next to it.
struct RunValue {
  double median_ns = 0, calibration_ns = 0;
};

// Per key, one slot per run (empty where the run lacks the row or the case did not pass).
std::map<Key, std::vector<std::optional<RunValue>>> run_values(
    const std::vector<store::RunData>& runs) {
  std::map<Key, std::vector<std::optional<RunValue>>> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    std::set<std::string> seen;
    for (const auto& r : runs[i].results) {
      if (!seen.insert(r.case_id).second || !is_good(r.status)) continue;
      for (const auto& p : r.profiles) {
        // An engine phase's step time (its "(step)" row) is judged too: it is how a stack slower
        // for every kernel alike shows, which the kernels' own calibration takes out.
        if (!p.phase.starts_with("steady") || (p.name == "(step)" && !is_engine_phase(p.phase)))
          continue;
        auto& slots = out[{r.case_id, p.phase, p.name}];
        slots.resize(runs.size());
        if (!slots[i]) slots[i] = RunValue{row_median(p), calibration_median(r, p.phase, 1)};
      }
    }
  }
  return out;
}

// An engine's kernels (steady/engine* rows) have no host loop beside them: each run's calibration
// is the engine's own — the time-weighted median, over the kernels of that case and phase, of the
// run's median against the kernel's median over all the runs of both sides — so a run on a slower
// machine moves no kernel, as in a pairwise diff (diff_engine_kernels). The phase's "(step)" row
// is left as measured: a stack slower for every kernel alike is a slower step, judged over the
// runs like any timing (a change beyond the base side's run-to-run spread).
void calibrate_engine_rows(std::map<Key, std::vector<std::optional<RunValue>>>* base,
                           std::map<Key, std::vector<std::optional<RunValue>>>* head) {
  std::map<std::pair<std::string, std::string>, std::vector<Key>> groups;
  for (const auto& [key, slots] : *base) {
    if (is_engine_phase(std::get<1>(key)) && std::get<2>(key) != "(step)" && head->count(key))
      groups[{std::get<0>(key), std::get<1>(key)}].push_back(key);
  }
  for (const auto& [group, keys] : groups) {
    // Each kernel's median over every run of both sides, once.
    std::vector<double> overall;
    for (const Key& key : keys) {
      std::vector<double> all;
      for (auto* s : {base, head})
        for (const auto& v : s->at(key))
          if (v) all.push_back(v->median_ns);
      overall.push_back(median(all));
    }
    for (auto* side : {base, head}) {
      for (size_t i = 0; i < side->at(keys[0]).size(); ++i) {
        std::vector<std::pair<double, double>> ratios;  // (run / all runs, weight)
        for (size_t k = 0; k < keys.size(); ++k) {
          const auto& mine = side->at(keys[k])[i];
          if (mine && overall[k] > 0 && mine->median_ns > 0)
            ratios.emplace_back(mine->median_ns / overall[k], overall[k]);
        }
        const double factor = weighted_median(std::move(ratios));
        if (std::isnan(factor)) continue;
        for (const Key& key : keys)
          if (auto& v = side->at(key)[i]) v->calibration_ns = factor;
      }
    }
  }
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

PerfChange compare(const Key& key, const std::vector<std::optional<RunValue>>& base,
                   const std::vector<std::optional<RunValue>>& head, double threshold,
                   const DiffOptions& options, bool paired) {
  PerfChange c;
  std::tie(c.case_id, c.phase, c.name) = key;
  c.test = paired ? "paired" : "welch";
  // The runs both sides can use: paired, the rounds where both have the row.
  std::vector<RunValue> b, h;
  for (size_t i = 0; i < std::max(base.size(), head.size()); ++i) {
    const bool hb = i < base.size() && base[i], hh = i < head.size() && head[i];
    if (paired && !(hb && hh)) continue;
    if (hb) b.push_back(*base[i]);
    if (hh) h.push_back(*head[i]);
  }
  c.base_runs = b.size();
  c.head_runs = h.size();
  c.base_samples = b.size();
  c.head_samples = h.size();
  const auto medians = [](const std::vector<RunValue>& v) {
    std::vector<double> m;
    for (const auto& x : v) m.push_back(x.median_ns);
    return m;
  };
  c.base_median_ns = median(medians(b));
  c.head_median_ns = median(medians(h));
  c.normalized = !b.empty() && !h.empty() && std::all_of(b.begin(), b.end(), [](const RunValue& v) {
    return v.calibration_ns > 0;
  }) && std::all_of(h.begin(), h.end(), [](const RunValue& v) { return v.calibration_ns > 0; });
  const auto logs = [&](const std::vector<RunValue>& v) {
    std::vector<double> l;
    for (const auto& x : v)
      l.push_back(std::log(x.median_ns / (c.normalized ? x.calibration_ns : 1.0)));
    return l;
  };
  const std::vector<double> lb = logs(b), lh = logs(h);
  if (b.size() < 2 || h.size() < 2) {
    c.change = !b.empty() && !h.empty() ? std::exp(mean(lh) - mean(lb)) - 1 : std::nan("");
    c.p_value = std::nan("");
    c.threshold = threshold;
    c.verdict = "not enough samples";
    return c;
  }
  c.change = std::exp(mean(lh) - mean(lb)) - 1;
  // The noise a change must exceed: unpaired, the base side's run-to-run spread; paired, the
  // spread of the rounds' differences (what the rounds share, a slower machine for a round,
  // cancels in them and is no noise of the comparison).
  const auto spread = [](const std::vector<double>& v) {
    return std::exp(*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) -
           1;
  };
  if (paired) {
    std::vector<double> d;
    for (size_t i = 0; i < lb.size(); ++i) d.push_back(lh[i] - lb[i]);
    c.p_value = one_sample_t_test(d).p_value;
    c.noise = spread(d);
  } else {
    c.p_value = welch_t_test(lh, lb).p_value;
    c.noise = spread(lb);
  }
  c.threshold = std::max(threshold, c.noise);
  const bool significant = c.p_value < options.alpha;
  c.verdict = significant && c.change > c.threshold    ? "regression"
              : significant && c.change < -c.threshold ? "improvement"
                                                       : "unchanged";
  if (c.normalized && !is_engine_phase(c.phase)) {
    std::vector<double> cb, ch;
    for (const auto& x : b) cb.push_back(std::log(x.calibration_ns));
    for (const auto& x : h) ch.push_back(std::log(x.calibration_ns));
    c.calibration_change = std::exp(mean(ch) - mean(cb)) - 1;
    if (c.verdict != "unchanged" && std::abs(c.calibration_change) > std::abs(c.change))
      c.verdict = "unreliable machine";
  }
  return c;
}

}  // namespace

DiffReport diff_repeated_runs(const std::vector<store::RunData>& base,
                              const std::vector<store::RunData>& head, const DiffOptions& options,
                              bool paired) {
  H0_CHECK(!base.empty() && !head.empty()) << "diff_repeated_runs needs a run on each side";
  DiffReport r = diff_runs(base.back(), head.back(), options);
  // The engine kernels on one side only, as the newest runs show them; every timing else by run.
  std::erase_if(r.perf, [](const PerfChange& p) {
    return p.verdict != "appeared" && p.verdict != "vanished";
  });
  auto base_values = run_values(base), head_values = run_values(head);
  calibrate_engine_rows(&base_values, &head_values);
  // The newest head run's rows, in its order; thresholds from its results' details.
  std::set<Key> done;
  for (const auto& res : head.back().results) {
    const double threshold = threshold_override(res).value_or(options.perf_threshold);
    std::map<std::string, double> phase_ns = engine_phase_ns(res.profiles);
    for (const auto& p : res.profiles) {
      const Key key{res.case_id, p.phase, p.name};
      const bool step = p.name == "(step)";
      if (!p.phase.starts_with("steady") || (step && !is_engine_phase(p.phase)) ||
          !done.insert(key).second)
        continue;
      const auto b = base_values.find(key), h = head_values.find(key);
      if (b == base_values.end() || h == head_values.end()) continue;
      PerfChange c = compare(key, b->second, h->second, threshold, options, paired);
      // An engine kernel's change is named where it moves its step by kernel_share, as in a
      // pairwise diff (diff_engine_kernels).
      if (is_engine_phase(p.phase) && !step && phase_ns[p.phase] > 0) {
        c.share = p.total_ns / phase_ns[p.phase];
        if ((c.verdict == "regression" || c.verdict == "improvement") &&
            std::abs(c.change) * c.share < options.kernel_share)
          c.verdict = "unchanged";
      }
      r.perf.push_back(std::move(c));
    }
  }
  // A step slower because a kernel named in its phase is slower says nothing more: the step is
  // named only when no kernel of its phase is (a stack slower for every kernel alike).
  std::set<std::pair<std::string, std::string>> named;
  for (const auto& p : r.perf) {
    if (is_engine_phase(p.phase) && p.name != "(step)" &&
        (p.verdict == "regression" || p.verdict == "improvement"))
      named.insert({p.case_id, p.phase});
  }
  for (auto& p : r.perf) {
    if (p.name == "(step)" && named.count({p.case_id, p.phase})) p.verdict = "unchanged";
  }
  const int compared = r.summary.compared;
  r.summary = summarize(r);
  r.summary.compared = compared;
  return r;
}

}  // namespace h0::diff
