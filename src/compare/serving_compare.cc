#include "compare/serving_compare.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/text_format.h"

namespace h0::compare {
namespace {

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
                  printf_string("%.4g", *b.logprob) + " vs " + printf_string("%.4g", *a.logprob) +
                  ", |difference| " + printf_string("%.4g", d) + " > bound " +
                  printf_string("%.4g", atol);
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

std::string integrity_problem(const service::Result& r, int64_t max_tokens,
                              const std::set<int64_t>& ends, bool ignore_eos, int64_t prompt_tokens,
                              int* compared, std::vector<std::string>* not_compared) {
  int n = 0;
  auto unjudged = [&](const std::string& why) {
    if (not_compared) not_compared->push_back(why);
  };
  std::vector<int64_t> out = r.token_ids;
  if (out.empty()) {
    for (const service::TokenInfo& t : r.tokens) {
      if (!t.id) {
        out.clear();
        break;
      }
      out.push_back(*t.id);
    }
  }
  std::string problem;
  auto fails = [&](const std::string& why) {
    if (problem.empty()) problem = why;
  };
  if (r.completion_tokens < 0) {
    unjudged("no usage.completion_tokens");
  } else if (out.empty()) {
    unjudged("no token ids to count");
  } else {
    ++n;
    if (r.completion_tokens != int64_t(out.size()))
      fails("usage.completion_tokens " + std::to_string(r.completion_tokens) + " but " +
            std::to_string(out.size()) + " tokens came back");
  }
  if (prompt_tokens < 0 && !r.prompt_token_ids.empty())
    prompt_tokens = int64_t(r.prompt_token_ids.size());
  if (r.prompt_tokens < 0) {
    unjudged("no usage.prompt_tokens");
  } else if (prompt_tokens >= 0) {
    ++n;
    if (r.prompt_tokens != prompt_tokens)
      fails("usage.prompt_tokens " + std::to_string(r.prompt_tokens) + " for a prompt of " +
            std::to_string(prompt_tokens) + " tokens");
  }
  if (!out.empty()) {
    ++n;
    for (size_t k = 0; !ignore_eos && k + 1 < out.size(); ++k) {
      if (ends.contains(out[k])) {
        fails("an end token (id " + std::to_string(out[k]) + ") at " + std::to_string(k) + " of " +
              std::to_string(out.size()) + ": generation went on past it");
        break;
      }
    }
    const int64_t count = int64_t(out.size());
    const bool ended = ends.contains(out.back());
    if (r.finish_reason == "length" && count != max_tokens)
      fails("finish_reason length after " + std::to_string(count) + " of max_tokens " +
            std::to_string(max_tokens));
    if (ended && !ignore_eos && r.finish_reason != "stop")
      fails("the last token is an end token (id " + std::to_string(out.back()) +
            ") but finish_reason is " + r.finish_reason);
    if (count > max_tokens)
      fails(std::to_string(count) + " tokens for max_tokens " + std::to_string(max_tokens));
  }
  if (compared) *compared += n;
  return problem;
}

}  // namespace h0::compare
