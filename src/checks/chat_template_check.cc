// kind: chat_template — prompt rendering conformance: each golden of a directory
// (golden/chat/<model>/<case>.json, made by golden/tools/gen_chat.py with transformers'
// apply_chat_template) is a chat request — a system prompt, multi-turn history with assistant
// tool calls and tool results, `tools`, `chat_template_kwargs` switches, `add_generation_prompt`,
// images for a model with a vision tower (a repository path, sent as a data: URL) — and the token
// ids transformers renders it to (each image expanded as the model's processor does). The request
// goes to the engine (max_tokens 1, vLLM's return_token_ids) and the prompt ids it answers with
// must equal the golden's token for token; the first differing token is named with its text on both
// sides. An engine that returns no prompt ids is compared by usage.prompt_tokens alone, said so;
// one that refuses a request (a 4xx: it renders no tools, no template switch) is said so, not
// judged; none compared: "not exercised".
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "checks/e2e_request.h"
#include "checks/service_checks.h"

namespace h0::checks {
namespace {

namespace fs = std::filesystem;

struct Golden {
  std::string name, path, description;
  // messages, tools, chat_template_kwargs, add_generation_prompt: in the file's order, sent so
  nlohmann::ordered_json request;
  std::vector<int64_t> ids;
};

struct Spec {
  std::string model_dir, goldens;
  std::vector<Golden> cases;
};

// The request fields outside OpenAI's documented set: sent only to an engine of a dialect that
// takes extensions.
bool needs_extensions(const nlohmann::ordered_json& request) {
  return request.contains("chat_template_kwargs") || request.contains("add_generation_prompt");
}

std::vector<Golden> read_goldens(const suite::Case& c, const std::string& dir) {
  if (!fs::is_directory(dir))
    fail(c, case_field(c, "goldens"), "golden directory " + dir + " not found");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) fail(c, case_field(c, "goldens"), "no <case>.json in " + dir);
  std::vector<Golden> out;
  for (const fs::path& f : files) {
    std::ifstream in(f);
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(in, nullptr, false);
    const std::string where = f.string();
    if (!j.is_object() || !j.contains("request") || !j["request"].is_object() ||
        !j["request"].contains("messages") || !j["request"]["messages"].is_array() ||
        !j.contains("prompt_token_ids") || !j["prompt_token_ids"].is_array())
      throw InputError(where,
                       "expected {\"request\": {\"messages\": [...]}, \"prompt_token_ids\"}");
    Golden g{f.stem().string(), where, j.value("description", ""), j["request"], {}};
    inline_image_files(c, where, &g.request["messages"]);
    for (const nlohmann::ordered_json& id : j["prompt_token_ids"]) {
      if (!id.is_number_integer()) throw InputError(where, "prompt_token_ids: not integers");
      g.ids.push_back(id.get<int64_t>());
    }
    out.push_back(std::move(g));
  }
  return out;
}

// `id` as `1021 "<tool_call>"` with the model's tokenizer, else the id alone.
std::string token_named(const tokenizer::Tokenizer* tok, int64_t id) {
  std::string out = std::to_string(id);
  if (tok != nullptr && id >= 0 && id <= INT32_MAX) {
    const int32_t one = int32_t(id);
    out += ' ';
    out += nlohmann::json(tok->decode(std::span<const int32_t>(&one, 1))).dump();
  }
  return out;
}

// The rendering's text from `from` on, a few tokens, for the message.
std::string context_at(const tokenizer::Tokenizer* tok, const std::vector<int64_t>& ids,
                       size_t from) {
  if (tok == nullptr || from >= ids.size()) return "";
  std::vector<int32_t> piece;
  for (size_t i = from; i < std::min(ids.size(), from + 6); ++i) piece.push_back(int32_t(ids[i]));
  return nlohmann::json(tok->decode(piece)).dump();
}

// "" when equal; else the first difference, named.
std::string rendering_difference(const tokenizer::Tokenizer* tok, const std::vector<int64_t>& want,
                                 const std::vector<int64_t>& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  if (i == want.size() && i == got.size()) return "";
  const std::string lengths = " (transformers renders " + std::to_string(want.size()) +
                              " tokens, the engine " + std::to_string(got.size()) + ")";
  if (i == got.size())
    return "the engine's prompt ends at token " + std::to_string(i) +
           " where transformers goes on " + context_at(tok, want, i) + lengths;
  if (i == want.size())
    return "the engine's prompt goes on at token " + std::to_string(i) + " with " +
           context_at(tok, got, i) + " where transformers' ends" + lengths;
  return "token " + std::to_string(i) + " is " + token_named(tok, want[i]) +
         " in transformers' rendering (" + context_at(tok, want, i) + "), " +
         token_named(tok, got[i]) + " from the engine (" + context_at(tok, got, i) + ")" + lengths;
}

class ChatTemplateCase final : public PreparedCase {
 public:
  explicit ChatTemplateCase(Spec spec) : spec_(std::move(spec)) {}

  std::string service_model() const override { return spec_.model_dir; }

  CheckResult run(RunContext& ctx) override {
    ServiceHandle h = connect_service(ctx);
    if (!h.error.empty()) return service_unavailable(h);
    const tokenizer::Tokenizer* tok = tokenizer_of(spec_.model_dir);
    const bool extensions = h.info.dialect.name != "openai";
    CheckResult out = result_for(h);
    nlohmann::json rows = nlohmann::json::array();
    int by_ids = 0, by_count = 0;
    std::string first_failure;
    std::vector<std::string> unjudged;  // "case: why"
    for (const Golden& g : spec_.cases) {
      nlohmann::json row = {{"case", g.name}, {"golden", g.path}, {"tokens", g.ids.size()}};
      auto not_judged = [&](const std::string& verdict, const std::string& why) {
        row["verdict"] = verdict;
        row["why"] = why;
        unjudged.push_back(g.name + ": " + why);
      };
      auto failed = [&](const std::string& why) {
        row["verdict"] = "fail";
        row["why"] = why;
        if (first_failure.empty()) first_failure = g.name + ": " + why;
      };
      if (needs_extensions(g.request) && !extensions) {
        not_judged("not sent", "chat_template_kwargs / add_generation_prompt are extensions the " +
                                   h.info.dialect.name + " dialect does not take");
        rows.push_back(row);
        continue;
      }
      const service::Request r =
          chat_request(h, spec_.model_dir, "", 1, g.request, /*token_ids=*/true);
      const service::Result res = h.client->complete(r);
      if (refused(res)) {
        not_judged("refused", res.error.substr(0, 200));
      } else if (!res.ok()) {
        failed(failure_message(res));
      } else if (!res.prompt_token_ids.empty()) {
        const std::string diff = rendering_difference(tok, g.ids, res.prompt_token_ids);
        row["engine_tokens"] = res.prompt_token_ids.size();
        if (diff.empty()) {
          row["verdict"] = "equal";
          ++by_ids;
        } else {
          row["engine_prompt_token_ids"] = res.prompt_token_ids;
          failed(diff);
        }
      } else if (res.prompt_tokens >= 0) {
        row["engine_tokens"] = res.prompt_tokens;
        if (res.prompt_tokens == int64_t(g.ids.size())) {
          row["verdict"] = "equal count";
          ++by_count;
        } else {
          failed("the engine's prompt has " + std::to_string(res.prompt_tokens) +
                 " tokens (usage.prompt_tokens), transformers renders " +
                 std::to_string(g.ids.size()) +
                 " (count only: the engine returns no prompt token ids)");
        }
      } else {
        not_judged("not compared", "the engine returns neither prompt token ids nor usage");
      }
      rows.push_back(row);
    }
    out.details["cases"] = rows;
    const int compared = by_ids + by_count;
    out.metrics = {{"equal", double(compared)},
                   {"cases", double(spec_.cases.size())},
                   {"not_judged", double(unjudged.size())}};
    std::string counts = std::to_string(by_ids) + " of " + std::to_string(spec_.cases.size()) +
                         " renderings equal transformers' token for token";
    if (by_count)
      counts += ", " + std::to_string(by_count) +
                " in token count only (the engine returns no prompt token ids)";
    item_verdict(&out, first_failure, compared, std::move(counts), unjudged);
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", "chat_template"},
            {"model", spec_.model_dir},
            {"goldens", spec_.goldens},
            {"cases", spec_.cases.size()}};
  }

 private:
  Spec spec_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  Spec s;
  s.model_dir = served_model_dir(c, "chat_template");
  const std::string name = fs::path(s.model_dir).filename().string();
  s.goldens = resolve_case_path(c, field_string(c, "goldens", "golden/chat/" + name));
  s.cases = read_goldens(c, s.goldens);
  return std::make_unique<ChatTemplateCase>(std::move(s));
}

}  // namespace

CheckKind chat_template_check_kind() { return {"chat_template", {"model", "goldens"}, &prepare}; }

}  // namespace h0::checks
