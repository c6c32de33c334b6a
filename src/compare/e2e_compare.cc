#include "compare/e2e_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "compare/served_text.h"
#include "service/openai_protocol.h"

namespace h0::compare {
namespace {

std::string ids_around(const std::vector<int64_t>& ids, size_t at) {
  std::string s = "[";
  const size_t begin = at >= 3 ? at - 3 : 0, end = std::min(ids.size(), at + 4);
  if (begin > 0) s += "... ";
  for (size_t i = begin; i < end; ++i) s += (i > begin ? ", " : "") + std::to_string(ids[i]);
  return s + (end < ids.size() ? " ...]" : "]");
}

// First position where the two differ (the shorter's length when one is a prefix); -1 if equal.
template <typename Seq>
int64_t first_difference(const Seq& a, const Seq& b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return int64_t(i);
  }
  return a.size() == b.size() ? -1 : int64_t(n);
}

std::vector<int64_t> golden_ids(const nlohmann::json& g) {
  return g.value("token_ids", std::vector<int64_t>{});
}

// The ids of the response: token_ids, else per-token ids of the logprobs.
std::vector<int64_t> response_ids(const service::Result& r) {
  if (!r.token_ids.empty()) return r.token_ids;
  std::vector<int64_t> ids;
  for (const auto& t : r.tokens) {
    if (!t.id) return {};
    ids.push_back(*t.id);
  }
  return ids;
}

}  // namespace

// Up to `n` bytes of `text` from byte `at`, both ends moved back to a character's first byte, so
// an excerpt of a model's text never splits a UTF-8 sequence.
static std::string excerpt(const std::string& text, size_t at, size_t n) {
  auto boundary = [&](size_t i) {
    i = std::min(i, text.size());
    while (i > 0 && i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) --i;
    return i;
  };
  const size_t begin = boundary(at), end = boundary(at + n);
  return text.substr(begin, end > begin ? end - begin : 0);
}

// The golden's token that holds byte `at` of its text (decoding growing prefixes of its ids as
// the golden's text was decoded: special tokens skipped); -1 when unknown.
int64_t golden_token_at(const std::vector<int64_t>& ids, size_t at,
                        const tokenizer::Tokenizer& tok) {
  tokenizer::DecodeStream stream(tok, true);  // decode of the ids so far, one id at a time
  std::string text;
  for (size_t k = 0; k < ids.size(); ++k) {
    stream.push(int32_t(ids[k]), &text);
    if (text.size() > at) return int64_t(k);
  }
  return ids.empty() ? -1 : int64_t(ids.size());
}

ResponseVerdict compare_exact(const nlohmann::json& golden, const service::Result& r,
                              const tokenizer::Tokenizer* tok) {
  ResponseVerdict v;
  const std::vector<int64_t> want = golden_ids(golden), got = response_ids(r);
  if (!got.empty() || !want.empty()) {
    if (got.empty()) {
      v.message = "the service returned no token ids: compared the text";
    } else if (const int64_t d = first_difference(got, want); d >= 0) {
      v.pass = false;
      v.first_difference = d;
      v.message = "token ids differ from the golden at position " + std::to_string(d) + ": got " +
                  ids_around(got, size_t(d)) + ", golden " + ids_around(want, size_t(d));
      return v;
    }
  }
  std::string text = golden.value("text", ""), answer = r.text;
  if (answer != text) {
    // The same ids: the text may differ where the engine's detokenizer settles incomplete UTF-8
    // (served_text.h); without ids only U+FFFD at the ends may differ.
    const std::vector<int64_t> prompt = golden.value("prompt_token_ids", r.prompt_token_ids);
    const SettledText s = got.empty() ? settle_text(answer, text, nullptr, {}, {})
                                      : settle_text(answer, text, tok, prompt, got);
    if (s.same) {
      answer = text;
      v.message +=
          std::string(v.message.empty() ? "" : "; ") +
          "the text differs from the golden's only in incomplete UTF-8 at its ends: " + s.note;
    }
  }
  if (const int64_t d = first_difference(answer, text); d >= 0) {
    v.pass = false;
    const int64_t token =
        got.empty() && tok != nullptr ? golden_token_at(want, size_t(d), *tok) : -1;
    v.first_difference = token >= 0 ? token : d;
    v.message = "text differs from the golden at " +
                (token >= 0 ? "token " + std::to_string(token) + " (byte " + std::to_string(d) + ")"
                            : "byte " + std::to_string(d)) +
                ": got \"" + excerpt(answer, size_t(d), 40) + "\", golden \"" +
                excerpt(text, size_t(d), 40) + "\"";
    return v;
  }
  const std::string reason = golden.value("finish_reason", "");
  if (!reason.empty() && r.finish_reason != reason) {
    v.pass = false;
    v.message = "finish_reason " + r.finish_reason + ", golden " + reason;
  }
  return v;
}

ResponseVerdict compare_logprobs(const nlohmann::json& golden, const service::Result& r,
                                 double atol) {
  ResponseVerdict v;
  const nlohmann::json steps = golden.value("logprobs", nlohmann::json::array());
  if (steps.empty()) {
    v.pass = false;
    v.message = "the golden has no logprobs to compare";
    return v;
  }
  if (r.tokens.empty() || !r.tokens[0].logprob) {
    v.pass = false;
    v.message = "the service returned no logprobs (asked for top_logprobs)";
    return v;
  }
  const std::vector<int64_t> got = response_ids(r);
  if (got.empty()) {
    v.pass = false;
    v.message =
        "the service's logprobs carry no token ids (return_tokens_as_token_ids / return_token_ids)";
    return v;
  }
  const size_t n = std::min(got.size(), steps.size());
  for (size_t i = 0; i < n; ++i) {
    const int64_t want = steps[i].at("id").get<int64_t>();
    if (got[i] == want) {
      if (i < r.tokens.size() && r.tokens[i].logprob) {
        const double diff = std::fabs(*r.tokens[i].logprob - steps[i].at("logprob").get<double>());
        v.max_logprob_diff = std::max(v.max_logprob_diff, diff);
        if (diff > atol && v.pass) {
          v.pass = false;
          v.first_difference = int64_t(i);
          v.message = "logprob of token " + std::to_string(want) + " at position " +
                      std::to_string(i) + " differs by " + std::to_string(diff) + " (> " +
                      std::to_string(atol) + ")";
        }
      }
      continue;
    }
    // Parted: each token must be among the other's top logprobs; nothing after is compared.
    v.first_difference = int64_t(i);
    bool ours_in_golden = false, golden_in_ours = false;
    for (const auto& pair : steps[i].value("top", nlohmann::json::array()))
      ours_in_golden |= pair.at(0).get<int64_t>() == got[i];
    if (i < r.tokens.size()) {
      for (const auto& [text, lp] : r.tokens[i].top)
        golden_in_ours |= service::token_id_of(text) == want;
    }
    if (!ours_in_golden || !golden_in_ours) {
      v.pass = false;
      v.message = "position " + std::to_string(i) + ": got token " + std::to_string(got[i]) +
                  ", golden " + std::to_string(want) +
                  (ours_in_golden ? "" : "; ours is not in the golden's top logprobs") +
                  (golden_in_ours ? "" : "; the golden's is not in ours");
    } else if (v.pass) {
      v.message = "parted from the golden at position " + std::to_string(i) +
                  " at a near tie (each in the other's top)";
    }
    return v;
  }
  if (got.size() < steps.size() && r.finish_reason != "stop") {
    v.pass = false;
    v.first_difference = int64_t(got.size());
    v.message = "the service stopped after " + std::to_string(got.size()) + " tokens (golden " +
                std::to_string(steps.size()) + ")";
  }
  return v;
}

ResponseVerdict compare_prompt(const nlohmann::json& golden, const service::Result& r) {
  ResponseVerdict v;
  const std::vector<int64_t> want = golden.value("prompt_token_ids", std::vector<int64_t>{});
  if (want.empty() || r.prompt_token_ids.empty()) return v;
  if (const int64_t d = first_difference(r.prompt_token_ids, want); d >= 0) {
    v.pass = false;
    v.first_difference = d;
    v.message = "the prompt's token ids differ from the golden's at position " + std::to_string(d) +
                ": got " + ids_around(r.prompt_token_ids, size_t(d)) + ", golden " +
                ids_around(want, size_t(d)) + " (the chat template or the tokenizer differs)";
  }
  return v;
}

ResponseVerdict compare_responses(const service::Result& a, const service::Result& b) {
  ResponseVerdict v;
  const std::vector<int64_t> ia = response_ids(a), ib = response_ids(b);
  if (!ia.empty() && !ib.empty()) {
    if (const int64_t d = first_difference(ia, ib); d >= 0) {
      v.pass = false;
      v.first_difference = d;
      v.message = "token ids differ at position " + std::to_string(d) + ": " +
                  ids_around(ia, size_t(d)) + " vs " + ids_around(ib, size_t(d));
      return v;
    }
  }
  std::string ta = a.text, tb = b.text;
  if (ta != tb) {  // U+FFFD at the ends one side settled differently is no difference: noted
    if (const SettledText s = settle_text(ta, tb, nullptr, {}, {}); s.same) {
      ta = tb;
      v.message = s.note;
    }
  }
  if (const int64_t d = first_difference(ta, tb); d >= 0) {
    v.pass = false;
    v.first_difference = d;
    v.message = "text differs at byte " + std::to_string(d) + ": \"" + excerpt(ta, size_t(d), 40) +
                "\" vs \"" + excerpt(tb, size_t(d), 40) + "\"";
  }
  return v;
}

}  // namespace h0::compare
