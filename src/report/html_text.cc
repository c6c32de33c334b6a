#include "report/html_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/sha256.h"

namespace h0::report {
namespace {

constexpr size_t kMaxStem = 48;

// Appends \uXXXX for a code unit.
void append_unicode_escape(std::string* out, unsigned code) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", code);
  out->append(buf);
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    switch (text[i]) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string script_json(const nlohmann::json& value) {
  const std::string raw = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size() + raw.size() / 16);
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '<' || c == '>' || c == '&') {
      append_unicode_escape(&out, static_cast<unsigned char>(c));
    } else if (c == '\xE2' && i + 2 < raw.size() && raw[i + 1] == '\x80' &&
               (raw[i + 2] == '\xA8' || raw[i + 2] == '\xA9')) {
      append_unicode_escape(&out, raw[i + 2] == '\xA8' ? 0x2028 : 0x2029);
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

nlohmann::json rounded(double v, int digits) {
  if (!std::isfinite(v)) return nullptr;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  const double r = std::strtod(buf, nullptr);
  if (r == std::floor(r) && std::fabs(r) < 1e15) return static_cast<int64_t>(r);
  return r;
}

std::string file_stem(const std::string& id) {
  std::string stem;
  for (const char c : id) {
    if (stem.size() >= kMaxStem) break;
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_' || c == '-';
    if (plain && !(c == '.' && stem.empty())) {
      stem += c;
    } else if (!stem.empty() && stem.back() != '-') {
      stem += '-';
    }
  }
  while (!stem.empty() && stem.back() == '-') stem.pop_back();
  const std::string hash = base::sha256_hex(id.data(), id.size()).substr(0, 8);
  return stem.empty() ? hash : stem + "-" + hash;
}

std::string size_text(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace h0::report
