#include "service/metrics.h"

#include <cmath>
#include <cstdlib>

namespace h0::service {
namespace {

bool name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

}  // namespace

std::string label_value(std::string_view labels, std::string_view key) {
  const std::string needle = std::string(key) + "=\"";
  for (size_t at = labels.find(needle); at != std::string_view::npos;
       at = labels.find(needle, at + 1)) {
    if (at > 0 && labels[at - 1] != '{' && labels[at - 1] != ',' && labels[at - 1] != ' ') continue;
    const size_t begin = at + needle.size(), end = labels.find('"', begin);
    if (end == std::string_view::npos) return "";
    return std::string(labels.substr(begin, end - begin));
  }
  return "";
}

std::optional<std::string> sample_labels(std::string_view text, std::string_view name) {
  const std::string start = std::string(name) + "{";
  for (size_t from = 0; from < text.size();) {
    size_t end = text.find('\n', from);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(from, end - from);
    from = end + 1;
    if (line.substr(0, start.size()) != start) continue;
    const size_t close = line.rfind('}');
    if (close == std::string_view::npos || close < start.size()) return std::nullopt;
    return std::string(line.substr(start.size() - 1, close - start.size() + 2));
  }
  return std::nullopt;
}

Metrics Metrics::parse(std::string_view text) {
  Metrics m;
  size_t from = 0;
  while (from < text.size()) {
    size_t end = text.find('\n', from);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(from, end - from);
    from = end + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty() || line[0] == '#') continue;
    size_t i = 0;
    while (i < line.size() && name_char(line[i], i == 0)) ++i;
    if (i == 0) {
      ++m.skipped_;
      continue;
    }
    std::string name(line.substr(0, i));
    std::string_view labels;
    if (i < line.size() && line[i] == '{') {
      // Label values may hold '}' inside quotes.
      size_t j = i + 1;
      bool quoted = false;
      for (; j < line.size(); ++j) {
        if (line[j] == '\\' && quoted) {
          ++j;
        } else if (line[j] == '"') {
          quoted = !quoted;
        } else if (line[j] == '}' && !quoted) {
          break;
        }
      }
      if (j >= line.size()) {
        ++m.skipped_;
        continue;
      }
      labels = line.substr(i, j + 1 - i);
      i = j + 1;
    }
    while (i < line.size() && line[i] == ' ') ++i;
    const std::string number(line.substr(i, line.find(' ', i) - i));
    char* parsed_end = nullptr;
    const double v = std::strtod(number.c_str(), &parsed_end);
    if (number.empty() || parsed_end != number.c_str() + number.size() || std::isnan(v)) {
      ++m.skipped_;
      continue;
    }
    if (name.size() > 7 && name.compare(name.size() - 7, 7, "_bucket") == 0)
      name += "{le=\"" + label_value(labels, "le") + "\"}";
    m.values_[name] += v;
  }
  return m;
}

std::optional<double> Metrics::value(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::optional<Metrics::Found> Metrics::first_of(const std::vector<std::string>& names) const {
  for (const std::string& n : names) {
    if (auto v = value(n)) return Found{n, *v};
  }
  return std::nullopt;
}

std::optional<Metrics> scrape_metrics(Client& client, std::string* why) {
  std::string body;
  const Result r = client.get("/metrics", &body);
  if (!r.ok()) {
    if (why) *why = "GET /metrics: " + std::string(outcome_name(r.outcome)) + " " + r.error;
    return std::nullopt;
  }
  return Metrics::parse(body);
}

std::optional<Metrics::Found> counter_delta(const Metrics& before, const Metrics& after,
                                            const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    const auto a = before.value(n), b = after.value(n);
    if (a || b) return Metrics::Found{n, b.value_or(0) - a.value_or(0)};
  }
  return std::nullopt;
}

}  // namespace h0::service
