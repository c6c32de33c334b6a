#include "eval/accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "diff/statistics.h"

namespace h0::eval {
namespace {

std::string fixed(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string pvalue(double p) {
  char buf[64];
  std::snprintf(buf, sizeof buf, p < 1e-3 ? "%.2g" : "%.3f", p);
  return buf;
}

std::string some_ids(const std::vector<std::string>& ids, size_t max = 5) {
  std::string s;
  for (size_t i = 0; i < ids.size() && i < max; ++i) s += (i ? ", " : "") + ids[i];
  if (ids.size() > max) s += ", ... (" + std::to_string(ids.size()) + " in all)";
  return s;
}

}  // namespace

nlohmann::json ItemResult::to_json() const {
  nlohmann::json j = {{"id", id}, {"answer", answer}, {"correct", correct}};
  if (!choice_logprobs.empty()) j["choice_logprobs"] = choice_logprobs;
  if (logprob) j["logprob"] = *logprob;
  if (!text.empty()) j["text"] = text;
  if (!engine_text.empty()) j["engine_text"] = engine_text;
  if (!error.empty()) j["error"] = error;
  if (attempts > 0) j["attempts"] = attempts;
  return j;
}

ItemResult ItemResult::from_json(const nlohmann::json& j) {
  ItemResult r;
  r.id = j.at("id").get<std::string>();
  r.answer = j.value("answer", "");
  r.correct = j.value("correct", false);
  if (j.contains("choice_logprobs"))
    r.choice_logprobs = j.at("choice_logprobs").get<std::vector<double>>();
  if (j.contains("logprob") && j.at("logprob").is_number())
    r.logprob = j.at("logprob").get<double>();
  r.text = j.value("text", "");
  r.engine_text = j.value("engine_text", "");
  r.error = j.value("error", "");
  r.attempts = j.value("attempts", 0);
  return r;
}

Comparison compare(const std::vector<ItemResult>& head,
                   const std::map<std::string, ItemResult>& ref, const GateSpec& gate) {
  Comparison c;
  std::vector<int> h, r;
  for (const ItemResult& item : head) {
    auto it = ref.find(item.id);
    if (it == ref.end() || !item.error.empty() || !it->second.error.empty()) continue;
    ++c.n;
    h.push_back(item.correct);
    r.push_back(it->second.correct);
    c.head_right += item.correct;
    c.ref_right += it->second.correct;
    c.gained += item.correct && !it->second.correct;
    c.lost += !item.correct && it->second.correct;
    if (item.answer == it->second.answer) {
      ++c.same_answer;
    } else {
      c.flipped.push_back(item.id);
    }
    const ItemResult& ref_item = it->second;
    if (!item.text.empty() || !ref_item.text.empty()) {
      ++c.with_text;
      if (item.text == ref_item.text) {
        ++c.same_text;
      } else {
        c.text_differs.push_back(item.id);
      }
    }
    auto logprob_diff = [&](double a, double b) {
      const double d = std::fabs(a - b);
      if (d > c.max_logprob_diff || std::isnan(d)) {
        c.max_logprob_diff = std::isnan(d) ? INFINITY : d;
        c.worst_logprob_item = item.id;
      }
    };
    if (item.choice_logprobs.size() != ref_item.choice_logprobs.size()) {
      logprob_diff(0, INFINITY);
    } else {
      for (size_t i = 0; i < item.choice_logprobs.size(); ++i)
        logprob_diff(item.choice_logprobs[i], ref_item.choice_logprobs[i]);
    }
    if (item.logprob.has_value() != ref_item.logprob.has_value()) {
      logprob_diff(0, INFINITY);
    } else if (item.logprob) {
      logprob_diff(*item.logprob, *ref_item.logprob);
    }
  }
  if (c.with_text > 0) c.output_agreement = double(c.same_text) / double(c.with_text);
  if (c.n == 0) return c;
  const double n = double(c.n);
  c.score = double(c.head_right) / n;
  c.ref_score = double(c.ref_right) / n;
  c.delta = c.score - c.ref_score;
  c.agreement = double(c.same_answer) / n;
  c.mcnemar_p = diff::mcnemar_exact_p(c.gained, c.lost);
  c.unpaired_p = diff::two_proportion_z_p(c.head_right, c.n, c.ref_right, c.n);
  const diff::Interval d =
      diff::paired_bootstrap_delta(h, r, gate.bootstrap_resamples, gate.bootstrap_seed, gate.alpha);
  c.delta_lo = d.lo;
  c.delta_hi = d.hi;
  // The bootstrap alone says "no drop" whenever nothing was lost, however few the items: the
  // Wilson bound of the lost share keeps a small n from passing.
  const double wilson_lost =
      diff::wilson_interval(c.lost, c.n, gate.alpha).hi - double(c.gained) / n;
  c.drop_bound = std::max(-c.delta_lo, wilson_lost);
  return c;
}

Verdict judge(const Comparison& c, const GateSpec& gate, bool has_reference, int64_t answered,
              int64_t right) {
  std::vector<std::string> fails, notes;
  bool inconclusive = false;
  const diff::Interval own = diff::wilson_interval(right, answered, gate.alpha);
  const double score = answered > 0 ? double(right) / double(answered) : 0;
  const std::string pct = std::to_string(int(std::lround(100 * (1 - gate.alpha)))) + "%";
  const std::string score_text = "score " + fixed(score) + " [" + fixed(own.lo) + ", " +
                                 fixed(own.hi) + "] (" + std::to_string(right) + "/" +
                                 std::to_string(answered) + ", Wilson " + pct + ")";
  if (gate.min_score && score < *gate.min_score)
    fails.push_back(score_text + " is below min_score " + fixed(*gate.min_score));
  if (!has_reference) {
    if (!gate.min_score)
      return {"inconclusive", "inconclusive: no reference to compare with (" + score_text + ")"};
    return {fails.empty() ? "pass" : "fail", fails.empty() ? score_text : fails[0]};
  }
  if (c.n == 0)
    return {"inconclusive",
            "inconclusive: no item was answered on both sides (" + score_text + ")"};
  const std::string vs =
      "vs the reference's " + fixed(c.ref_score) + " on the same " + std::to_string(c.n) + " items";
  if (gate.min_agreement && c.agreement < *gate.min_agreement) {
    fails.push_back("agreement " + fixed(c.agreement) + " < " + fixed(*gate.min_agreement) + ": " +
                    std::to_string(c.flipped.size()) + " items answered differently (" +
                    some_ids(c.flipped) + ")");
  }
  if (gate.min_output_agreement && c.output_agreement < *gate.min_output_agreement) {
    fails.push_back("output agreement " + fixed(c.output_agreement) + " < " +
                    fixed(*gate.min_output_agreement) + ": " +
                    std::to_string(c.text_differs.size()) + " completions differ (" +
                    some_ids(c.text_differs) + ")");
  }
  if (gate.max_logprob_diff && !(c.max_logprob_diff <= *gate.max_logprob_diff)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g > %.3g", c.max_logprob_diff, *gate.max_logprob_diff);
    fails.push_back(std::string("logprobs differ from the reference's by up to ") + buf + " (" +
                    c.worst_logprob_item + ")");
  }
  if (gate.max_drop) {
    const double drop = -c.delta;
    const bool significant = c.mcnemar_p < gate.alpha && c.lost > c.gained;
    const std::string paired = std::to_string(c.lost) + " items lost, " + std::to_string(c.gained) +
                               " gained: McNemar exact p = " + pvalue(c.mcnemar_p) +
                               "; the unpaired z-test alone: p = " + pvalue(c.unpaired_p);
    if (significant && drop > *gate.max_drop) {
      fails.push_back("score dropped " + fixed(drop) + " (" + fixed(c.ref_score) + " -> " +
                      fixed(c.score) + ", more than max_drop " + fixed(*gate.max_drop) +
                      "), significant: " + paired);
    } else if (c.drop_bound <= *gate.max_drop) {
      notes.push_back("no drop beyond " + fixed(*gate.max_drop) + " (at most " +
                      fixed(c.drop_bound) + " at " + pct + "; " + paired + ")");
    } else {
      inconclusive = true;
      notes.push_back("inconclusive: n too small: " + std::to_string(c.n) +
                      " items allow a drop of up to " + fixed(c.drop_bound) + " at " + pct +
                      " (max_drop " + fixed(*gate.max_drop) + "; " + paired + ")");
    }
  }
  std::string tail = score_text + " " + vs + ", agreement " + fixed(c.agreement);
  if (!fails.empty()) {
    std::string m = fails[0];
    for (size_t i = 1; i < fails.size(); ++i) m += "; " + fails[i];
    return {"fail", m + " (" + tail + ")"};
  }
  std::string m = inconclusive ? notes.back() + "; " + tail : tail;
  if (!inconclusive)
    for (const auto& n : notes) m += "; " + n;
  return {inconclusive ? "inconclusive" : "pass", m};
}

}  // namespace h0::eval
