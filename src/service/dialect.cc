#include "service/dialect.h"

#include "service/client.h"

namespace h0::service {

nlohmann::json Dialect::to_json() const {
  return {{"name", name},
          {"return_token_ids", return_token_ids},
          {"tokens_as_ids", tokens_as_ids},
          {"ignore_eos", ignore_eos},
          {"top_k", top_k},
          {"id_prompts", id_prompts},
          {"done_marker", done_marker},
          {"how", how}};
}

Dialect Dialect::from_json(const nlohmann::json& j) {
  Dialect d;
  if (!j.is_object()) return d;
  d.name = j.value("name", d.name);
  d.return_token_ids = j.value("return_token_ids", d.return_token_ids);
  d.tokens_as_ids = j.value("tokens_as_ids", d.tokens_as_ids);
  d.ignore_eos = j.value("ignore_eos", d.ignore_eos);
  d.top_k = j.value("top_k", d.top_k);
  d.id_prompts = j.value("id_prompts", d.id_prompts);
  d.done_marker = j.value("done_marker", d.done_marker);
  d.how = j.value("how", d.how);
  return d;
}

std::optional<Dialect> dialect_named(std::string_view name) {
  Dialect d;
  d.how = "platform file";
  if (name == "vllm") return d;
  if (name == "sglang") {
    d.name = "sglang";
    d.return_token_ids = d.tokens_as_ids = false;
    return d;
  }
  if (name == "openai") {
    d.name = "openai";
    d.return_token_ids = d.tokens_as_ids = d.ignore_eos = d.top_k = d.done_marker = false;
    return d;
  }
  return std::nullopt;
}

const char* dialect_names() { return "vllm, sglang, openai"; }

namespace {

std::string refusal(const Result& r) {
  std::string why =
      r.http_status > 0 ? "HTTP " + std::to_string(r.http_status) : outcome_name(r.outcome);
  if (!r.error.empty()) why += ": " + r.error.substr(0, 160);
  return why;
}

}  // namespace

bool probe_id_prompts(Client& client, const std::string& model, Dialect* dialect) {
  Request ids;
  ids.model = model;
  ids.prompt_ids = {0};
  ids.sampling.max_tokens = 1;
  ids.sampling.return_token_ids = false;
  ids.dialect = *dialect_named("openai");
  const Result r = client.complete(ids);
  dialect->id_prompts = r.ok();
  if (!r.ok()) dialect->how = "token-id prompts refused (" + refusal(r) + ")";
  return r.ok();
}

Dialect probe_dialect(Client& client, const std::string& model) {
  Request chat;
  chat.model = model;
  chat.messages = {{"user", {{"text", "Hello", ""}}}};
  chat.sampling.max_tokens = 1;
  chat.sampling.top_k = 1;
  chat.sampling.ignore_eos = true;
  chat.sampling.return_token_ids = true;
  std::string seen;
  // From the richest dialect down: the first the engine takes.
  const char* const kOrder[] = {"vllm", "sglang", "openai"};
  Dialect found = *dialect_named("openai");
  bool answered = false;
  for (const char* name : kOrder) {
    chat.dialect = *dialect_named(name);
    const Result r = client.complete(chat);
    if (r.ok()) {
      found = chat.dialect;
      // Accepted but not honoured: an engine that ignores unknown fields returns no ids.
      if (found.return_token_ids && r.token_ids.empty()) {
        found.name = "openai";
        found.return_token_ids = found.tokens_as_ids = found.done_marker = false;
        seen += "extension fields accepted, no token ids returned; ";
      }
      answered = true;
      break;
    }
    seen += std::string(name) + " fields refused (" + refusal(r) + "); ";
    if (r.outcome == Outcome::kConnect || r.outcome == Outcome::kTimeout) break;
  }
  if (!answered) {
    found.how = "probed: no chat request succeeded: " + seen;
    return found;
  }
  if (!probe_id_prompts(client, model, &found)) seen += found.how + "; ";
  found.how = "probed: " + (seen.empty() ? std::string("every field accepted; ") : seen) +
              "dialect " + found.name;
  return found;
}

}  // namespace h0::service
