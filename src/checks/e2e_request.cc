#include "checks/e2e_request.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "base/base64.h"
#include "base/error.h"
#include "base/json_read.h"
#include "checks/service_info.h"
#include "suite/location.h"

namespace h0::checks {
namespace fs = std::filesystem;

namespace {

const char* mime_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char ch) { return char(std::tolower(ch)); });
  if (ext == ".png") return "image/png";
  if (ext == ".jpg" || ext == ".jpeg") return "image/jpeg";
  if (ext == ".gif") return "image/gif";
  if (ext == ".webp") return "image/webp";
  return nullptr;
}

bool is_sent_as_written(const std::string& url) {
  return url.rfind("data:", 0) == 0 || url.rfind("http://", 0) == 0 ||
         url.rfind("https://", 0) == 0;
}

// A file's image URL: the file as a data: URL; nullopt with *why when it cannot be.
std::optional<std::string> file_data_url(const suite::Case& c, const std::string& url,
                                         std::string* why) {
  const std::string path = resolve_case_path(c, url);
  const char* mime = mime_of(path);
  if (mime == nullptr) {
    *why = "image '" + url + "': expected a .png, .jpg, .gif or .webp file, or a data: URL";
    return std::nullopt;
  }
  const std::optional<std::string> bytes = suite::read_text_file(path);  // binary-safe
  if (!bytes) {
    *why = "image '" + url + "' not found (looked for " + path + ")";
    return std::nullopt;
  }
  return std::string("data:") + mime + ";base64," + base::base64_encode(*bytes);
}

// An image part's URL as sent: data: and http(s) URLs as written, a file as a data: URL.
std::string image_url(const suite::Case& c, const YAML::Node& at, const std::string& url) {
  if (is_sent_as_written(url)) return url;
  std::string why;
  std::optional<std::string> data = file_data_url(c, url, &why);
  if (!data) fail(c, at, why);
  return *data;
}

// The OpenAI message shape, as YAML or as the JSON of a golden file (converted to YAML nodes
// by the caller): {role, content: "text" | [{type: text, text}, {type: image_url, image_url:
// {url}}]}.
std::vector<service::ChatMessage> parse_messages(const suite::Case& c, const YAML::Node& node) {
  if (!node.IsSequence() || node.size() == 0)
    fail(c, node, "messages must be a non-empty list of {role, content}");
  std::vector<service::ChatMessage> out;
  for (const YAML::Node& m : node) {
    if (!m.IsMap() || !m["role"].IsScalar() || !m["content"].IsDefined()) {
      fail(c, m, "a message needs `role` and `content`, e.g. {role: user, content: \"Hello\"}");
    }
    service::ChatMessage msg;
    msg.role = m["role"].Scalar();
    const YAML::Node content = m["content"];
    if (content.IsScalar()) {
      msg.content.push_back({"text", content.Scalar(), ""});
    } else if (content.IsSequence()) {
      for (const YAML::Node& part : content) {
        const std::string type =
            part.IsMap() && part["type"].IsScalar() ? part["type"].Scalar() : "";
        if (type == "text" && part["text"].IsScalar()) {
          msg.content.push_back({"text", part["text"].Scalar(), ""});
        } else if (type == "image_url" && part["image_url"].IsMap() &&
                   part["image_url"]["url"].IsScalar()) {
          msg.content.push_back(
              {"image_url", "",
               image_url(c, part["image_url"]["url"], part["image_url"]["url"].Scalar())});
        } else {
          fail(c, part,
               "a content part is {type: text, text: ...} or {type: image_url, image_url: {url: "
               "...}}");
        }
      }
    } else {
      fail(c, content, "content must be a string or a list of parts");
    }
    out.push_back(std::move(msg));
  }
  return out;
}

YAML::Node json_to_yaml(const nlohmann::json& j) {
  return YAML::Load(j.dump());  // JSON is YAML; a golden file is small
}

std::vector<int64_t> parse_ids(const suite::Case& c, const YAML::Node& node) {
  if (!node.IsSequence() || node.size() == 0)
    fail(c, node, "prompt_ids must be a non-empty list of token ids");
  std::vector<int64_t> ids;
  for (const YAML::Node& n : node) {
    const std::optional<int64_t> id = int_of(n);
    if (!id) fail(c, n, "prompt_ids must hold integers");
    ids.push_back(*id);
    if (ids.back() < 0) fail(c, n, "a token id cannot be negative");
  }
  return ids;
}

}  // namespace

std::vector<std::string> e2e_request_fields() {
  return {"model",       "golden", "messages", "prompt", "prompt_ids", "max_tokens",
          "temperature", "seed",   "top_k",    "top_p",  "ignore_eos", "top_logprobs"};
}

bool has_image(const service::Request& r) {
  for (const auto& m : r.messages) {
    for (const auto& p : m.content) {
      if (p.type == "image_url") return true;
    }
  }
  return false;
}

E2eRequest parse_e2e_request(const suite::Case& c) {
  E2eRequest e;
  const YAML::Node model = case_field(c, "model");
  if (!model.IsScalar())
    fail(c, model, "an e2e check needs `model`: the model directory the service serves");
  e.model_dir = fs::absolute(resolve_case_path(c, model.Scalar())).lexically_normal().string();

  // The request's source nodes: the case's fields, or the golden file's request (as YAML).
  std::optional<YAML::Node> messages, prompt, ids;
  auto from_case = [&](const char* name, std::optional<YAML::Node>* out) {
    if (const YAML::Node n = case_field(c, name); n.IsDefined()) out->emplace(n);
  };
  from_case("messages", &messages);
  from_case("prompt", &prompt);
  from_case("prompt_ids", &ids);
  int64_t max_tokens = 16;
  if (const YAML::Node g = case_field(c, "golden"); g.IsDefined()) {
    if (!g.IsScalar())
      fail(c, g, "golden must be the path of a golden/e2e/<model>/<case>.json file");
    e.golden_path = resolve_case_path(c, g.Scalar());
    std::error_code ec;
    if (!std::filesystem::exists(e.golden_path, ec))
      fail(c, g, "golden file " + g.Scalar() + " not found (looked for " + e.golden_path + ")");
    try {
      e.golden = base::read_json_file(e.golden_path);
    } catch (const InputError& ex) {
      fail(c, g, "golden file " + ex.where() + ": " + ex.message());
    }
    if (messages || prompt || ids) {
      fail(c, g,
           "give the request either in the golden file or as messages/prompt/prompt_ids, not both");
    }
    const nlohmann::json req = e.golden.value("request", nlohmann::json::object());
    if (req.contains("messages")) messages.emplace(json_to_yaml(req["messages"]));
    if (req.contains("prompt")) prompt.emplace(json_to_yaml(req["prompt"]));
    if (req.contains("prompt_ids")) ids.emplace(json_to_yaml(req["prompt_ids"]));
    max_tokens = req.value("max_tokens", max_tokens);
    if (!messages && !prompt && !ids) {
      fail(c, g,
           "golden file " + e.golden_path +
               " has no request.messages, request.prompt or request.prompt_ids");
    }
  }
  const int given = int(messages.has_value()) + int(prompt.has_value()) + int(ids.has_value());
  if (given != 1)
    fail(c, c.check->node,
         "an e2e check needs exactly one of: golden, messages, prompt, prompt_ids");
  service::Request& r = e.request;
  if (messages) {
    r.messages = parse_messages(c, *messages);
    size_t images = 0;
    for (const auto& m : r.messages) {
      for (const auto& p : m.content) images += p.type == "image_url";
    }
    e.description =
        "chat: " + std::to_string(r.messages.size()) + " messages" +
        (images ? ", " + std::to_string(images) + " image" + (images > 1 ? "s" : "") : "");
  } else if (prompt) {
    if (!prompt->IsScalar()) fail(c, *prompt, "prompt must be a string");
    r.prompt = prompt->Scalar();
    e.description = "completion of a " + std::to_string(r.prompt.size()) + "-byte prompt";
  } else {
    r.prompt_ids = parse_ids(c, *ids);
    e.description = "completion of " + std::to_string(r.prompt_ids.size()) + " prompt tokens";
  }
  service::Sampling& s = r.sampling;
  s.max_tokens = field_int(c, "max_tokens", max_tokens, 1);
  s.temperature = field_double(c, "temperature", 0.0);
  if (s.temperature < 0) fail(c, case_field(c, "temperature"), "temperature must be >= 0");
  if (case_field(c, "seed").IsDefined()) s.seed = uint64_t(field_int(c, "seed", 0, 0));
  if (case_field(c, "top_k").IsDefined()) s.top_k = field_int(c, "top_k", 0, 0);
  if (case_field(c, "top_p").IsDefined()) {
    s.top_p = field_double(c, "top_p", 1.0);
    if (!(*s.top_p > 0 && *s.top_p <= 1))
      fail(c, case_field(c, "top_p"), "top_p must be in (0, 1]");
  }
  s.ignore_eos = field_bool(c, "ignore_eos", false);
  s.top_logprobs = int(field_int(c, "top_logprobs", e.golden.is_null() ? 0 : 5, 0));
  return e;
}

service::Request request_variant(const service::Request& base, int64_t k) {
  service::Request r = base;
  const std::string tag = " (variant " + std::to_string(k) + ")";
  if (!r.messages.empty()) {
    for (auto it = r.messages.back().content.rbegin(); it != r.messages.back().content.rend();
         ++it) {
      if (it->type == "text") {
        it->text += tag;
        return r;
      }
    }
    r.messages.back().content.push_back({"text", tag, ""});
  } else if (!r.prompt_ids.empty()) {
    std::rotate(r.prompt_ids.begin() + 1,
                r.prompt_ids.begin() + 1 + k % std::max<size_t>(1, r.prompt_ids.size() - 1),
                r.prompt_ids.end());
    if (k % 2 == 1) std::reverse(r.prompt_ids.begin() + 1, r.prompt_ids.end());
  } else {
    r.prompt += tag;
  }
  return r;
}

ServiceHandle connect_service(RunContext& ctx) { return connect_service(ctx.service()); }

ServiceHandle connect_service(const nlohmann::json& service) {
  ServiceHandle h;
  if (service.is_null()) {
    h.error = "no service was started for this case";
    return h;
  }
  h.info = ServiceInfo::from_json(service);
  const ServiceInfo& info = h.info;
  h.evidence = {{"url", info.url},
                {"command", info.command},
                {"log", info.log_path},
                {"startup_s", info.startup_s}};
  if (!info.ok) {
    h.error = "the service is not running: " + info.error;
    h.evidence["log_tail"] = info.log_tail;
    return h;
  }
  h.client = std::make_unique<service::Client>(info.client_options());
  h.model = info.model;
  h.evidence["dialect"] = info.dialect.to_json();
  if (h.model.empty()) {
    std::vector<std::string> ids;
    const service::Result r = h.client->models(&ids);
    if (!r.ok() || ids.empty()) {
      h.error =
          "GET /v1/models: " + (r.ok() ? std::string("no models listed") : failure_message(r));
      return h;
    }
    h.model = ids[0];
    h.model_ids = std::move(ids);
  }
  h.evidence["model"] = h.model;
  return h;
}

std::set<int64_t> end_tokens(const std::string& model_dir, const tokenizer::Tokenizer& tok) {
  std::set<int64_t> out;
  if (tok.eos_id()) out.insert(*tok.eos_id());
  const fs::path gen = fs::path(model_dir) / "generation_config.json";
  std::error_code ec;
  if (!fs::exists(gen, ec)) return out;
  try {
    const nlohmann::json j = base::read_json_file(gen.string());
    const nlohmann::json e = j.value("eos_token_id", nlohmann::json());
    if (e.is_number_integer()) out.insert(e.get<int64_t>());
    if (e.is_array())
      for (const auto& v : e)
        if (v.is_number_integer()) out.insert(v.get<int64_t>());
  } catch (const InputError&) {
  }
  return out;
}

std::string served_model_dir(const suite::Case& c, const std::string& kind) {
  const YAML::Node model = case_field(c, "model");
  if (!model.IsScalar())
    fail(c, model, "a " + kind + " check needs `model`: the model directory the service serves");
  return fs::absolute(resolve_case_path(c, model.Scalar())).lexically_normal().string();
}

service::Request chat_request(const ServiceHandle& h, const std::string& model_dir,
                              const std::string& prompt, int64_t max_tokens,
                              nlohmann::ordered_json extra, bool token_ids) {
  service::Request r;
  r.model = h.model;
  r.messages = {{"user", {{"text", prompt, ""}}}};
  r.sampling.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.sampling.return_token_ids = token_ids;
  r.extra = std::move(extra);
  adapt_request(h, model_dir, &r);
  return r;
}

bool refused(const service::Result& r) {
  return r.outcome == service::Outcome::kHttpError && r.http_status >= 400 && r.http_status < 500;
}

void inline_image_files(const suite::Case& c, const std::string& where,
                        nlohmann::ordered_json* messages) {
  for (nlohmann::ordered_json& m : *messages) {
    if (!m.is_object() || !m.contains("content") || !m["content"].is_array()) continue;
    for (nlohmann::ordered_json& part : m["content"]) {
      if (!part.is_object() || part.value("type", "") != "image_url") continue;
      nlohmann::ordered_json* url = part.contains("image_url") && part["image_url"].is_object() &&
                                            part["image_url"].contains("url") &&
                                            part["image_url"]["url"].is_string()
                                        ? &part["image_url"]["url"]
                                        : nullptr;
      if (url == nullptr) throw InputError(where, "an image_url part without image_url.url");
      if (is_sent_as_written(url->get<std::string>())) continue;
      std::string why;
      std::optional<std::string> data = file_data_url(c, url->get<std::string>(), &why);
      if (!data) throw InputError(where, why);
      *url = *data;
    }
  }
}

nlohmann::json case_request_fields(const suite::Case& c) {
  const YAML::Node node = case_field(c, "request");
  if (!node) return nlohmann::json::object();
  if (!node.IsMap()) fail(c, node, "request: expected a mapping of request body fields");
  return suite::yaml_to_json(c.check->file, node);
}

void item_verdict(CheckResult* out, const std::string& first_failure, int judged,
                  std::string counts, const std::vector<std::string>& unjudged) {
  std::string listed;
  for (const std::string& u : unjudged) listed += (listed.empty() ? "" : "; ") + u;
  if (!listed.empty()) counts += "; not judged: " + listed.substr(0, 600);
  if (!first_failure.empty()) {
    out->status = Status::kFail;
    out->message = first_failure + " (" + counts + ")";
  } else if (judged == 0) {
    out->status = Status::kSkip;
    out->message = "not exercised: " + counts;
  } else {
    out->status = Status::kPass;
    out->message = counts;
  }
}

std::vector<nlohmann::json> read_task_items(const suite::Case& c, const std::string& path,
                                            int64_t* max_tokens) {
  std::ifstream in(path);
  if (!in) fail(c, case_field(c, "tasks"), "task file " + path + " not found");
  std::vector<nlohmann::json> items;
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    const std::string where = path + ":" + std::to_string(n);
    if (text.empty()) continue;
    if (text[0] == '#') {
      const size_t colon = text.find(':');
      if (colon != std::string::npos && text.compare(0, colon, "# max_tokens") == 0)
        *max_tokens = std::atoll(text.c_str() + colon + 1);
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) throw InputError(where, "expected one JSON object per line");
    j["line"] = where;
    items.push_back(std::move(j));
  }
  if (items.empty()) throw InputError(path, "no items");
  return items;
}

const tokenizer::Tokenizer* tokenizer_of(const std::string& model_dir) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<tokenizer::Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(model_dir);
  if (it == cache.end()) {
    std::unique_ptr<tokenizer::Tokenizer> t;
    const fs::path file = fs::path(model_dir) / "tokenizer.json";
    try {
      if (fs::exists(file))
        t = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_file(file.string()));
    } catch (const std::exception&) {
      t.reset();  // a tokenizer we cannot read: the checks say they could not use it
    }
    it = cache.emplace(model_dir, std::move(t)).first;
  }
  return it->second.get();
}

bool has_token_ids(const service::Result& r) {
  if (!r.token_ids.empty()) return true;
  if (r.tokens.empty()) return false;
  for (const auto& t : r.tokens) {
    if (!t.id) return false;
  }
  return true;
}

AdaptedRequest adapt_request(const ServiceHandle& h, const std::string& model_dir,
                             service::Request* r) {
  AdaptedRequest out;
  r->dialect = h.info.dialect;
  for (const auto& [field, value] : h.info.request.items()) {  // the platform's own fields
    if (!r->extra.contains(field)) r->extra[field] = value;
  }
  const service::Sampling& s = r->sampling;
  if (s.ignore_eos && !r->dialect.ignore_eos)
    out.notes.push_back(
        "ignore_eos not sent (the engine does not take it): output lengths are real");
  if (s.top_k && !r->dialect.top_k)
    out.notes.push_back("top_k not sent (the engine does not take it)");
  if (r->prompt_ids.empty() || r->dialect.id_prompts) return out;
  const tokenizer::Tokenizer* tok = tokenizer_of(model_dir);
  if (tok == nullptr) {
    out.cannot = "the engine takes only text prompts, and " + model_dir +
                 " has no tokenizer.json to turn the token-id prompt into text";
    return out;
  }
  std::vector<int32_t> ids(r->prompt_ids.begin(), r->prompt_ids.end());
  // The ids the tokenizer's encode adds by itself (a BOS): the engine adds them again.
  const std::vector<int32_t> added = tok->encode("", true);
  size_t skip = 0;
  while (skip < added.size() && skip < ids.size() && ids[skip] == added[skip]) ++skip;
  if (skip < added.size()) skip = 0;
  const std::string text =
      tok->decode(std::span<const int32_t>(ids.data() + skip, ids.size() - skip), false);
  if (tok->encode(text, true) != ids) {
    out.cannot =
        "the engine takes only text prompts, and no text tokenizes to these prompt ids (decoded "
        "and encoded again with the engine's special tokens they differ, e.g. a missing BOS)";
    return out;
  }
  r->prompt = text;
  r->prompt_ids.clear();
  out.notes.push_back(
      "the token-id prompt was sent as its decoded text (the engine takes only text prompts; "
      "the text tokenizes back to the same ids)");
  return out;
}

CheckResult result_for(const ServiceHandle& h) {
  CheckResult r;
  r.details = h.evidence;
  return r;
}

CheckResult result_for(const ServiceHandle& h, const E2eRequest& request) {
  CheckResult r = result_for(h);
  r.details["request"] = request.description;
  if (!request.golden_path.empty()) r.details["golden"] = request.golden_path;
  return r;
}

StartedRequest start_request(RunContext& ctx, const E2eRequest& req) {
  StartedRequest s;
  s.h = connect_service(ctx);
  if (!s.usable()) {
    s.out = service_unavailable(s.h);
    return s;
  }
  s.out = result_for(s.h, req);
  s.request = req.request;
  s.request.model = s.h.model;
  s.adapted = adapt_request(s.h, req.model_dir, &s.request);
  return s;
}

CheckResult service_unavailable(const ServiceHandle& h) {
  CheckResult r;
  r.status = Status::kFail;
  r.message = h.error;
  r.details = h.evidence;
  return r;
}

Latency latency_of(const service::Result& r) {
  Latency l;
  l.e2e_ms = r.e2e_s * 1e3;
  l.ttft_ms = r.ttft_s >= 0 ? r.ttft_s * 1e3 : -1;
  l.tokens = r.completion_tokens >= 0 ? r.completion_tokens
             : !r.token_ids.empty()   ? int64_t(r.token_ids.size())
                                      : int64_t(r.chunk_arrival_s.size());
  for (size_t i = 1; i < r.chunk_arrival_s.size(); ++i) {
    l.itl_ms.push_back((r.chunk_arrival_s[i] - r.chunk_arrival_s[i - 1]) * 1e3);
  }
  if (l.ttft_ms >= 0 && l.tokens > 1) l.tpot_ms = (l.e2e_ms - l.ttft_ms) / double(l.tokens - 1);
  return l;
}

nlohmann::json response_evidence(const service::Result& r) {
  std::string text = r.text.size() > 2000 ? r.text.substr(0, 2000) + "..." : r.text;
  nlohmann::json j = {{"outcome", service::outcome_name(r.outcome)},
                      {"text", text},
                      {"finish_reason", r.finish_reason},
                      {"token_ids", r.token_ids},
                      {"prompt_tokens", r.prompt_tokens},
                      {"completion_tokens", r.completion_tokens}};
  if (!r.ok()) {
    j["error"] = r.error;
    j["http_status"] = r.http_status;
    j["body_tail"] = r.body_tail;
  }
  return j;
}

std::string failure_message(const service::Result& r) {
  std::string m = std::string(service::outcome_name(r.outcome));
  if (r.http_status != 0 && r.outcome == service::Outcome::kHttpError)
    m += " " + std::to_string(r.http_status);
  return m + ": " + r.error;
}

}  // namespace h0::checks
