// What the end-to-end checks (e2e_text, e2e_image, determinism, e2e_load) share: the request a
// case sends, written in the suite or taken from a golden file (golden/e2e/<model>/<case>.json,
// made by golden/tools/gen_e2e.py with transformers), the client of the case's service, and
// the latency metrics of one response.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "checks/check.h"
#include "checks/service_info.h"
#include "service/client.h"
#include "tokenizer/tokenizer.h"

namespace h0::checks {

struct E2eRequest {
  std::string model_dir;     // absolute: the model the service is started for
  service::Request request;  // `model` is filled in at run time
  std::string golden_path;   // empty: no golden
  nlohmann::json golden;     // the golden file's contents (null when none)
  std::string description;   // "chat: 2 messages, 1 image" — for messages
};

// Reads `model`, and either `golden` (its request) or `messages` / `prompt` / `prompt_ids`,
// plus `max_tokens`, `temperature`, `seed`, `top_k`, `top_p`, `ignore_eos`, `top_logprobs`.
// Image parts name a data: URL, an http(s) URL or a file (relative to the working directory or
// the suite's repository), which is read now and sent as a data: URL. Fails at the field.
E2eRequest parse_e2e_request(const suite::Case& c);
// The fields parse_e2e_request reads (for the kinds' schemas).
std::vector<std::string> e2e_request_fields();
// A different request of the same shape (the k-th variant of the prompt: a tag appended to
// the last text, or the prompt ids permuted), for the concurrent load around a request.
service::Request request_variant(const service::Request& base, int64_t k);
// Whether the request holds an image part.
bool has_image(const service::Request& r);

// The case's service from the runner (ctx.service()); an error message when it is not usable.
struct ServiceHandle {
  ServiceInfo info;  // as the runner passed it
  std::unique_ptr<service::Client> client;
  std::string model;  // the served name to request
  std::string error;  // why the service cannot be used (then client may be empty)
  nlohmann::json evidence = nlohmann::json::object();  // url, command, log tail
  // GET /v1/models's answer, when connecting asked it (the service names no model).
  std::optional<std::vector<std::string>> model_ids;
};
ServiceHandle connect_service(RunContext& ctx);
// The same for a service described as JSON (ServiceInfo::to_json; e.g. ServiceInfo::base).
ServiceHandle connect_service(const nlohmann::json& service);
// The result a check on the service starts from: its evidence (url, command, log tail).
CheckResult result_for(const ServiceHandle& h);
// The result a check of `request` starts from: the service's evidence and the request.
CheckResult result_for(const ServiceHandle& h, const E2eRequest& request);
// A failing result for an unusable service, with its evidence.
CheckResult service_unavailable(const ServiceHandle& h);

// The request as the case's engine takes it: the fields the platform's `service.request` adds,
// its dialect (extension fields only where accepted), and a token-id prompt sent as its decoded
// text when the engine takes only text prompts (decoded with `model_dir`'s tokenizer; the special
// tokens the tokenizer's encode adds by itself are dropped from the front, so the engine's
// tokenization gives the ids back). `notes`: what was changed, for the result's message. `cannot`:
// why this engine cannot be sent the request as meant (no text tokenizes back to the prompt ids —
// e.g. ids without the BOS the tokenizer adds — or no tokenizer to decode them); the check then
// judges nothing.
struct AdaptedRequest {
  std::vector<std::string> notes;
  std::string cannot;
};
AdaptedRequest adapt_request(const ServiceHandle& h, const std::string& model_dir,
                             service::Request* r);

// A check of one E2eRequest begun: the case's service connected (connect_service) and, when it
// is usable, the result the check starts from (result_for) and the case's request addressed to
// the served model and adapted to the engine (adapt_request). When it is not, `out` is
// service_unavailable(h), for the check to return.
struct StartedRequest {
  ServiceHandle h;
  CheckResult out;
  service::Request request;
  AdaptedRequest adapted;
  bool usable() const { return h.error.empty(); }
};
StartedRequest start_request(RunContext& ctx, const E2eRequest& req);

// The tokenizer of a model directory (tokenizer.json), loaded once per process; nullptr when
// the directory has none or it does not load.
const tokenizer::Tokenizer* tokenizer_of(const std::string& model_dir);

// A conversation task file (suites/tasks/structured_output.jsonl, tool_calls.jsonl): "# key: value"
// header lines (`# max_tokens: N` read into *max_tokens), then one JSON object per line, each
// returned with "line" set to "file:N". Fails at the case's `tasks` field for a missing file, and
// at the line for one that is not a JSON object.
std::vector<nlohmann::json> read_task_items(const suite::Case& c, const std::string& path,
                                            int64_t* max_tokens);

// The case's `model` as an absolute directory: the model its service serves. Fails at the field
// ("a <kind> check needs `model`: ...").
std::string served_model_dir(const suite::Case& c, const std::string& kind);

// Each image_url part of `messages` (OpenAI's shape) whose URL is a file path, resolved like a
// case path: replaced by the file as a data: URL. data: and http(s) URLs stay. A missing file or
// an unknown image type: InputError naming `where` (the file the messages came from).
void inline_image_files(const suite::Case& c, const std::string& where,
                        nlohmann::ordered_json* messages);

// The case's `request` field: body fields added to each of its requests (e.g. chat_template_kwargs
// {enable_thinking: false}, so that a thinking template's answer is constrained from its first
// token); an empty object when absent. Fails at the field for anything but a mapping.
nlohmann::json case_request_fields(const suite::Case& c);

// A greedy chat request of one user turn, `extra` merged into its body, adapted to the engine
// (the conversation checks: response_format, tools).
// token_ids: ask for the prompt's and the answer's token ids (where the dialect takes it).
service::Request chat_request(const ServiceHandle& h, const std::string& model_dir,
                              const std::string& prompt, int64_t max_tokens,
                              nlohmann::ordered_json extra, bool token_ids = false);
// Whether the engine refused the request itself (HTTP 4xx): the request, or a feature it lacks.
bool refused(const service::Result& r);

// The verdict of a check over items (chat_template, reasoning): `counts` with the items not judged
// ("id: why") appended; the first failure, with those counts in brackets, else "not exercised:
// <counts>" (a skip) when none was judged, else a pass.
void item_verdict(CheckResult* out, const std::string& first_failure, int judged,
                  std::string counts, const std::vector<std::string>& unjudged);

// The model's end tokens: the tokenizer's eos, and generation_config.json's eos_token_id.
std::set<int64_t> end_tokens(const std::string& model_dir, const tokenizer::Tokenizer& tok);

// Whether the response carries token ids (token_ids, or "token_id:N" logprob tokens).
bool has_token_ids(const service::Result& r);

// Latency of one streamed response: ttft, tpot ((e2e - ttft) / (tokens - 1)), inter-token
// latencies (between content chunks), e2e — milliseconds.
struct Latency {
  double ttft_ms = -1, tpot_ms = -1, e2e_ms = -1;
  std::vector<double> itl_ms;
  int64_t tokens = 0;
};
Latency latency_of(const service::Result& r);

// One response for the evidence: outcome, text (cut to 2000 bytes), ids, finish reason.
nlohmann::json response_evidence(const service::Result& r);
// "timeout: no data for 0.5 s" — the outcome and the client's error.
std::string failure_message(const service::Result& r);

}  // namespace h0::checks
