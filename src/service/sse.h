// An incremental parser of Server-Sent Events (the WHATWG "event stream" format), as OpenAI-style
// servers stream completions: `data: {json}` events separated by blank lines, `: ping` comments,
// and `data: [DONE]` as the end marker. Bytes may arrive in any split, even inside "\r\n".
//
// Stricter than the standard on purpose: a line that is neither a comment nor one of the four
// fields (data, event, id, retry) makes the stream malformed, so a server that sends garbage is
// caught instead of silently ignored. Whether `data` holds JSON is the caller's business.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace h0::service {

struct SseEvent {
  std::string type;  // the `event:` field; empty for the default ("message")
  std::string data;  // the event's `data:` lines joined with '\n'
};

class SseParser {
 public:
  // Consumes `bytes` and appends every event they complete to `out` (the [DONE] marker is not
  // appended; it sets done()). Returns false once the stream is malformed: error() says why,
  // and later calls consume nothing and return false. Bytes after [DONE] are ignored.
  bool feed(std::string_view bytes, std::vector<SseEvent>* out);

  // True once the `data: [DONE]` event has arrived.
  bool done() const { return done_; }
  // True while part of a line or of an event is buffered: a stream cut now was cut mid-event.
  bool partial() const { return !line_.empty() || has_data_ || !type_.empty(); }
  // Empty unless feed() returned false.
  const std::string& error() const { return error_; }
  // Events dispatched so far, [DONE] excluded.
  size_t events() const { return events_; }

 private:
  // Handles one complete line (without its terminator). False on a malformed line.
  bool line(std::string_view text, std::vector<SseEvent>* out);

  std::string line_;       // the current line's bytes so far
  bool skip_lf_ = false;   // the last byte was '\r': a '\n' right after it ends nothing
  bool at_start_ = true;   // no byte consumed yet (a UTF-8 BOM there is skipped)
  std::string data_;       // the current event's data lines so far
  bool has_data_ = false;  // whether the current event has a data line (data_ may be empty)
  std::string type_;       // the current event's `event:` field
  bool done_ = false;
  size_t events_ = 0;
  std::string error_;
};

}  // namespace h0::service
