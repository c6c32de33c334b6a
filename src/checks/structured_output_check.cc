// kind: structured_output — guided decoding on the platform's engine (the conversation layer's
// structured-output part): each item of a task file (suites/tasks/structured_output.jsonl: a
// chat prompt and a `response_format` json_schema or json_object, or vLLM's `structured_outputs`
// choice / regex extension) is sent streamed and not. A complete answer must validate (the JSON
// Schema with compare/json_schema.h; a JSON object; one of the choices; a full match of the
// regex), and the streamed answer must equal the plain one. An answer cut at max_tokens is not
// judged (a tiny random model fills a grammar's whitespace until the budget ends; vLLM's
// `--structured-outputs-config '{"disable_any_whitespace": true}'` forbids that); an item that
// expects `refused` (an invalid schema) must get a 4xx with a message, never a 5xx, a hang or an
// answer. An engine that refuses every valid constraint with a 4xx does not do guided decoding:
// "not exercised", with its words; one that refuses some and answers others fails. None judged:
// "not exercised".
#include <regex>

#include "base/error.h"
#include "checks/e2e_request.h"
#include "checks/service_checks.h"
#include "compare/e2e_compare.h"
#include "compare/json_schema.h"
#include "suite/location.h"

namespace h0::checks {
namespace {

namespace fs = std::filesystem;

struct Item {
  std::string id, prompt;
  nlohmann::json fields;  // response_format / structured_outputs, as sent
  bool refused = false;   // the engine must refuse it (4xx)
  std::string line;       // "file:N" for messages
};

struct Spec {
  std::string model_dir, tasks;
  std::vector<Item> items;
  int64_t max_tokens = 48;
  nlohmann::json request = nlohmann::json::object();  // the case's fields for every request
};

std::vector<Item> read_items(const suite::Case& c, const std::string& path, int64_t* max_tokens) {
  std::vector<Item> items;
  for (const nlohmann::json& j : read_task_items(c, path, max_tokens)) {
    const std::string where = j["line"];
    if (!j.contains("id") || !j.contains("prompt"))
      throw InputError(where,
                       "expected {\"id\", \"prompt\", \"response_format\" | "
                       "\"structured_outputs\", [\"expect\": \"refused\"]}");
    Item item{j["id"].get<std::string>(), j["prompt"].get<std::string>(), nlohmann::json::object(),
              j.value("expect", "") == "refused", where};
    for (const char* key : {"response_format", "structured_outputs"})
      if (j.contains(key)) item.fields[key] = j[key];
    if (item.fields.empty())
      throw InputError(where, "an item needs response_format or structured_outputs");
    items.push_back(std::move(item));
  }
  return items;
}

// Why a complete answer to `item` is not what its constraint allows; "" when it is.
std::string invalid(const Item& item, const std::string& text) {
  if (item.fields.contains("structured_outputs")) {
    const nlohmann::json& so = item.fields["structured_outputs"];
    if (so.contains("choice")) {
      for (const auto& choice : so["choice"])
        if (choice == text) return "";
      return "\"" + text + "\" is none of the choices " + so["choice"].dump();
    }
    if (so.contains("regex")) {
      if (std::regex_match(text, std::regex(so["regex"].get<std::string>()))) return "";
      return "\"" + text + "\" does not match " + so["regex"].get<std::string>();
    }
    if (so.contains("json")) {
      const nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
      if (value.is_discarded()) return "not JSON: " + text.substr(0, 200);
      return compare::JsonSchema(so["json"], item.line).why_invalid(value);
    }
    return "";
  }
  const nlohmann::json& rf = item.fields["response_format"];
  const nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (value.is_discarded()) return "not JSON: " + text.substr(0, 200);
  if (rf.value("type", "") == "json_object")
    return value.is_object() ? "" : "a JSON " + std::string(value.type_name()) + ", not an object";
  if (rf.value("type", "") == "json_schema")
    return compare::JsonSchema(rf["json_schema"]["schema"], item.line).why_invalid(value);
  return "";
}

class StructuredOutputCase final : public PreparedCase {
 public:
  explicit StructuredOutputCase(Spec spec) : spec_(std::move(spec)) {}

  std::string service_model() const override { return spec_.model_dir; }

  CheckResult run(RunContext& ctx) override {
    ServiceHandle h = connect_service(ctx);
    if (!h.error.empty()) return service_unavailable(h);
    CheckResult out = result_for(h);
    nlohmann::json items = nlohmann::json::array();
    Tally t;
    for (const Item& item : spec_.items) items.push_back(judge_item(h, item, &t));
    out.details["items"] = items;
    out.metrics = {{"valid", double(t.judged)},
                   {"refused", double(t.refused_invalid)},
                   {"cut", double(t.cut)},
                   {"items", double(spec_.items.size())}};
    set_verdict(t, &out);
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", "structured_output"},
            {"model", spec_.model_dir},
            {"tasks", spec_.tasks},
            {"max_tokens", spec_.max_tokens},
            {"request", spec_.request}};
  }

 private:
  // What the items came to, and the first failure and first refused valid constraint.
  struct Tally {
    int judged = 0, refused_invalid = 0, cut = 0, unsupported = 0, refused_valid_count = 0;
    std::string first_failure, refused_valid;
  };

  // Marks `row` failed for `why`, the first failure kept in `t`.
  static void fail_row(const Item& item, const std::string& why, nlohmann::json* row, Tally* t) {
    (*row)["verdict"] = "fail";
    (*row)["why"] = why;
    if (t->first_failure.empty()) t->first_failure = item.id + ": " + why;
  }

  // Sends one item (not streamed first) and returns its row: not sent, refused, failed, or the
  // answer judged by judge_answer.
  nlohmann::json judge_item(const ServiceHandle& h, const Item& item, Tally* t) const {
    nlohmann::json row = {{"id", item.id}};
    if (item.fields.contains("structured_outputs") && h.info.dialect.name != "vllm") {
      row["verdict"] = "not sent";
      row["why"] =
          "structured_outputs is vLLM's extension; the engine speaks " + h.info.dialect.name;
      ++t->unsupported;
      return row;
    }
    nlohmann::json fields = spec_.request;
    fields.update(item.fields);  // the item's constraint over the case's fields
    service::Request r = chat_request(h, spec_.model_dir, item.prompt, spec_.max_tokens, fields);
    const service::Result plain = h.client->complete(r);
    if (item.refused) {
      if (refused(plain)) {
        row["verdict"] = "refused";
        row["status"] = plain.http_status;
        row["error"] = plain.error.substr(0, 300);
        ++t->refused_invalid;
      } else {
        fail_row(item,
                 plain.ok() ? "an invalid constraint was accepted and answered \"" +
                                  plain.text.substr(0, 100) + "\" (a 4xx was due)"
                            : "refused as " + failure_message(plain) + " (a 4xx was due)",
                 &row, t);
      }
      return row;
    }
    if (refused(plain)) {  // the engine does not take this constraint: said, not judged
      row["verdict"] = "refused";
      row["error"] = plain.error.substr(0, 300);
      if (t->refused_valid.empty()) t->refused_valid = item.id + ": " + plain.error.substr(0, 200);
      ++t->refused_valid_count;
      return row;
    }
    if (!plain.ok()) {
      fail_row(item, failure_message(plain), &row, t);
      return row;
    }
    judge_answer(h, item, plain, &r, &row, t);
    return row;
  }

  // An answered item: sent again streamed, which must give the same answer; then the complete
  // answer must validate (one cut at max_tokens is not judged).
  void judge_answer(const ServiceHandle& h, const Item& item, const service::Result& plain,
                    service::Request* r, nlohmann::json* row, Tally* t) const {
    (*row)["text"] = plain.text.substr(0, 300);
    (*row)["finish_reason"] = plain.finish_reason;
    r->stream = true;
    const service::Result streamed = h.client->complete(*r);
    if (!streamed.ok()) {
      fail_row(item, "streamed: " + failure_message(streamed), row, t);
    } else if (const compare::ResponseVerdict v = compare::compare_responses(plain, streamed);
               !v.pass) {
      fail_row(item, "streamed differs from not streamed: " + v.message, row, t);
    } else if (plain.finish_reason == "length") {
      (*row)["verdict"] = "cut";
      (*row)["why"] = "cut at max_tokens " + std::to_string(spec_.max_tokens) + ": not judged";
      ++t->cut;
    } else if (const std::string why = invalid(item, plain.text); !why.empty()) {
      fail_row(item, "the complete answer does not validate: " + why, row, t);
    } else {
      (*row)["verdict"] = "valid";
      ++t->judged;
    }
  }

  // The verdict over the items: the first failure (a valid constraint refused while others were
  // answered counts as one), else a skip when nothing was judged, else a pass.
  static void set_verdict(Tally& t, CheckResult* out) {
    const std::string counts =
        std::to_string(t.judged) + " complete answers valid, " + std::to_string(t.refused_invalid) +
        " invalid constraints refused with a 4xx" +
        (t.cut ? ", " + std::to_string(t.cut) + " cut at max_tokens (not judged)" : "") +
        (t.unsupported
             ? ", " + std::to_string(t.unsupported) + " not sent (the dialect lacks the extension)"
             : "");
    if (t.first_failure.empty() && t.refused_valid_count > 0 && t.judged > 0) {
      // Some constraints answered, some refused: the engine's guided decoding is partial.
      t.first_failure =
          t.refused_valid + " (a valid constraint refused while others were answered)";
    }
    if (!t.first_failure.empty()) {
      out->status = Status::kFail;
      out->message = t.first_failure + " (" + counts + ")";
    } else if (t.refused_valid_count > 0 && t.judged == 0) {
      out->status = Status::kSkip;
      out->message = "not exercised: the engine refuses guided decoding (" + t.refused_valid + ")";
    } else if (t.judged == 0) {
      out->status = Status::kSkip;
      out->message = "not exercised: no complete answer to validate (" + counts + ")";
    } else {
      out->status = Status::kPass;
      out->message = counts + "; streamed equals not streamed";
    }
  }

  Spec spec_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  Spec s;
  s.model_dir = served_model_dir(c, "structured_output");
  s.tasks = resolve_case_path(c, field_string(c, "tasks", "suites/tasks/structured_output.jsonl"));
  s.items = read_items(c, s.tasks, &s.max_tokens);
  s.max_tokens = field_int(c, "max_tokens", s.max_tokens, 1);
  s.request = case_request_fields(c);
  for (const Item& item : s.items) {  // a schema the validator cannot read fails here, not later
    if (item.refused) continue;
    const nlohmann::json& rf = item.fields.value("response_format", nlohmann::json::object());
    if (rf.value("type", "") == "json_schema")
      compare::JsonSchema(rf["json_schema"]["schema"], item.line);
  }
  return std::make_unique<StructuredOutputCase>(std::move(s));
}

}  // namespace

CheckKind structured_output_check_kind() {
  return {"structured_output", {"model", "tasks", "max_tokens", "request"}, &prepare};
}

}  // namespace h0::checks
