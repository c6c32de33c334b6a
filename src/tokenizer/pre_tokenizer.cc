#include "tokenizer/pre_tokenizer.h"

#include <algorithm>

#include "tokenizer/byte_level.h"

namespace h0::tokenizer {
namespace {

// GPT-2's pattern, which HF's ByteLevel pre-tokenizer applies when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Segment {
  Span span;
  bool is_match;
};

// `text` cut into alternating non-match and match segments that cover it.
std::vector<Segment> segments_of(std::string_view text, const std::vector<Span>& matches,
                                 bool invert) {
  std::vector<Segment> out;
  size_t prev = 0;
  for (const Span& m : matches) {
    if (prev != m.begin) out.push_back({{prev, m.begin}, invert});
    out.push_back({m, !invert});
    prev = m.end;
  }
  if (prev != text.size() || out.empty()) out.push_back({{prev, text.size()}, invert});
  return out;
}

// HF's fold for MergedWithPrevious (forward) and, on reversed input, MergedWithNext.
std::vector<Segment> merge_matches_into_neighbour(const std::vector<Segment>& segments,
                                                  bool into_previous) {
  std::vector<Segment> acc;
  bool previous_match = false;
  const size_t n = segments.size();
  for (size_t k = 0; k < n; ++k) {
    const Segment& s = segments[into_previous ? k : n - 1 - k];
    if (s.is_match && !previous_match && !acc.empty()) {
      if (into_previous)
        acc.back().span.end = s.span.end;
      else
        acc.back().span.begin = s.span.begin;
    } else {
      acc.push_back({s.span, false});
    }
    previous_match = s.is_match;
  }
  if (!into_previous) std::reverse(acc.begin(), acc.end());
  return acc;
}

std::vector<Segment> contiguous(const std::vector<Segment>& segments) {
  std::vector<Segment> acc;
  bool previous_match = false;
  for (const Segment& s : segments) {
    if (s.is_match == previous_match && !acc.empty())
      acc.back().span.end = s.span.end;
    else
      acc.push_back({s.span, false});
    previous_match = s.is_match;
  }
  return acc;
}

SplitBehavior behavior_of(const JsonAt& behavior) {
  const std::string name = behavior.str();
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  behavior.fail("unsupported '" + name + "'");
}

}  // namespace

std::vector<std::string> split_by_matches(std::string_view text, const std::vector<Span>& matches,
                                          SplitBehavior behavior, bool invert) {
  std::vector<Segment> segments = segments_of(text, matches, invert);
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (Segment& s : segments) s.is_match = false;
      break;
    case SplitBehavior::kRemoved:
      break;  // the matches are dropped below
    case SplitBehavior::kMergedWithPrevious:
      segments = merge_matches_into_neighbour(segments, true);
      break;
    case SplitBehavior::kMergedWithNext:
      segments = merge_matches_into_neighbour(segments, false);
      break;
    case SplitBehavior::kContiguous:
      segments = contiguous(segments);
      break;
  }
  std::vector<std::string> pieces;
  for (const Segment& s : segments) {
    if (!s.is_match && s.span.end > s.span.begin)
      pieces.emplace_back(text.substr(s.span.begin, s.span.end - s.span.begin));
  }
  return pieces;
}

PreTokenizer PreTokenizer::from_json(const std::optional<JsonAt>& pre_tokenizer) {
  PreTokenizer p;
  if (pre_tokenizer) p.add_steps(*pre_tokenizer);
  return p;
}

void PreTokenizer::add_steps(const JsonAt& pre) {
  const std::string type = pre.at("type").str();
  if (type == "Sequence") {
    const JsonAt list = pre.at("pretokenizers");
    for (size_t i = 0; i < list.size(); ++i) add_steps(list.at(i));
  } else if (type == "Split") {
    steps_.push_back(split_step(pre));
  } else if (type == "ByteLevel") {
    steps_.push_back(byte_level_step(pre));
  } else if (type == "Digits") {
    // Rust's char::is_numeric is \p{N}; Contiguous single-character matches equal \p{N}+.
    Step s;
    s.regex = Regex::compile(pre.flag("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)",
                             pre.file(), pre.path());
    steps_.push_back(std::move(s));
  } else {
    pre.unsupported_type();
  }
}

PreTokenizer::Step PreTokenizer::split_step(const JsonAt& split) {
  Step s;
  const JsonAt pattern = split.at("pattern");
  if (const auto regex = pattern.find("Regex")) {
    s.regex = Regex::compile(regex->str(), regex->file(), regex->path());
  } else if (const auto literal = pattern.find("String")) {
    s.regex = Regex::literal(literal->str(), literal->file(), literal->path());
  } else {
    pattern.fail("expected {\"Regex\": ...} or {\"String\": ...}");
  }
  s.behavior = behavior_of(split.at("behavior"));
  s.invert = split.flag("invert", false);
  return s;
}

PreTokenizer::Step PreTokenizer::byte_level_step(const JsonAt& byte_level) {
  Step s;
  s.kind = Step::Kind::kByteLevel;
  s.add_prefix_space = byte_level.flag("add_prefix_space", true);
  if (byte_level.flag("use_regex", true))
    s.regex = Regex::compile(kGpt2Pattern, byte_level.file(), byte_level.path());
  return s;
}

std::vector<std::string> PreTokenizer::apply(const Step& step, std::vector<std::string> pieces) {
  std::vector<std::string> out;
  for (std::string& piece : pieces) {
    if (step.kind == Step::Kind::kByteLevel && step.add_prefix_space && piece.front() != ' ')
      piece.insert(piece.begin(), ' ');
    if (!step.regex) {
      out.push_back(std::move(piece));
      continue;
    }
    const SplitBehavior behavior =
        step.kind == Step::Kind::kByteLevel ? SplitBehavior::kIsolated : step.behavior;
    for (std::string& p :
         split_by_matches(piece, step.regex->find_all(piece), behavior, step.invert)) {
      out.push_back(std::move(p));
    }
  }
  if (step.kind == Step::Kind::kByteLevel) {
    for (std::string& piece : out) piece = byte_level_encode(piece);
  }
  return out;
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string> pieces;
  if (!text.empty()) pieces.emplace_back(text);
  for (const Step& step : steps_) pieces = apply(step, std::move(pieces));
  return pieces;
}

}  // namespace h0::tokenizer
