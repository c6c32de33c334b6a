#include "service/sse.h"

namespace h0::service {
namespace {

// A line longer than this is treated as malformed (a server that never sends a newline).
constexpr size_t kMaxLine = 64 << 20;

// `text` shortened for an error message, control characters shown as '?'.
std::string excerpt(std::string_view text) {
  std::string out(text.substr(0, 80));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  if (text.size() > 80) out += "...";
  return out;
}

}  // namespace

bool SseParser::feed(std::string_view bytes, std::vector<SseEvent>* out) {
  if (!error_.empty()) return false;
  size_t i = 0;
  if (at_start_ && !bytes.empty()) {
    // A UTF-8 byte order mark may open the stream; it only counts when whole in the first feed.
    if (bytes.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
    at_start_ = false;
  }
  while (i < bytes.size() && !done_) {
    char c = bytes[i];
    if (skip_lf_) {
      skip_lf_ = false;
      if (c == '\n') {
        ++i;
        continue;
      }
    }
    // The longest run of ordinary bytes goes into the line at once.
    size_t end = bytes.find_first_of("\r\n", i);
    if (end == std::string_view::npos) end = bytes.size();
    if (end > i) {
      if (line_.size() + (end - i) > kMaxLine) {
        error_ = "a line longer than " + std::to_string(kMaxLine) + " bytes";
        return false;
      }
      line_.append(bytes.substr(i, end - i));
      i = end;
      continue;
    }
    skip_lf_ = c == '\r';
    ++i;
    std::string text = std::move(line_);
    line_.clear();
    if (!line(text, out)) return false;
  }
  return true;
}

bool SseParser::line(std::string_view text, std::vector<SseEvent>* out) {
  if (text.empty()) {  // a blank line dispatches the event, if it has data
    if (has_data_) {
      if (data_ == "[DONE]") {
        done_ = true;
      } else {
        out->push_back({std::move(type_), std::move(data_)});
        ++events_;
      }
    }
    data_.clear();
    type_.clear();
    has_data_ = false;
    return true;
  }
  if (text.front() == ':') return true;  // a comment: a keep-alive ping
  size_t colon = text.find(':');
  std::string_view field = text.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = text.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    type_ = std::string(value);
  } else if (field != "id" && field != "retry") {
    error_ = "not an SSE field or comment: \"" + excerpt(text) + "\"";
    return false;
  }
  return true;
}

}  // namespace h0::service
