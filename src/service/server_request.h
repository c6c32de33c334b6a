// The embedded server's side of the OpenAI protocol: a request body read and checked (the
// offending field named, as OpenAI's errors do) into what to generate and how to answer; the
// error body of a refused request.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "service/batch_engine.h"
#include "service/json_util.h"  // dump(): text for a response body
#include "service/server.h"

namespace h0::service {

// A request the server refuses: HTTP status, OpenAI error type and the offending field.
struct HttpError {
  int status = 400;
  std::string message, param;
};

// A 400 naming `param`: "param: what".
HttpError bad(const std::string& param, const std::string& what);

// {"error": {message, type, param, code}}, OpenAI's shape.
nlohmann::json error_body(const HttpError& e);

// The protocol-level request: what to generate and how to answer.
struct ApiRequest {
  bool chat = false;
  GenerationRequest generation;
  bool stream = false, include_usage = false, logprobs = false, token_ids = false,
       tokens_as_ids = false;
  // Completions: the prompt comes back before the completion, in the text and, with logprobs,
  // in the logprobs (OpenAI's legacy `echo`; how loglikelihood is scored over the API).
  bool echo = false;
  std::string prompt_text;  // completions: the prompt string as sent ("" for a prompt of ids)
  std::vector<std::string> stop;
};

// Reads a /v1/completions (`chat` false) or /v1/chat/completions body for `model`: the prompt
// tokenized (chat: rendered with the model's template, images decoded and preprocessed),
// sampling, streaming and logprob options. Throws HttpError (400 naming the field; 404 for
// another model's name).
ApiRequest parse_request(const std::string& body, bool chat, const ServedModel& model);

}  // namespace h0::service
