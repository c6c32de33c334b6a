// Which OpenAI-compatible dialect a serving engine speaks: the documented OpenAI fields only, or
// also vLLM's / SGLang's extensions. A request carries an extension field only when the engine
// accepts it (a strict server — `transformers serve`, FastAPI models with extra="forbid" —
// answers 422 to an unknown field). Named by the platform file's `service.dialect`, else probed
// once per service (probe_dialect) and remembered for the run.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace h0::service {

class Client;

struct Dialect {
  std::string name = "vllm";     // "vllm", "sglang", "openai"
  bool return_token_ids = true;  // vLLM: token ids of the prompt and the completion
  bool tokens_as_ids = true;     // vLLM: logprob tokens as "token_id:N"
  bool ignore_eos = true;        // vLLM, SGLang: generate max_tokens past the end token
  bool top_k = true;             // vLLM, SGLang
  bool id_prompts = true;        // /v1/completions takes a prompt of token ids (OpenAI's spec)
  // A stream ends with `data: [DONE]` (vLLM, SGLang). Not in the generic openai dialect: a stream
  // closed after its finish_reason chunk is complete there (transformers serve sends no [DONE]).
  bool done_marker = true;
  std::string how = "default";  // "platform file", or what the probe saw

  nlohmann::json to_json() const;
  static Dialect from_json(const nlohmann::json& j);  // a missing key keeps the vllm default
};

// "vllm", "sglang" or "openai"; nullopt for another name.
std::optional<Dialect> dialect_named(std::string_view name);
// "vllm, sglang, openai", for errors.
const char* dialect_names();

// Finds what the engine at `client` accepts with a few one-token requests for `model`: a chat
// request with vLLM's extensions (return_token_ids, ignore_eos, top_k), then without
// return_token_ids, then with none; a completion whose prompt is token ids. Never throws; a
// server that answers none of them is reported as "openai" with `how` saying what failed.
Dialect probe_dialect(Client& client, const std::string& model);
// Whether /v1/completions takes a prompt of token ids (one one-token request): sets
// `dialect->id_prompts`; when refused, `dialect->how` says how. A stated dialect is probed for
// this alone: the OpenAI spec allows id prompts, many servers do not.
bool probe_id_prompts(Client& client, const std::string& model, Dialect* dialect);

}  // namespace h0::service
