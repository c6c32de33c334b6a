#include "suite/filter.h"

namespace h0::suite {
namespace {

// The non-empty ':'-separated patterns of `part`.
std::vector<std::string> split_patterns(std::string_view part) {
  std::vector<std::string> patterns;
  size_t start = 0;
  while (start <= part.size()) {
    size_t end = part.find(':', start);
    if (end == std::string_view::npos) end = part.size();
    if (end > start) patterns.emplace_back(part.substr(start, end - start));
    start = end + 1;
  }
  return patterns;
}

// Where the negative part's '-' is, or npos.
size_t negative_start(std::string_view spec) {
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] != '-') continue;
    if (i == 0) return i;
    const char before = spec[i - 1];
    if (before == ':' || before == '*' || before == '?' || before == ']') return i;
  }
  return std::string_view::npos;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  // Greedy matching with one backtrack point: the last '*' seen and where its run ended.
  size_t p = 0, t = 0;
  size_t star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_text = t;
    } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Filter::Filter(const std::string& spec) {
  const size_t dash = negative_start(spec);
  const std::string_view all(spec);
  positive_ = split_patterns(all.substr(0, dash));
  if (dash != std::string_view::npos) negative_ = split_patterns(all.substr(dash + 1));
  if (positive_.empty()) positive_.push_back("*");
}

bool Filter::matches(const std::string& case_id) const {
  bool positive = false;
  for (const auto& p : positive_) positive = positive || glob_match(p, case_id);
  if (!positive) return false;
  for (const auto& n : negative_) {
    if (glob_match(n, case_id)) return false;
  }
  return true;
}

}  // namespace h0::suite
