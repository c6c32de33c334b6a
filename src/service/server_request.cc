#include "service/server_request.h"

#include <optional>
#include <random>

#include "base/base64.h"
#include "base/error.h"
#include "base/json_read.h"
#include "model/vision/image.h"
#include "service/json_util.h"

namespace h0::service {

using nlohmann::json;

HttpError bad(const std::string& param, const std::string& what) {
  return {400, param + ": " + what, param};
}

json error_body(const HttpError& e) {
  const char* type = e.status == 400   ? "BadRequestError"
                     : e.status == 401 ? "AuthenticationError"
                     : e.status == 404 ? "NotFoundError"
                                       : "InternalServerError";
  return {{"error",
           {{"message", e.message},
            {"type", type},
            {"param", e.param.empty() ? json(nullptr) : json(e.param)},
            {"code", e.status}}}};
}

namespace {

int64_t int_field(const json& body, const char* name, int64_t fallback, int64_t min, int64_t max) {
  const json* v = member(body, name);
  if (v == nullptr) return fallback;
  if (!v->is_number_integer()) throw bad(name, "expected an integer");
  const int64_t x = v->get<int64_t>();
  if (x < min || x > max)
    throw bad(name, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                        std::to_string(x));
  return x;
}

double number_field(const json& body, const char* name, double fallback, double min, double max) {
  const json* v = member(body, name);
  if (v == nullptr) return fallback;
  if (!v->is_number()) throw bad(name, "expected a number");
  const double x = v->get<double>();
  if (!(x >= min && x <= max))
    throw bad(name,
              "must be in [" + json(min).dump() + ", " + json(max).dump() + "], got " + v->dump());
  return x;
}

bool bool_field(const json& body, const char* name, bool fallback) {
  const json* v = member(body, name);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) throw bad(name, "expected true or false");
  return v->get<bool>();
}

ContentPart parse_part(const json& part, const std::string& where, const ServedModel& model,
                       ApiRequest* r) {
  const std::string type = part.is_object() && part.contains("type") && part["type"].is_string()
                               ? part["type"].get<std::string>()
                               : "";
  if (type == "text") {
    if (!part.contains("text") || !part["text"].is_string())
      throw bad(where + ".text", "a string is required");
    return {"text", part["text"].get<std::string>(), ""};
  }
  if (type != "image_url") throw bad(where + ".type", "expected \"text\" or \"image_url\"");
  const json* image = member(part, "image_url");
  const json* url = image == nullptr ? nullptr : image->is_string() ? image : member(*image, "url");
  if (url == nullptr || !url->is_string())
    throw bad(where + ".image_url.url", "a string is required");
  if (!model.images)
    throw bad(where,
              "the model '" + model.name + "' has no vision tower: image input is not supported");
  const std::string& u = url->get_ref<const std::string&>();
  const size_t comma = u.find(',');
  const std::string head = u.substr(0, comma == std::string::npos ? 0 : comma);
  if (head.rfind("data:image/", 0) != 0 || head.size() < 7 ||
      head.substr(head.size() - 7) != ";base64") {
    throw bad(where + ".image_url.url",
              "only data:image/png;base64 or data:image/jpeg;base64 URLs are supported");
  }
  const std::optional<std::string> bytes =
      base::base64_decode(std::string_view(u).substr(comma + 1));
  if (!bytes) throw bad(where + ".image_url.url", "the data URL is not valid base64");
  try {
    const model::Image img =
        model::decode_image_memory(bytes->data(), bytes->size(), where + ".image_url.url");
    r->generation.images.push_back(model.images->pixels(img));
  } catch (const InputError& e) {
    throw bad(where + ".image_url.url", std::string("the image cannot be decoded: ") + e.what());
  }
  return {"image_url", "", ""};
}

std::vector<ChatMessage> parse_messages(const json& body, const ServedModel& model, ApiRequest* r) {
  const json* messages = member(body, "messages");
  if (messages == nullptr || !messages->is_array() || messages->empty())
    throw bad("messages", "a non-empty array is required");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& m = (*messages)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw bad(where + ".role", "a string is required");
    ChatMessage msg{m["role"].get<std::string>(), {}};
    // The embedded template families render plain turns only: a tool-call history or reasoning
    // rendered as plain text would be a prompt no model was trained on.
    if (msg.role == "tool" || msg.role == "ipython")
      throw bad(where + ".role", "tool results are not supported by harness serve");
    for (const char* key : {"tool_calls", "reasoning", "reasoning_content"}) {
      const json* f = member(m, key);
      if (f != nullptr && !f->is_null() && !(f->is_array() && f->empty()))
        throw bad(where + "." + key, "not supported by harness serve");
    }
    const json* content = member(m, "content");
    if (content == nullptr) {
      msg.content.push_back({"text", "", ""});
    } else if (content->is_string()) {
      msg.content.push_back({"text", content->get<std::string>(), ""});
    } else if (content->is_array()) {
      for (size_t j = 0; j < content->size(); ++j)
        msg.content.push_back(
            parse_part((*content)[j], where + ".content[" + std::to_string(j) + "]", model, r));
    } else {
      throw bad(where + ".content", "expected a string or an array of content parts");
    }
    out.push_back(std::move(msg));
  }
  return out;
}

std::vector<int64_t> parse_prompt(const json& body, const ServedModel& model) {
  const json* p = member(body, "prompt");
  if (p == nullptr) throw bad("prompt", "a string or an array of token ids is required");
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) p = &(*p)[0];
  std::vector<int64_t> ids;
  if (p->is_string()) {
    for (int32_t id : model.tokenizer->encode(p->get<std::string>(), true)) ids.push_back(id);
  } else if (p->is_array()) {
    for (const json& id : *p) {
      if (!id.is_number_integer())
        throw bad(
            "prompt",
            "expected one string or one array of token ids (batched prompts are not supported)");
      ids.push_back(id.get<int64_t>());
    }
  } else {
    throw bad("prompt", "expected a string or an array of token ids");
  }
  if (ids.empty()) throw bad("prompt", "empty");
  return ids;
}

}  // namespace

ApiRequest parse_request(const std::string& body_text, bool chat, const ServedModel& model) {
  const json body = base::parse_json_or_discarded(body_text);  // nesting bounded
  if (body.is_discarded() || !body.is_object())
    throw HttpError{400, "the request body is not a JSON object", ""};
  if (const json* m = member(body, "model")) {
    if (!m->is_string()) throw bad("model", "expected a string");
    if (m->get<std::string>() != model.name)
      throw HttpError{404, "The model `" + m->get<std::string>() + "` does not exist.", "model"};
  }
  ApiRequest r;
  r.chat = chat;
  if (int_field(body, "n", 1, 1, 1) != 1) throw bad("n", "only 1 is supported");
  // What the executor does not do is refused, not ignored: an answer that looked constrained or
  // tool-called but was free text would mislead whoever checks it.
  if (const json* f = member(body, "response_format");
      f != nullptr && !(f->is_object() && f->value("type", "") == "text"))
    throw bad("response_format", "guided decoding is not supported by harness serve");
  for (const char* field : {"structured_outputs", "guided_json", "guided_regex", "guided_choice"}) {
    if (member(body, field) != nullptr)
      throw bad(field, "guided decoding is not supported by harness serve");
  }
  if (const json* tools = member(body, "tools"); tools != nullptr && !tools->empty()) {
    const json* choice = member(body, "tool_choice");
    if (choice == nullptr || !(choice->is_string() && choice->get<std::string>() == "none"))
      throw bad("tools", "tool calling is not supported by harness serve");
  }
  SamplingParams& s = r.generation.sampling;
  s.max_tokens = int_field(body, "max_tokens", 16, 1, int64_t(1) << 40);
  if (chat)
    s.max_tokens = int_field(body, "max_completion_tokens", s.max_tokens, 1, int64_t(1) << 40);
  s.temperature = number_field(body, "temperature", 1.0, 0, 1e6);
  s.top_p = number_field(body, "top_p", 1.0, 1e-9, 1);
  s.top_k = int_field(body, "top_k", 0, -1, int64_t(1) << 31);
  if (s.top_k < 0) s.top_k = 0;
  // The sample op keys Philox by a non-negative int64 seed; none given: a random one.
  std::random_device entropy;
  const uint64_t random_seed = ((uint64_t(entropy()) << 32) | entropy()) & uint64_t(INT64_MAX);
  s.seed = uint64_t(int_field(body, "seed", int64_t(random_seed), 0, INT64_MAX));
  s.ignore_eos = bool_field(body, "ignore_eos", false);
  r.stream = bool_field(body, "stream", false);
  if (const json* o = member(body, "stream_options")) {
    if (!o->is_object()) throw bad("stream_options", "expected an object");
    r.include_usage = bool_field(*o, "include_usage", false);
  }
  r.token_ids = bool_field(body, "return_token_ids", false);
  r.tokens_as_ids = bool_field(body, "return_tokens_as_token_ids", false);
  if (chat) {
    r.logprobs = bool_field(body, "logprobs", false);
    const int64_t top = int_field(body, "top_logprobs", 0, 0, 20);
    if (top > 0 && !r.logprobs) throw bad("top_logprobs", "requires logprobs to be true");
    s.top_logprobs = r.logprobs ? int(top) : -1;
  } else {
    const json* lp = member(body, "logprobs");
    if (lp != nullptr && !lp->is_number_integer())
      throw bad("logprobs", "expected an integer (the number of top logprobs)");
    r.logprobs = lp != nullptr;
    s.top_logprobs = r.logprobs ? int(int_field(body, "logprobs", 0, 0, 20)) : -1;
  }
  if (const json* stop = member(body, "stop")) {
    const json list = stop->is_string() ? json::array({*stop}) : *stop;
    if (!list.is_array()) throw bad("stop", "expected a string or an array of strings");
    for (const json& x : list) {
      if (!x.is_string() || x.get_ref<const std::string&>().empty())
        throw bad("stop", "expected non-empty strings");
      r.stop.push_back(x.get<std::string>());
    }
  }
  if (chat) {
    if (!model.chat) throw bad("messages", model.chat_error);
    if (!bool_field(body, "add_generation_prompt", true))
      throw bad("add_generation_prompt", "only true is supported by harness serve");
    if (bool_field(body, "continue_final_message", false))
      throw bad("continue_final_message", "not supported by harness serve");
    if (const json* k = member(body, "chat_template_kwargs");
        k != nullptr && !k->is_null() && !(k->is_object() && k->empty()))
      throw bad("chat_template_kwargs",
                "harness serve renders its template families without template switches");
    const std::string text = model.chat->render(parse_messages(body, model, &r));
    std::vector<int64_t> counts;  // each image's tokens, where they follow its size
    if (model.image.count == 0) {
      for (const model::TowerPixels& px : r.generation.images) counts.push_back(px.tokens);
    }
    r.generation.prompt = chat_prompt_ids(*model.tokenizer, text, model.image, counts);
  } else {
    r.generation.prompt = parse_prompt(body, model);
    if (const json* p = member(body, "prompt"); p != nullptr && p->is_string())
      r.prompt_text = p->get<std::string>();
    r.echo = bool_field(body, "echo", false);
    if (r.echo && r.stream) throw bad("echo", "not supported with stream: true");
    if (r.echo && r.logprobs) s.prompt_logprobs = s.top_logprobs;
  }
  return r;
}

}  // namespace h0::service
