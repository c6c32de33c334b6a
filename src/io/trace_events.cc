#include "io/trace_events.h"

#include <zlib.h>

#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/error.h"

namespace h0::io {
namespace {

using Json = nlohmann::json;

// The file's bytes through zlib's gzread (which reads gzipped and plain files alike), in 256 KiB
// pieces, as an input iterator for the JSON parser: one inlined step a character, where an
// istream costs a virtual call.
class GzChars {
 public:
  explicit GzChars(const std::string& path) : path_(path), buf_(1 << 18) {
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) throw InputError(path, "cannot open the trace");
    gzbuffer(file_, 1 << 18);
  }
  ~GzChars() { gzclose(file_); }
  GzChars(const GzChars&) = delete;
  GzChars& operator=(const GzChars&) = delete;

  // Reads the next piece; false at the end of the file.
  bool fill() {
    const int n = gzread(file_, buf_.data(), static_cast<unsigned>(buf_.size()));
    if (n < 0) {
      int code = 0;
      const char* what = gzerror(file_, &code);
      throw InputError(path_, std::string("cannot read the trace: ") + (what ? what : "gzread"));
    }
    bytes_ += n;
    pos_ = 0;
    len_ = size_t(n);
    return n > 0;
  }
  int64_t bytes() const { return bytes_; }

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    explicit Iterator(GzChars* src) : src_(src) {}  // null: the end
    reference operator*() const { return src_->buf_[src_->pos_]; }
    Iterator& operator++() {
      if (++src_->pos_ == src_->len_ && !src_->fill()) src_ = nullptr;
      return *this;
    }
    bool operator==(const Iterator& o) const { return src_ == o.src_; }
    bool operator!=(const Iterator& o) const { return src_ != o.src_; }

   private:
    GzChars* src_;
  };
  Iterator begin() { return Iterator(fill() ? this : nullptr); }
  static Iterator end() { return Iterator(nullptr); }

 private:
  std::string path_;
  gzFile file_ = nullptr;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0;
  int64_t bytes_ = 0;
};

// The SAX handler: finds the events array (the top-level array, or the top-level object's
// "traceEvents"), collects each event's fields, hands it on at its closing brace and skips
// everything else at any depth.
class TraceSax : public nlohmann::json_sax<Json> {
 public:
  explicit TraceSax(const std::function<void(const TraceEvent&)>& on_event) : on_event_(on_event) {}

  bool null() override { return value({}); }
  bool boolean(bool) override { return value({}); }
  bool number_integer(number_integer_t v) override {
    return number(double(v), [v] { return std::to_string(v); });
  }
  bool number_unsigned(number_unsigned_t v) override {
    return number(double(v), [v] { return std::to_string(v); });
  }
  bool number_float(number_float_t v, const string_t& s) override {
    return number(v, [&s] { return s; });
  }
  bool string(string_t& v) override { return value(v); }
  bool binary(binary_t&) override { return value({}); }

  bool start_object(std::size_t) override {
    if (depth_ == 0) {
      top_ = Top::kObject;
    } else if (in_event_array() && depth_ == events_depth_ + 1) {
      event_ = TraceEvent();
      in_event_ = true;
    }
    ++depth_;
    key_.clear();
    return true;
  }
  bool end_object() override {
    --depth_;
    if (in_event_ && depth_ == events_depth_ + 1) {
      in_event_ = false;
      ++stats_.events;
      on_event_(event_);
    }
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) {
      top_ = Top::kArray;
      events_depth_ = 0;
    } else if (top_ == Top::kObject && depth_ == 1 && key_ == "traceEvents") {
      events_depth_ = 1;
    }
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    if (depth_ == events_depth_) events_done_ = true;
    return true;
  }
  bool key(string_t& k) override {
    if (in_event_ && depth_ == events_depth_ + 2) arg_key_ = k;  // the event's own key
    key_ = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error_position_ = position;
    error_ = e.what();
    return false;
  }

  const TraceReadStats& stats() const { return stats_; }
  bool found_events() const { return events_depth_ >= 0; }
  bool events_done() const { return events_done_; }
  bool top_is_array() const { return top_ == Top::kArray; }
  const std::string& error() const { return error_; }
  size_t error_position() const { return error_position_; }

 private:
  enum class Top { kNone, kObject, kArray };

  bool in_event_array() const { return events_depth_ >= 0 && !events_done_; }

  // A number; `text()` makes its text, wanted for the ids only.
  template <typename Text>
  bool number(double v, const Text& text) {
    if (depth_ == 1 && top_ == Top::kObject) top_field(text());
    if (in_event_ && depth_ == events_depth_ + 2) {
      if (arg_key_ == "ts")
        event_.ts = v;
      else if (arg_key_ == "dur")
        event_.dur = v;
      else if (arg_key_ == "pid")
        event_.pid = text();
      else if (arg_key_ == "tid")
        event_.tid = text();
    }
    return true;
  }
  // A string or number at the top level of the object form.
  void top_field(const std::string& v) {
    if (stats_.metadata.size() < 64) stats_.metadata[key_] = v.substr(0, 256);
  }
  bool value(const std::string& v) {
    if (depth_ == 1 && top_ == Top::kObject) top_field(v);
    if (!in_event_) return true;
    if (depth_ == events_depth_ + 2) {
      std::string cut = v.size() > kMaxNameBytes ? v.substr(0, kMaxNameBytes) : v;
      if (arg_key_ == "ph")
        event_.ph = std::move(cut);
      else if (arg_key_ == "name")
        event_.name = std::move(cut);
      else if (arg_key_ == "cat")
        event_.cat = std::move(cut);
      else if (arg_key_ == "pid")
        event_.pid = std::move(cut);
      else if (arg_key_ == "tid")
        event_.tid = std::move(cut);
    } else if (depth_ == events_depth_ + 3 && arg_key_ == "args" && key_ == "name") {
      event_.args_name = v.size() > kMaxNameBytes ? v.substr(0, kMaxNameBytes) : v;
    }
    return true;
  }

  const std::function<void(const TraceEvent&)>& on_event_;
  TraceReadStats stats_;
  Top top_ = Top::kNone;
  int64_t depth_ = 0;
  int64_t events_depth_ = -1;  // the depth of the events array's elements' parent; -1: not yet
  bool events_done_ = false;
  bool in_event_ = false;
  TraceEvent event_;
  std::string key_, arg_key_;
  std::string error_;
  size_t error_position_ = 0;
};

}  // namespace

TraceReadStats read_trace_events(const std::string& path,
                                 const std::function<void(const TraceEvent&)>& on_event) {
  GzChars chars(path);
  TraceSax sax(on_event);
  const bool ok = Json::sax_parse(chars.begin(), GzChars::end(), &sax);
  TraceReadStats stats = sax.stats();
  stats.bytes = chars.bytes();
  if (!ok) {
    // The array form may end without its closing bracket: a trace cut after a whole event.
    const bool cut_at_end = sax.top_is_array() && !sax.events_done() &&
                            sax.error_position() >= static_cast<size_t>(stats.bytes);
    if (!cut_at_end) {
      throw InputError(path, "malformed trace JSON at byte " +
                                 std::to_string(sax.error_position()) + ": " + sax.error());
    }
    stats.unterminated = true;
  }
  if (!sax.found_events()) {
    throw InputError(path,
                     "not a trace: neither a {\"traceEvents\": [...]} object nor an array of "
                     "events");
  }
  return stats;
}

}  // namespace h0::io
