// A streamed completion as bytes on the wire: server-sent events cut at places the input's
// first byte picks, each event's data read as an OpenAI chunk, as the client does.
#include "base/json_read.h"
#include "fuzz_util.h"
#include "service/openai_protocol.h"
#include "service/sse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t step = 1 + data[0] % 64;  // bytes per feed
  const bool chat = (data[0] & 0x40) != 0;
  const std::string_view stream = h0::fuzz::as_text(data + 1, size - 1);
  h0::service::SseParser parser;
  h0::service::Result result;
  std::vector<h0::service::SseEvent> events;
  for (size_t at = 0; at < stream.size(); at += step) {
    if (!parser.feed(stream.substr(at, step), &events)) break;
    for (const auto& e : events) {
      const nlohmann::json chunk = h0::base::parse_json_or_discarded(e.data);
      if (!chunk.is_discarded())
        (void)h0::service::read_response(chunk, chat, /*streamed=*/true, 0.0, &result);
    }
    events.clear();
  }
  (void)parser.partial();
  return 0;
}
