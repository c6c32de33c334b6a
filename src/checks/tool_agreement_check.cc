// kind: tool_agreement — tool calls with tool_choice "auto" (the default when `tools` are sent, so
// the field is left out), the platform's engine against a reference endpoint (another URL: the
// reference GPU's deployment, the model vendor's API), in MoonshotAI's K2-Vendor-Verifier terms.
// Each item of a task file (suites/tasks/tool_agreement.jsonl: a chat prompt and `tools`) goes to
// both, greedy; per item:
//   triggered   the answer holds a tool call;
//   schema ok   every call names an offered function and its arguments parse to an object that
//               validates against the function's parameters (compare/json_schema.h).
// Over the items, with the reference's trigger as the truth:
//   trigger_agreement  items where both triggered or neither did;
//   tool_call_f1       2·TP / (2·TP + FP + FN) (TP: both triggered; FP: only the platform; FN:
//                      only the reference); not measured when neither side ever triggered;
//   schema_accuracy    the platform's triggered answers whose calls are all schema ok; not
//                      measured when it never triggered.
// Each comes with its Wilson interval (alpha 0.05; F1 as the share 2·TP of 2·TP + FP + FN) and a
// gate (`gates`: defaults 0.95, 0.9, 0.95): a point estimate below its gate fails. The items that
// disagree are listed; every item goes to the store like an eval item (answer: the platform's
// calls, ref_answer: the reference's, correct: same trigger and same function names).
#include <set>

#include "base/error.h"
#include "base/text_format.h"
#include "checks/e2e_request.h"
#include "checks/service_checks.h"
#include "compare/json_schema.h"
#include "diff/statistics.h"

namespace h0::checks {
namespace {

struct Item {
  std::string id, prompt, line;
  nlohmann::json tools;
};

struct Gates {
  double trigger_agreement = 0.95, tool_call_f1 = 0.9, schema_accuracy = 0.95;
};

struct Spec {
  std::string model_dir, tasks;
  nlohmann::json reference;  // a ServiceInfo as JSON
  std::vector<Item> items;
  int64_t max_tokens = 64;
  Gates gates;
};

// One endpoint's answer to an item.
struct Answer {
  bool ok = false, triggered = false, schema_ok = true;
  std::string error, why_invalid;
  std::vector<std::string> names;
  std::string summary;  // "get_weather({...})" per call, or "no call: <text>"
};

Answer answer_of(const Item& item, const service::Result& r) {
  Answer a;
  a.ok = r.ok();
  if (!a.ok) {
    a.error = failure_message(r);
    a.summary = "error: " + a.error;
    return a;
  }
  a.triggered = !r.tool_calls.empty();
  if (!a.triggered) {
    a.summary = "no call: " + r.text.substr(0, 80);
    return a;
  }
  for (const service::ToolCall& call : r.tool_calls) {
    a.names.push_back(call.name);
    a.summary +=
        (a.summary.empty() ? "" : "; ") + call.name + "(" + call.arguments.substr(0, 80) + ")";
    if (!a.why_invalid.empty()) continue;
    const nlohmann::json* tool = nullptr;
    for (const nlohmann::json& t : item.tools)
      if (t["function"].value("name", "") == call.name) tool = &t;
    const nlohmann::json args = nlohmann::json::parse(call.arguments, nullptr, false);
    if (tool == nullptr) {
      a.why_invalid = call.name + " is not an offered function";
    } else if (args.is_discarded() || !args.is_object()) {
      a.why_invalid = call.name + ": arguments are not a JSON object";
    } else {
      const compare::JsonSchema schema(
          (*tool)["function"].value("parameters", nlohmann::json::object()), item.line);
      if (const std::string why = schema.why_invalid(args); !why.empty())
        a.why_invalid = call.name + ": " + why;
    }
  }
  a.schema_ok = a.why_invalid.empty();
  return a;
}

std::vector<Item> read_items(const suite::Case& c, const std::string& path, int64_t* max_tokens) {
  std::vector<Item> items;
  for (const nlohmann::json& j : read_task_items(c, path, max_tokens)) {
    const std::string where = j["line"];
    if (!j.contains("id") || !j.contains("prompt") || !j.contains("tools") ||
        !j["tools"].is_array() || j["tools"].empty())
      throw InputError(where, "expected {\"id\", \"prompt\", \"tools\": [...]}");
    items.push_back(
        {j["id"].get<std::string>(), j["prompt"].get<std::string>(), where, j["tools"]});
    for (const nlohmann::json& tool : j["tools"])
      compare::JsonSchema(tool["function"].value("parameters", nlohmann::json::object()), where);
  }
  return items;
}

// "0.917 [0.646, 0.985]"
std::string with_interval(double value, const diff::Interval& i) {
  return printf_string("%.3f", value) + " [" + printf_string("%.3f", i.lo) + ", " +
         printf_string("%.3f", i.hi) + "]";
}

class ToolAgreementCase final : public PreparedCase {
 public:
  explicit ToolAgreementCase(Spec spec) : spec_(std::move(spec)) {}

  std::string service_model() const override { return spec_.model_dir; }

  CheckResult run(RunContext& ctx) override {
    ServiceHandle h = connect_service(ctx);
    if (!h.error.empty()) return service_unavailable(h);
    ServiceHandle ref = connect_service(spec_.reference);
    CheckResult out = result_for(h);
    out.details["reference"] = ref.evidence;
    if (!ref.error.empty()) {
      out.status = Status::kError;
      out.message = "the reference endpoint " + ref.info.url + ": " + ref.error;
      return out;
    }
    Tally t;
    for (const Item& item : spec_.items) t.rows.push_back(compare_item(h, ref, item, &t));
    out.details["items"] = t.rows;
    out.details["disagreeing"] = t.disagreeing;
    if (!t.error.empty()) {
      out.status = Status::kFail;
      out.message = "no answer to compare: " + t.error;
      return out;
    }
    set_verdict(t, &out);
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", "tool_agreement"},
            {"model", spec_.model_dir},
            {"tasks", spec_.tasks},
            {"reference", spec_.reference.value("url", "")},
            {"gates",
             {{"trigger_agreement", spec_.gates.trigger_agreement},
              {"tool_call_f1", spec_.gates.tool_call_f1},
              {"schema_accuracy", spec_.gates.schema_accuracy}}}};
  }

 private:
  // The items compared so far: counts over those both endpoints answered, every item's row, the
  // disagreeing ones ("id (mine vs theirs)") and the first item an endpoint did not answer.
  struct Tally {
    int64_t n = 0, agree = 0, tp = 0, fp = 0, fn = 0, platform_calls = 0, schema_ok = 0;
    nlohmann::json rows = nlohmann::json::array();
    std::vector<std::string> disagreeing;
    std::string error;
  };

  // Sends `item` to the platform and the reference, counts the pair into `t` and returns the
  // item's row.
  nlohmann::json compare_item(const ServiceHandle& h, const ServiceHandle& ref, const Item& item,
                              Tally* t) const {
    // No tool_choice: "auto" is OpenAI's default with tools, and transformers serve refuses the
    // field (one of its unsupported fields).
    const nlohmann::json extra = {{"tools", item.tools}};
    const Answer mine = answer_of(
        item,
        h.client->complete(chat_request(h, spec_.model_dir, item.prompt, spec_.max_tokens, extra)));
    const Answer theirs =
        answer_of(item, ref.client->complete(chat_request(ref, spec_.model_dir, item.prompt,
                                                          spec_.max_tokens, extra)));
    nlohmann::json row = {
        {"id", item.id}, {"answer", mine.summary}, {"ref_answer", theirs.summary}};
    if (!mine.ok || !theirs.ok) {
      row["error"] = !mine.ok ? "platform: " + mine.error : "reference: " + theirs.error;
      if (t->error.empty()) t->error = item.id + ": " + row["error"].get<std::string>();
      row["correct"] = false;
      return row;
    }
    ++t->n;
    const bool same_trigger = mine.triggered == theirs.triggered;
    t->agree += same_trigger;
    t->tp += mine.triggered && theirs.triggered;
    t->fp += mine.triggered && !theirs.triggered;
    t->fn += !mine.triggered && theirs.triggered;
    if (mine.triggered) {
      ++t->platform_calls;
      t->schema_ok += mine.schema_ok;
      if (!mine.schema_ok) row["schema_error"] = mine.why_invalid;
    }
    const bool same = same_trigger && mine.names == theirs.names;
    row["correct"] = same && mine.schema_ok;
    row["ref_correct"] = theirs.schema_ok;
    row["triggered"] = mine.triggered;
    row["ref_triggered"] = theirs.triggered;
    if (!same || !mine.schema_ok)
      t->disagreeing.push_back(item.id + " (" + mine.summary.substr(0, 60) + " vs " +
                               theirs.summary.substr(0, 60) + ")");
    return row;
  }

  // One share with its Wilson interval into out's metrics and `parts` ("name value [lo, hi]",
  // or "name not measured (unmeasured)" when total is 0); below `gate`, a line in `failures`.
  static void measure(const std::string& name, int64_t hits, int64_t total, double gate,
                      const std::string& unmeasured, CheckResult* out,
                      std::vector<std::string>* parts, std::vector<std::string>* failures) {
    const double alpha = 0.05;
    if (total == 0) {
      parts->push_back(name + " not measured (" + unmeasured + ")");
      return;
    }
    const double value = double(hits) / double(total);
    const diff::Interval i = diff::wilson_interval(hits, total, alpha);
    out->metrics.push_back({name, value});
    out->metrics.push_back({name + "_lo", i.lo});
    out->metrics.push_back({name + "_hi", i.hi});
    parts->push_back(name + " " + with_interval(value, i));
    if (value < gate)
      failures->push_back(name + " " + printf_string("%.3f", value) + " is below its gate " +
                          printf_string("%.3f", gate));
  }

  // The three shares against their gates, the counts, and the message listing the disagreeing
  // items.
  void set_verdict(const Tally& t, CheckResult* out) const {
    std::vector<std::string> parts, failures;
    measure("trigger_agreement", t.agree, t.n, spec_.gates.trigger_agreement, "no items", out,
            &parts, &failures);
    measure("tool_call_f1", 2 * t.tp, 2 * t.tp + t.fp + t.fn, spec_.gates.tool_call_f1,
            "neither endpoint called a tool", out, &parts, &failures);
    measure("schema_accuracy", t.schema_ok, t.platform_calls, spec_.gates.schema_accuracy,
            "the platform called no tool", out, &parts, &failures);
    out->metrics.push_back({"items", double(t.n)});
    out->metrics.push_back({"platform_calls", double(t.platform_calls)});
    out->metrics.push_back({"reference_calls", double(t.tp + t.fn)});
    std::string summary;
    for (const std::string& p : parts) summary += (summary.empty() ? "" : ", ") + p;
    summary += " over " + std::to_string(t.n) + " items (platform called tools on " +
               std::to_string(t.platform_calls) + ", the reference on " +
               std::to_string(t.tp + t.fn) + ")";
    std::string listed;
    for (const std::string& d : t.disagreeing) listed += (listed.empty() ? "" : "; ") + d;
    if (!failures.empty()) {
      out->status = Status::kFail;
      out->message = failures[0] + ": " + summary + "; disagreeing: " + listed.substr(0, 600);
    } else {
      out->status = Status::kPass;
      out->message = summary + (listed.empty() ? "" : "; disagreeing: " + listed.substr(0, 400));
    }
  }

  Spec spec_;
};

// `reference`: a URL, or {url, model, api_key_env, dialect}.
nlohmann::json reference_of(const suite::Case& c) {
  const YAML::Node node = case_field(c, "reference");
  nlohmann::json ref = {{"ok", true}, {"dialect", service::dialect_named("openai")->to_json()}};
  auto url_of = [&](const YAML::Node& u) {
    const std::string url = u.IsScalar() ? u.Scalar() : "";
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
      fail(c, u, "reference: expected the reference endpoint's http(s) URL");
    return url;
  };
  if (node.IsScalar()) {
    ref["url"] = url_of(node);
  } else if (node.IsMap()) {
    ref["url"] = url_of(node["url"]);
    for (const char* key : {"model", "api_key_env"})
      if (node[key]) ref[key] = node[key].as<std::string>();
    if (node["dialect"]) {
      const auto d = service::dialect_named(node["dialect"].as<std::string>());
      if (!d)
        fail(c, node["dialect"],
             std::string("reference.dialect: expected one of ") + service::dialect_names());
      ref["dialect"] = d->to_json();
    }
  } else {
    fail(c, node,
         "a tool_agreement check needs `reference`: the reference endpoint's URL, or {url, "
         "model, api_key_env, dialect}");
  }
  return ref;
}

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  Spec s;
  s.model_dir = served_model_dir(c, "tool_agreement");
  s.reference = reference_of(c);
  s.tasks = resolve_case_path(c, field_string(c, "tasks", "suites/tasks/tool_agreement.jsonl"));
  s.items = read_items(c, s.tasks, &s.max_tokens);
  s.max_tokens = field_int(c, "max_tokens", s.max_tokens, 1);
  if (const YAML::Node g = case_field(c, "gates"); g) {
    if (!g.IsMap())
      fail(c, g, "gates: expected {trigger_agreement, tool_call_f1, schema_accuracy}");
    for (const auto& kv : g) {
      const std::string key = kv.first.Scalar();
      double* gate = key == "trigger_agreement" ? &s.gates.trigger_agreement
                     : key == "tool_call_f1"    ? &s.gates.tool_call_f1
                     : key == "schema_accuracy" ? &s.gates.schema_accuracy
                                                : nullptr;
      if (gate == nullptr)
        fail(c, kv.first,
             "gates." + key +
                 ": expected trigger_agreement, tool_call_f1 or "
                 "schema_accuracy");
      double v = -1;
      try {
        v = kv.second.as<double>();
      } catch (const YAML::Exception&) {
      }
      if (!(v >= 0 && v <= 1)) fail(c, kv.second, "gates." + key + ": expected a share in [0, 1]");
      *gate = v;
    }
  }
  return std::make_unique<ToolAgreementCase>(std::move(s));
}

}  // namespace

CheckKind tool_agreement_check_kind() {
  return {"tool_agreement", {"model", "tasks", "max_tokens", "reference", "gates"}, &prepare};
}

}  // namespace h0::checks
