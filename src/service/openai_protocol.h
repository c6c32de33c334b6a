// The OpenAI wire format as the client speaks it: the JSON body of a request, and reading a
// response (a whole non-streaming body or one streamed chunk) into a Result. No I/O here; the
// transport is client.cc. Every reader tolerates missing optional fields and reports wrong
// types or missing required ones as a message, never an exception.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "service/client.h"

namespace h0::service {

// The body of `request` (Client::body documents it): a chat request when it has messages,
// else a completion of its prompt ids or prompt text; `extra` merged last at the top level.
// vLLM's and SGLang's extension fields (top_k, ignore_eos, return_token_ids,
// return_tokens_as_token_ids) only where `request.dialect` accepts them.
nlohmann::ordered_json request_body(const Request& request);

// Appends what `response` carries to `result`: text, token ids (and prompt token ids when not
// yet set), per-token data, finish_reason and usage. `response` is a whole non-streaming
// response (`streamed` false: choices[0].message.content or choices[0].text) or one stream
// chunk (`streamed` true: choices[0].delta.content or choices[0].text; a chunk without choices
// only carries usage). `arrival_s` goes into each new TokenInfo; for a chunk that carries
// content it is also appended to chunk_arrival_s and sets ttft_s the first time.
// Returns "" or what is malformed, e.g. "choices[0].token_ids is not an array of integers".
std::string read_response(const nlohmann::json& response, bool chat, bool streamed,
                          double arrival_s, Result* result);

// The tokens of a logprobs object in either OpenAI format: chat {"content": [{token, logprob,
// top_logprobs: [{token, logprob}]}]} or completions {"tokens": [...], "token_logprobs": [...],
// "top_logprobs": [{text: logprob}]} (sorted by logprob, highest first, since JSON objects are
// unordered). A token "token_id:N" (vLLM's return_tokens_as_token_ids) sets the id to N and
// leaves the text empty; top entries keep the text "token_id:N". null gives no tokens.
// Returns "" or what is malformed.
std::string read_logprobs(const nlohmann::json& logprobs, std::vector<TokenInfo>* out);

// The message of an error body: {"error": {"message": m}}, {"error": m}, {"message": m} or
// {"detail": m} (FastAPI); "" when none of these.
std::string error_message(const nlohmann::json& body);

// The id in a token string "token_id:N", or -1 when `token` has another form.
int64_t token_id_of(const std::string& token);

}  // namespace h0::service
