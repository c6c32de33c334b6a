#include "service/openai_protocol.h"

#include <algorithm>
#include <charconv>
#include <string_view>

#include "base/check.h"
#include "service/json_util.h"

namespace h0::service {
namespace {

using nlohmann::json;

json message_json(const ChatMessage& message) {
  json content;
  if (message.content.size() == 1 && message.content[0].type == "text") {
    content = message.content[0].text;
  } else if (message.content.empty()) {
    content = "";
  } else {
    content = json::array();
    for (const ContentPart& part : message.content) {
      if (part.type == "image_url") {
        content.push_back({{"type", "image_url"}, {"image_url", {{"url", part.url}}}});
      } else {
        content.push_back({{"type", part.type}, {"text", part.text}});
      }
    }
  }
  return {{"role", message.role}, {"content", std::move(content)}};
}

// Reads an array of integers at `j[key]` into `out` (left empty when absent).
std::string read_ids(const json& j, std::string_view key, const char* where,
                     std::vector<int64_t>* out) {
  const json* ids = member(j, key);
  if (ids == nullptr) return "";
  bool ok = ids->is_array();
  for (size_t i = 0; ok && i < ids->size(); ++i) ok = (*ids)[i].is_number_integer();
  if (!ok) return std::string(where) + "." + std::string(key) + " is not an array of integers";
  for (const json& id : *ids) out->push_back(id.get<int64_t>());
  return "";
}

// A token's text and id from a token string ("token_id:N" gives id N and no text).
void set_token(const std::string& token, TokenInfo* info) {
  int64_t id = token_id_of(token);
  if (id >= 0) {
    info->id = id;
  } else {
    info->text = token;
  }
}

std::string read_chat_logprobs(const json& logprobs, std::vector<TokenInfo>* out) {
  const json* content = member(logprobs, "content");
  if (content == nullptr) return "";
  if (!content->is_array()) return "logprobs.content is not an array";
  for (const json& entry : *content) {
    const json* token = member(entry, "token");
    const json* logprob = member(entry, "logprob");
    if (token == nullptr || !token->is_string() || (logprob && !logprob->is_number())) {
      return "logprobs.content[" + std::to_string(out->size()) + "] is not {token, logprob}";
    }
    TokenInfo info;
    set_token(token->get<std::string>(), &info);
    if (logprob != nullptr) info.logprob = logprob->get<double>();
    if (const json* top = member(entry, "top_logprobs")) {
      if (!top->is_array()) return "logprobs.content[].top_logprobs is not an array";
      for (const json& alt : *top) {
        const json* alt_token = member(alt, "token");
        const json* alt_logprob = member(alt, "logprob");
        if (!alt_token || !alt_token->is_string() || !alt_logprob || !alt_logprob->is_number()) {
          return "logprobs.content[].top_logprobs[] is not {token, logprob}";
        }
        info.top.emplace_back(alt_token->get<std::string>(), alt_logprob->get<double>());
      }
    }
    out->push_back(std::move(info));
  }
  return "";
}

std::string read_completion_logprobs(const json& logprobs, std::vector<TokenInfo>* out) {
  const json* tokens = member(logprobs, "tokens");
  if (tokens == nullptr) return "";
  const json* values = member(logprobs, "token_logprobs");
  const json* tops = member(logprobs, "top_logprobs");
  const json* offsets = member(logprobs, "text_offset");
  if (offsets && (!offsets->is_array() || offsets->size() != tokens->size())) offsets = nullptr;
  if (!tokens->is_array() ||
      (values && (!values->is_array() || values->size() != tokens->size())) ||
      (tops && (!tops->is_array() || tops->size() != tokens->size()))) {
    return "logprobs.tokens, token_logprobs and top_logprobs are not arrays of one length";
  }
  for (size_t i = 0; i < tokens->size(); ++i) {
    if (!(*tokens)[i].is_string()) return "logprobs.tokens[" + std::to_string(i) + "] is no string";
    TokenInfo info;
    set_token((*tokens)[i].get<std::string>(), &info);
    if (values != nullptr && (*values)[i].is_number()) info.logprob = (*values)[i].get<double>();
    if (offsets != nullptr && (*offsets)[i].is_number_integer())
      info.text_offset = (*offsets)[i].get<int64_t>();
    if (tops != nullptr && (*tops)[i].is_object()) {
      for (const auto& [text, value] : (*tops)[i].items()) {
        if (!value.is_number()) return "logprobs.top_logprobs[" + std::to_string(i) + "] is odd";
        info.top.emplace_back(text, value.get<double>());
      }
      std::stable_sort(info.top.begin(), info.top.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
    }
    out->push_back(std::move(info));
  }
  return "";
}

// message.tool_calls, or a delta's: each entry at its `index` (its position when none), the id
// and type set where given, the name and the arguments appended (a stream sends them in pieces).
std::string read_tool_calls(const json& calls, Result* result) {
  if (!calls.is_array()) return "tool_calls is not an array";
  for (size_t i = 0; i < calls.size(); ++i) {
    const json& call = calls[i];
    if (!call.is_object()) return "tool_calls[" + std::to_string(i) + "] is not an object";
    size_t index = i;
    if (const json* n = member(call, "index"); n && n->is_number_unsigned())
      index = n->get<size_t>();
    if (index > 1024) return "tool_calls[" + std::to_string(i) + "].index is out of range";
    if (result->tool_calls.size() <= index) result->tool_calls.resize(index + 1);
    ToolCall& out = result->tool_calls[index];
    if (const json* id = member(call, "id"); id && id->is_string()) out.id = id->get<std::string>();
    if (const json* t = member(call, "type"); t && t->is_string()) out.type = t->get<std::string>();
    const json* function = member(call, "function");
    if (function == nullptr) continue;
    if (const json* name = member(*function, "name"); name && name->is_string())
      out.name += name->get<std::string>();
    if (const json* args = member(*function, "arguments"); args) {
      if (!args->is_string())
        return "tool_calls[" + std::to_string(i) + "].function.arguments is not a string";
      out.arguments += args->get<std::string>();
    }
  }
  return "";
}

void read_usage(const json& response, Result* result) {
  const json* usage = member(response, "usage");
  if (usage == nullptr) return;
  if (const json* n = member(*usage, "prompt_tokens"); n && n->is_number_integer()) {
    result->prompt_tokens = n->get<int64_t>();
  }
  if (const json* n = member(*usage, "completion_tokens"); n && n->is_number_integer()) {
    result->completion_tokens = n->get<int64_t>();
  }
  if (const json* details = member(*usage, "prompt_tokens_details"); details != nullptr) {
    if (const json* n = member(*details, "cached_tokens"); n && n->is_number_integer())
      result->cached_tokens = n->get<int64_t>();
  }
}

}  // namespace

nlohmann::ordered_json request_body(const Request& request) {
  const Sampling& s = request.sampling;
  nlohmann::ordered_json body = {{"model", request.model}};
  bool chat = !request.messages.empty();
  if (chat) {
    json messages = json::array();
    for (const ChatMessage& message : request.messages) messages.push_back(message_json(message));
    body["messages"] = std::move(messages);
  } else if (!request.prompt_ids.empty()) {
    body["prompt"] = request.prompt_ids;
  } else {
    body["prompt"] = request.prompt;
  }
  body["max_tokens"] = s.max_tokens;
  if (request.echo && !chat) body["echo"] = true;
  body["temperature"] = s.temperature;
  if (s.seed) body["seed"] = *s.seed;
  const Dialect& d = request.dialect;
  if (s.top_k && d.top_k) body["top_k"] = *s.top_k;
  if (s.top_p) body["top_p"] = *s.top_p;
  body["stream"] = request.stream;
  if (request.stream) body["stream_options"] = {{"include_usage", true}};
  if (s.top_logprobs > 0) {
    if (chat) {
      body["logprobs"] = true;
      body["top_logprobs"] = s.top_logprobs;
    } else {
      body["logprobs"] = s.top_logprobs;
    }
    if (d.tokens_as_ids) body["return_tokens_as_token_ids"] = true;
  }
  if (s.ignore_eos && d.ignore_eos) body["ignore_eos"] = true;
  if (s.return_token_ids && d.return_token_ids) body["return_token_ids"] = true;
  H0_CHECK(request.extra.is_object()) << "Request::extra must be a JSON object";
  for (const auto& [key, value] : request.extra.items()) body[key] = value;
  return body;
}

std::string read_response(const json& response, bool chat, bool streamed, double arrival_s,
                          Result* result) {
  if (!response.is_object()) return "the response is not a JSON object";
  read_usage(response, result);
  const json* choices = member(response, "choices");
  if (choices == nullptr || !choices->is_array()) {
    if (streamed && member(response, "usage") != nullptr) return "";
    return "the response has no choices array";
  }
  if (choices->empty()) return streamed ? "" : "the response has no choices[0]";
  const json& choice = (*choices)[0];
  if (!choice.is_object()) return "choices[0] is not an object";

  // The text of this response or chunk.
  std::string text;
  const json* holder = chat ? member(choice, streamed ? "delta" : "message") : &choice;
  if (chat && holder == nullptr && !streamed) return "choices[0] has no message";
  if (holder != nullptr) {
    const json* content = member(*holder, chat ? "content" : "text");
    if (content != nullptr && !content->is_string()) return "choices[0] content is not a string";
    if (content != nullptr) text = content->get<std::string>();
    for (const char* key : {"reasoning", "reasoning_content"}) {
      const json* reasoning = chat ? member(*holder, key) : nullptr;
      if (reasoning == nullptr || reasoning->is_null()) continue;
      if (!reasoning->is_string()) return std::string("choices[0] ") + key + " is not a string";
      result->reasoning += reasoning->get<std::string>();
      result->has_reasoning = true;
      break;  // an engine that sends both sends the same text twice
    }
  }
  if (const json* calls = chat && holder ? member(*holder, "tool_calls") : nullptr) {
    if (std::string e = read_tool_calls(*calls, result); !e.empty()) return e;
  }

  std::vector<int64_t> ids;
  if (std::string e = read_ids(choice, "token_ids", "choices[0]", &ids); !e.empty()) return e;
  if (result->prompt_token_ids.empty()) {
    std::vector<int64_t> prompt_ids;  // vLLM: top level for chat, in the choice for completions
    std::string e = read_ids(response, "prompt_token_ids", "response", &prompt_ids);
    if (e.empty() && prompt_ids.empty()) {
      e = read_ids(choice, "prompt_token_ids", "choices[0]", &prompt_ids);
    }
    if (!e.empty()) return e;
    result->prompt_token_ids = std::move(prompt_ids);
  }
  std::vector<TokenInfo> tokens;
  if (const json* logprobs = member(choice, "logprobs")) {
    if (std::string e = read_logprobs(*logprobs, &tokens); !e.empty()) return e;
  }

  // Per-token data: from logprobs (ids from token_ids when both came), else one token per id,
  // else one per chunk. When no token's text is known, the first gets the chunk's text.
  if (!tokens.empty()) {
    if (ids.size() == tokens.size()) {
      for (size_t i = 0; i < ids.size(); ++i) tokens[i].id = ids[i];
    } else if (ids.empty() && std::all_of(tokens.begin(), tokens.end(),
                                          [](const TokenInfo& t) { return t.id.has_value(); })) {
      for (const TokenInfo& t : tokens) ids.push_back(*t.id);
    }
    if (std::all_of(tokens.begin(), tokens.end(),
                    [](const TokenInfo& t) { return t.text.empty(); })) {
      tokens[0].text = text;
    }
  } else if (!ids.empty()) {
    tokens.resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) tokens[i].id = ids[i];
    tokens[0].text = text;
  } else if (!text.empty()) {
    tokens.emplace_back().text = text;
  }
  for (TokenInfo& t : tokens) t.arrival_s = arrival_s;

  if (streamed && !tokens.empty()) {
    result->chunk_arrival_s.push_back(arrival_s);
    if (result->ttft_s < 0) result->ttft_s = arrival_s;
  }
  result->text += text;
  result->token_ids.insert(result->token_ids.end(), ids.begin(), ids.end());
  std::move(tokens.begin(), tokens.end(), std::back_inserter(result->tokens));
  if (const json* reason = member(choice, "finish_reason")) {
    if (!reason->is_string()) return "choices[0].finish_reason is not a string";
    result->finish_reason = reason->get<std::string>();
  }
  return "";
}

std::string read_logprobs(const json& logprobs, std::vector<TokenInfo>* out) {
  if (logprobs.is_null()) return "";
  if (!logprobs.is_object()) return "logprobs is not an object";
  // The shape tells the two formats apart (some servers answer either endpoint in either).
  if (member(logprobs, "content") != nullptr) return read_chat_logprobs(logprobs, out);
  if (member(logprobs, "tokens") != nullptr) return read_completion_logprobs(logprobs, out);
  return "";
}

std::string error_message(const json& body) {
  const json* error = member(body, "error");
  const json* message = nullptr;
  if (error != nullptr && error->is_object()) {
    message = member(*error, "message");
  } else if (error != nullptr) {
    message = error;
  } else {
    message = member(body, "message");
    if (message == nullptr) message = member(body, "detail");
  }
  if (message == nullptr) return "";
  if (message->is_string()) return message->get<std::string>();
  return dump(*message);
}

int64_t token_id_of(const std::string& token) {
  if (token.size() <= kTokenIdPrefix.size() ||
      token.compare(0, kTokenIdPrefix.size(), kTokenIdPrefix) != 0)
    return -1;
  int64_t id = -1;
  const char* begin = token.data() + kTokenIdPrefix.size();
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(begin, end, id);
  if (ec != std::errc() || ptr != end || id < 0) return -1;
  return id;
}

}  // namespace h0::service
