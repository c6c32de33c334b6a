// kind: tool_calls — the conversation layer's tool calls on the platform's engine: each item of a
// task file (suites/tasks/tool_calls.jsonl: a chat prompt, `tools`, and a `tool_choice` of
// "required" or a named function, which engines constrain, so even a tiny random model must
// produce a valid call) is sent streamed and not. Every call must name a function of the request
// (the named one when named), carry an id and type "function", and have `arguments` that parse
// to a JSON object valid against the function's `parameters` (compare/json_schema.h); the finish
// reason must be tool_calls ("stop" also for a named function, as OpenAI answers); the streamed
// deltas must assemble to the plain answer's calls (names and arguments; ids are per response).
// An answer cut at max_tokens (finish_reason length) is not judged, calls parsed or not (they may
// be a call's beginning, and more may follow); an engine that refuses tool
// calls with a 4xx is said so; none judged: "not exercised".
#include <set>

#include "base/error.h"
#include "checks/e2e_request.h"
#include "checks/service_checks.h"
#include "compare/json_schema.h"
#include "suite/location.h"

namespace h0::checks {
namespace {

namespace fs = std::filesystem;

struct Item {
  std::string id, prompt, line;
  nlohmann::json tools, tool_choice;
};

struct Spec {
  std::string model_dir, tasks;
  std::vector<Item> items;
  int64_t max_tokens = 96;
  nlohmann::json request = nlohmann::json::object();  // the case's fields for every request
};

std::vector<Item> read_items(const suite::Case& c, const std::string& path, int64_t* max_tokens) {
  std::vector<Item> items;
  for (const nlohmann::json& j : read_task_items(c, path, max_tokens)) {
    const std::string where = j["line"];
    if (!j.contains("id") || !j.contains("prompt") || !j.contains("tools") ||
        !j["tools"].is_array() || !j.contains("tool_choice"))
      throw InputError(where, "expected {\"id\", \"prompt\", \"tools\": [...], \"tool_choice\"}");
    items.push_back({j["id"].get<std::string>(), j["prompt"].get<std::string>(), where, j["tools"],
                     j["tool_choice"]});
    for (const nlohmann::json& tool : j["tools"]) {  // an unreadable schema fails here
      compare::JsonSchema(tool["function"].value("parameters", nlohmann::json::object()), where);
    }
  }
  return items;
}

// What is wrong with `calls` for `item`; "" when each is a valid call.
std::string invalid_calls(const Item& item, const std::vector<service::ToolCall>& calls) {
  const std::string named =
      item.tool_choice.is_object() ? item.tool_choice["function"].value("name", "") : "";
  std::set<std::string> ids;
  for (size_t i = 0; i < calls.size(); ++i) {
    const service::ToolCall& call = calls[i];
    const std::string at = "call " + std::to_string(i) + " (" + call.name + ")";
    if (call.id.empty()) return at + ": no id";
    if (!ids.insert(call.id).second) return at + ": id " + call.id + " repeats an earlier call's";
    if (call.type != "function") return at + ": type \"" + call.type + "\", not \"function\"";
    if (!named.empty() && call.name != named) return at + ": not the named function " + named;
    const nlohmann::json* tool = nullptr;
    for (const nlohmann::json& t : item.tools)
      if (t["function"].value("name", "") == call.name) tool = &t;
    if (tool == nullptr) return at + ": a function the request did not offer";
    const nlohmann::json args = nlohmann::json::parse(call.arguments, nullptr, false);
    if (args.is_discarded())
      return at + ": arguments are not JSON: " + call.arguments.substr(0, 200);
    if (!args.is_object())
      return at + ": arguments " + call.arguments.substr(0, 100) + " are not a JSON object";
    const compare::JsonSchema schema(
        (*tool)["function"].value("parameters", nlohmann::json::object()), item.line);
    if (const std::string why = schema.why_invalid(args); !why.empty())
      return at + ": arguments " + call.arguments.substr(0, 100) +
             " do not validate against its parameters: " + why;
  }
  return "";
}

nlohmann::json calls_json(const std::vector<service::ToolCall>& calls) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : calls)
    out.push_back({{"id", c.id}, {"type", c.type}, {"name", c.name}, {"arguments", c.arguments}});
  return out;
}

class ToolCallCase final : public PreparedCase {
 public:
  explicit ToolCallCase(Spec spec) : spec_(std::move(spec)) {}

  std::string service_model() const override { return spec_.model_dir; }

  CheckResult run(RunContext& ctx) override {
    ServiceHandle h = connect_service(ctx);
    if (!h.error.empty()) return service_unavailable(h);
    CheckResult out = result_for(h);
    nlohmann::json rows = nlohmann::json::array();
    int valid = 0, cut = 0;
    std::string first_failure, refusal;
    for (const Item& item : spec_.items) {
      nlohmann::json row = {{"id", item.id}};
      auto failed = [&](const std::string& why) {
        row["verdict"] = "fail";
        row["why"] = why;
        if (first_failure.empty()) first_failure = item.id + ": " + why;
      };
      nlohmann::json fields = spec_.request;
      fields.update({{"tools", item.tools}, {"tool_choice", item.tool_choice}});
      service::Request r = chat_request(h, spec_.model_dir, item.prompt, spec_.max_tokens, fields);
      const service::Result plain = h.client->complete(r);
      r.stream = true;
      const service::Result streamed = plain.ok() ? h.client->complete(r) : service::Result{};
      if (refused(plain)) {  // the engine does not call tools: said, not judged
        row["verdict"] = "refused";
        row["error"] = plain.error.substr(0, 300);
        if (refusal.empty()) refusal = item.id + ": " + plain.error.substr(0, 200);
      } else if (!plain.ok()) {
        failed(failure_message(plain));
      } else if (!streamed.ok()) {
        failed("streamed: " + failure_message(streamed));
      } else {
        row["calls"] = calls_json(plain.tool_calls);
        row["finish_reason"] = plain.finish_reason;
        const bool named = item.tool_choice.is_object();
        if (plain.finish_reason == "length") {  // what came may be a call's beginning
          row["verdict"] = "cut";
          row["why"] = (plain.tool_calls.empty()
                            ? std::string("no call parsed")
                            : std::to_string(plain.tool_calls.size()) + " call(s) parsed") +
                       ", cut at max_tokens " + std::to_string(spec_.max_tokens) + ": \"" +
                       plain.text.substr(0, 80) + "\"";
          ++cut;
        } else if (plain.tool_calls.empty()) {
          failed("no tool call (finish_reason " + plain.finish_reason + ", content \"" +
                 plain.text.substr(0, 80) + "\")");
        } else if (const std::string why = invalid_calls(item, plain.tool_calls); !why.empty()) {
          failed(why);
        } else if (plain.finish_reason != "tool_calls" &&
                   !(named && plain.finish_reason == "stop")) {
          failed("finish_reason " + plain.finish_reason + ", not tool_calls");
        } else if (const std::string diff = stream_difference(plain, streamed); !diff.empty()) {
          row["streamed_calls"] = calls_json(streamed.tool_calls);
          failed(diff);
        } else {
          row["verdict"] = "valid";
          ++valid;
        }
      }
      rows.push_back(row);
    }
    out.details["items"] = rows;
    out.metrics = {
        {"valid", double(valid)}, {"cut", double(cut)}, {"items", double(spec_.items.size())}};
    const std::string counts =
        std::to_string(valid) + " of " + std::to_string(spec_.items.size()) +
        " answers with valid tool calls" +
        (cut ? ", " + std::to_string(cut) + " cut at max_tokens (not judged)" : "");
    if (first_failure.empty() && !refusal.empty() && valid > 0)
      first_failure = refusal + " (refused while other tool calls were answered)";
    if (!first_failure.empty()) {
      out.status = Status::kFail;
      out.message = first_failure + " (" + counts + ")";
    } else if (valid == 0) {
      out.status = Status::kSkip;
      out.message = "not exercised: " +
                    (refusal.empty() ? counts : "the engine refuses tool calls (" + refusal + ")");
    } else {
      out.status = Status::kPass;
      out.message = counts +
                    "; each call's arguments valid against its parameters, streamed "
                    "deltas assemble to the plain calls";
    }
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", "tool_calls"},
            {"model", spec_.model_dir},
            {"tasks", spec_.tasks},
            {"max_tokens", spec_.max_tokens},
            {"request", spec_.request}};
  }

 private:
  // The streamed calls against the plain ones: names and arguments (ids are per response).
  static std::string stream_difference(const service::Result& plain,
                                       const service::Result& streamed) {
    if (streamed.tool_calls.size() != plain.tool_calls.size())
      return "the streamed deltas assemble to " + std::to_string(streamed.tool_calls.size()) +
             " calls, the plain answer has " + std::to_string(plain.tool_calls.size());
    for (size_t i = 0; i < plain.tool_calls.size(); ++i) {
      const service::ToolCall &a = plain.tool_calls[i], &b = streamed.tool_calls[i];
      if (a.name != b.name || a.arguments != b.arguments)
        return "call " + std::to_string(i) + " streamed is " + b.name + "(" +
               b.arguments.substr(0, 100) + "), plain " + a.name + "(" +
               a.arguments.substr(0, 100) + ")";
      if (b.id.empty()) return "call " + std::to_string(i) + " streamed has no id";
    }
    return "";
  }

  Spec spec_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  Spec s;
  s.model_dir = served_model_dir(c, "tool_calls");
  s.tasks = resolve_case_path(c, field_string(c, "tasks", "suites/tasks/tool_calls.jsonl"));
  s.items = read_items(c, s.tasks, &s.max_tokens);
  s.max_tokens = field_int(c, "max_tokens", s.max_tokens, 1);
  s.request = case_request_fields(c);
  return std::make_unique<ToolCallCase>(std::move(s));
}

}  // namespace

CheckKind tool_call_check_kind() {
  return {"tool_calls", {"model", "tasks", "max_tokens", "request"}, &prepare};
}

}  // namespace h0::checks
