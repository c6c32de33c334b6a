#include "compare/served_text.h"

#include <algorithm>
#include <vector>

#include "base/utf8.h"

namespace h0::compare {
namespace {

bool ends_with_replacement(std::string_view s) { return s.ends_with(kReplacementCharacter); }

// The bytes of leading (or trailing) U+FFFDs of `s`.
size_t leading_replacements(std::string_view s) {
  size_t n = 0;
  while (s.substr(n).starts_with(kReplacementCharacter)) n += kReplacementCharacter.size();
  return n;
}
size_t trailing_replacements(std::string_view s) {
  size_t n = 0;
  while (s.substr(0, s.size() - n).ends_with(kReplacementCharacter))
    n += kReplacementCharacter.size();
  return n;
}

bool only_replacements(std::string_view s) { return leading_replacements(s) == s.size(); }

// "\"text\" (hex)". Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on the
// chain of operator+ here.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  out.append(text);
  out.append("\" (");
  out.append(hex_bytes(text));
  out.push_back(')');
  return out;
}

std::string id_list(std::span<const int64_t> ids) {
  std::string out;
  for (const int64_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

// Without the tokenizer: equal once the runs of U+FFFD at both ends of both texts are gone.
SettledText settle_replacements(std::string_view got, std::string_view expected) {
  SettledText s;
  const auto core = [](std::string_view t) {
    t.remove_prefix(leading_replacements(t));
    t.remove_suffix(trailing_replacements(t));
    return t;
  };
  if (core(got) != core(expected)) return s;
  s.same = true;
  s.note =
      "the texts differ only in U+FFFD at their ends (incomplete characters an incremental "
      "detokenizer settles differently): got " +
      quoted(got.substr(0, leading_replacements(got))) + " at the start and " +
      quoted(got.substr(got.size() - trailing_replacements(got))) + " at the end, expected " +
      quoted(expected.substr(0, leading_replacements(expected))) + " and " +
      quoted(expected.substr(expected.size() - trailing_replacements(expected)));
  return s;
}

}  // namespace

std::string hex_bytes(std::string_view bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    if (!out.empty()) out += ' ';
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

SettledText settle_text(std::string_view got, std::string_view expected,
                        const tokenizer::Tokenizer* tok, std::span<const int64_t> prompt_ids,
                        std::span<const int64_t> output_ids) {
  if (got == expected) return {true, ""};
  if (tok == nullptr || output_ids.empty()) return settle_replacements(got, expected);

  // The decode of prompt + output as it grows; `out_start`: where the output's text begins.
  tokenizer::DecodeStream stream(*tok, true);
  std::string full;
  for (const int64_t id : prompt_ids) stream.push(int32_t(id), &full);
  const bool prompt_incomplete = ends_with_replacement(full);
  const size_t out_start = full.size() - (prompt_incomplete ? kReplacementCharacter.size() : 0);
  std::vector<size_t> length;    // the text's length after each output token
  std::vector<bool> incomplete;  // whether it then ended in an incomplete character
  for (const int64_t id : output_ids) {
    stream.push(int32_t(id), &full);
    length.push_back(full.size());
    incomplete.push_back(ends_with_replacement(full));
  }
  // Where the engine's text may end: the whole output (with or without its lossy U+FFFD), or
  // where the text last decoded to whole characters (the tokens after it held back).
  size_t settled = out_start, held_from = 0;
  for (size_t j = 0; j < output_ids.size(); ++j) {
    if (!incomplete[j]) settled = length[j], held_from = j + 1;
  }
  const std::vector<std::pair<size_t, size_t>> ends = {
      // (end, first held-back token)
      {full.size(), output_ids.size()},
      {settled, held_from},
      {full.size() - trailing_replacements(full), output_ids.size()}};

  const size_t lead = leading_replacements(got);
  const std::string_view body = got.substr(lead);
  for (const auto& [end, held] : ends) {
    const std::string_view text = std::string_view(full).substr(0, end);
    if (!text.ends_with(body)) continue;
    const size_t start = end - body.size();
    // Prompt text (or U+FFFD where the output's own text starts) only after an incomplete end.
    if ((start < out_start || (lead > 0 && start == out_start)) && !prompt_incomplete) continue;
    if (start > out_start && !only_replacements(text.substr(out_start, start - out_start)))
      continue;  // the output's own start is missing
    SettledText s{true, ""};
    const auto add = [&](const std::string& part) {
      s.note += (s.note.empty() ? "" : "; ") + part;
    };
    if (start < out_start || (lead > 0 && start <= out_start)) {
      const size_t n = lead + (start < out_start ? out_start - start : 0);
      // A long tail is named by its last bytes (vLLM 0.32 has returned a 2,040-token prompt's
      // whole text, 6,252 bytes, ahead of the output).
      const size_t shown = std::min<size_t>(n, 48);
      add("its text starts with " + std::to_string(n) +
          " bytes of the prompt's tail, which ends in an incomplete character its detokenizer "
          "held back until the first output token: " +
          (shown < n ? "(the last " + std::to_string(shown) + ") " : std::string()) +
          quoted(got.substr(n - shown, shown)));
    }
    if (held < output_ids.size()) {
      add("it held back the text of the last " + std::to_string(output_ids.size() - held) +
          " token(s) (ids " + id_list(output_ids.subspan(held)) + "), which end in an incomplete " +
          "character: " + quoted(std::string_view(full).substr(end)));
    } else if (end < full.size()) {
      add("its text lacks the output's trailing U+FFFD (an incomplete character): " +
          quoted(std::string_view(full).substr(end)));
    }
    if (s.note.empty())
      add("the output's text joins the prompt's (its first bytes complete the prompt's last "
          "character): expected " +
          quoted(expected.substr(0, std::min<size_t>(expected.size(), 12))) + " at the start");
    return s;
  }
  return {};  // the ids' text explains no reading of `got`
}

}  // namespace h0::compare
