#include "tokenizer/pcre_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/error.h"
#include "tokenizer/unicode_text.h"

namespace h0::tokenizer {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

struct MatchData {
  explicit MatchData(const pcre2_code* code)
      : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
  pcre2_match_data* data;
};

}  // namespace

Regex Regex::build(const std::string& pattern, uint32_t options, const std::string& file,
                   const std::string& path) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options | PCRE2_UTF, &error, &offset, nullptr);
  if (code == nullptr) {
    throw InputError(file, path + ": bad regex at offset " + std::to_string(offset) + ": " +
                               pcre2_message(error));
  }
  pcre2_jit_compile(code,
                    PCRE2_JIT_COMPLETE);  // optional: pcre2_match falls back to the interpreter
  Regex r;
  r.code_ =
      std::shared_ptr<void>(code, [](void* c) { pcre2_code_free(static_cast<pcre2_code*>(c)); });
  r.pattern_ = pattern;
  return r;
}

Regex Regex::compile(const std::string& pattern, const std::string& file, const std::string& path) {
  return build(pattern, PCRE2_UCP, file, path);
}

Regex Regex::literal(const std::string& text, const std::string& file, const std::string& path) {
  return build(text, PCRE2_LITERAL, file, path);  // UCP is not allowed with LITERAL
}

std::vector<Span> Regex::find_all(std::string_view text) const {
  const auto* code = static_cast<const pcre2_code*>(code_.get());
  MatchData md(code);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::vector<Span> spans;
  uint32_t flags = 0;  // the first call checks the UTF-8; later calls skip the check
  for (size_t start = 0; start <= text.size();) {
    int rc = pcre2_match(code, subject, text.size(), start, flags, md.data, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(code, subject, text.size(), start, flags | PCRE2_NO_JIT, md.data, nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw InputError("", "regex /" + pattern_ + "/: " + pcre2_message(rc));
    flags = PCRE2_NO_UTF_CHECK;
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md.data);
    spans.push_back({ovector[0], ovector[1]});
    if (ovector[1] > ovector[0])
      start = ovector[1];
    else if (ovector[1] < text.size())
      start = ovector[1] + utf8_length_at(text, ovector[1]);
    else
      break;
  }
  return spans;
}

}  // namespace h0::tokenizer
