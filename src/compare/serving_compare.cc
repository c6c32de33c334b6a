#include "compare/serving_compare.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace h0::compare {
namespace {

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string token_label(const service::TokenInfo& t) {
  std::string s = "'" + t.text + "'";
  if (t.id) s += " (id " + std::to_string(*t.id) + ")";
  return s;
}

}  // namespace

ResponseVerdict same_answer(const service::Result& ref, const service::Result& got, double atol) {
  ResponseVerdict v = compare_responses(ref, got);
  if (!v.pass) return v;
  const size_t n = std::min(ref.tokens.size(), got.tokens.size());
  for (size_t i = 0; i < n; ++i) {
    const service::TokenInfo &a = ref.tokens[i], &b = got.tokens[i];
    if (!a.logprob || !b.logprob) continue;
    const double d = std::abs(*a.logprob - *b.logprob);
    v.max_logprob_diff = std::max(v.max_logprob_diff, d);
    if (d > atol && v.pass) {
      v.pass = false;
      v.first_difference = int64_t(i);
      v.message = "token " + std::to_string(i) + " " + token_label(b) + ": logprob " +
                  fixed(*b.logprob) + " vs " + fixed(*a.logprob) + ", |difference| " + fixed(d) +
                  " > bound " + fixed(atol);
    }
  }
  return v;
}

double top_k_kl(const TopLogprobs& p, const TopLogprobs& q) {
  constexpr double kTiny = 1e-12;
  std::map<std::string, std::pair<double, double>> probs;  // token -> (p, q); -1 when unlisted
  double p_listed = 0, q_listed = 0, p_min = 1, q_min = 1;
  for (const auto& [t, lp] : p) {
    const double x = std::exp(lp);
    if (probs.emplace(t, std::make_pair(x, -1.0)).second) p_listed += x, p_min = std::min(p_min, x);
  }
  for (const auto& [t, lp] : q) {
    const double x = std::exp(lp);
    auto [it, fresh] = probs.emplace(t, std::make_pair(-1.0, x));
    if (!fresh) {
      if (it->second.second >= 0) continue;  // a token listed twice: the first counts
      it->second.second = x;
    }
    q_listed += x, q_min = std::min(q_min, x);
  }
  const double p_rest = std::max(1 - p_listed, 0.0), q_rest = std::max(1 - q_listed, 0.0);
  const double p_fill = std::min(p_rest, p_min), q_fill = std::min(q_rest, q_min);
  double p_union = 0, q_union = 0, kl = 0;
  for (auto& [t, pq] : probs) {
    const double a = std::max(pq.first >= 0 ? pq.first : p_fill, kTiny);
    const double b = std::max(pq.second >= 0 ? pq.second : q_fill, kTiny);
    p_union += a, q_union += b;
    kl += a * std::log(a / b);
  }
  const double a = std::max(1 - p_union, kTiny), b = std::max(1 - q_union, kTiny);
  if (1 - p_union > kTiny) kl += a * std::log(a / b);
  return std::max(kl, 0.0);
}

}  // namespace h0::compare
