// A whole (non-streamed) OpenAI-style response body, chat or completion as the first byte says,
// read as the client reads it; its logprobs in both formats.
#include "base/json_read.h"
#include "fuzz_util.h"
#include "service/openai_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = (data[0] & 1) != 0;
  const nlohmann::json body =
      h0::base::parse_json_or_discarded(h0::fuzz::as_text(data + 1, size - 1));
  if (body.is_discarded()) return 0;
  h0::service::Result result;
  (void)h0::service::read_response(body, chat, /*streamed=*/false, 0.0, &result);
  std::vector<h0::service::TokenInfo> tokens;
  if (body.is_object() && body.contains("logprobs"))
    (void)h0::service::read_logprobs(body["logprobs"], &tokens);
  return 0;
}
