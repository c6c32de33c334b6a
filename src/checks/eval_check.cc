// kind: eval — task accuracy of the platform's service on a task file (eval/task.h), item by
// item against a reference's per-item results, gated by eval/accuracy.h: agreement, and a drop of
// the score judged by a paired test on the same items. The reference is a file
// (golden/tools/gen_eval.py: transformers on the reference machine) or a run in the results store
// (`reference: label:stack=gpu-ref`: the reference platform's own eval run of the same task).
// Every item's result goes into the result's details ("items") and from there into the store's
// eval_items table, so a diff names the items that flipped.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "base/error.h"
#include "base/input_file.h"
#include "base/json_read.h"
#include "checks/e2e_request.h"
#include "checks/service_checks.h"
#include "compare/served_text.h"
#include "diff/statistics.h"
#include "eval/accuracy.h"
#include "eval/loglikelihood.h"
#include "eval/task.h"
#include "store/sqlite_store.h"

namespace h0::checks {
namespace {

namespace fs = std::filesystem;
using eval::ItemResult;
using eval::Scorer;

struct EvalSpec {
  std::string model_dir;  // absolute
  eval::Task task;
  std::string reference_path;  // a gen_eval.py file; empty: none
  std::string reference_run;   // a store selector (label:stack=gpu-ref); read when the case runs
  std::map<std::string, ItemResult> reference;
  eval::GateSpec gate;
  int64_t limit = 0;  // 0: every item
  std::optional<uint32_t> seed;
  int num_concurrent = 1;
  int retries = 2;
};

// Whether a failed request is worth sending again: the server or the network failed, or it
// asked to slow down; a 4xx other than 429 is the request's fault and would fail again.
bool retryable(const service::Result& r) {
  if (r.outcome == service::Outcome::kHttpError)
    return r.http_status >= 500 || r.http_status == 429 || r.http_status == 0;
  return r.outcome != service::Outcome::kOk;
}

std::string task_sha256_of(const store::ResultData& r) {
  const nlohmann::json d = base::parse_json_or_discarded(r.details_json);
  if (!d.is_object() || !d.contains("task") || !d["task"].is_object()) return "";
  return d["task"].value("sha256", "");
}

// The reference run's result for this task: the one with the same case id, else the only eval
// result of that run over the same task file (a day0 run's "accuracy/<model>/<task>" against a
// suite's "<model>/<task>"). Returns nullptr and sets *why when there is none or more than one.
const store::ResultData* reference_result(const store::RunData& run, const std::string& case_id,
                                          const std::string& task_sha256, std::string* why) {
  std::vector<const store::ResultData*> same_task;
  for (const auto& r : run.results) {
    if (r.kind != "eval") continue;
    if (r.case_id == case_id) return &r;
    if (task_sha256_of(r) == task_sha256) same_task.push_back(&r);
  }
  if (same_task.size() == 1) return same_task[0];
  if (same_task.empty()) {
    *why = "holds no eval result for case " + case_id + " or for this task file (sha256 " +
           task_sha256.substr(0, 12) + ")";
  } else {
    *why = "holds " + std::to_string(same_task.size()) +
           " eval results for this task file and none with case id " + case_id;
  }
  return nullptr;
}

// The per-item results of the reference run `selector` in the store at `db_path` for this case.
// Returns false with *why set when they cannot be had.
bool load_store_reference(const std::string& db_path, const std::string& selector,
                          const std::string& case_id, const eval::Task& task,
                          std::map<std::string, ItemResult>* out, std::string* where,
                          std::string* why) {
  *where = selector;
  std::error_code ec;
  if (db_path.empty() || !fs::is_regular_file(db_path, ec)) {
    *why = "no results store to read it from" +
           (db_path.empty() ? std::string() : " (" + db_path + " does not exist)");
    return false;
  }
  try {
    const auto db = store::SqliteStore::open(db_path);
    const int64_t id = db->resolve(selector);
    const std::optional<store::RunData> run = db->load_run(id);
    if (!run) {
      *why = "run " + std::to_string(id) + " is not in " + db_path;
      return false;
    }
    *where = "run " + std::to_string(id) + " (" + selector + ", platform " + run->platform +
             ") of " + db_path;
    const store::ResultData* r = reference_result(*run, case_id, task.sha256, why);
    if (r == nullptr) return false;
    *where += ", case " + r->case_id;
    if (const std::string sha = task_sha256_of(*r); sha != task.sha256) {
      *why = "its case " + r->case_id + " ran another version of " + task.path + " (task sha256 " +
             sha.substr(0, 12) + ", this one " + task.sha256.substr(0, 12) + ")";
      return false;
    }
    if (r->eval_items.empty()) {
      *why = "its case " + r->case_id + " (" + r->status + ") stored no items: " + r->message;
      return false;
    }
    for (const store::EvalItemData& e : r->eval_items) {
      nlohmann::json j = base::parse_json_or_discarded(e.evidence_json);
      if (!j.is_object()) j = nlohmann::json::object();
      j["id"] = e.item_id;
      j["answer"] = e.answer;
      j["correct"] = e.correct;
      ItemResult item = ItemResult::from_json(j);  // one without an answer is left unpaired
      (*out)[item.id] = std::move(item);
    }
    return true;
  } catch (const std::exception& e) {
    *why = e.what();
    return false;
  }
}

class EvalCase final : public PreparedCase {
 public:
  explicit EvalCase(EvalSpec spec, std::string case_id)
      : spec_(std::move(spec)), case_id_(std::move(case_id)) {}

  std::string service_model() const override { return spec_.model_dir; }

  CheckResult run(RunContext& ctx) override {
    if (!spec_.reference_run.empty()) {  // the reference platform's run, before any request
      std::string why;
      if (!load_store_reference(ctx.store_path(), spec_.reference_run, case_id_, spec_.task,
                                &spec_.reference, &spec_.reference_path, &why)) {
        CheckResult err;
        err.status = Status::kError;
        err.message = "reference " + spec_.reference_run + ": " + why;
        return err;
      }
    }
    ServiceHandle h = connect_service(ctx);
    if (!h.error.empty()) return service_unavailable(h);
    CheckResult out = result_for(h);
    const eval::Task& task = spec_.task;
    out.details["task"] = {{"file", task.path},
                           {"sha256", task.sha256},
                           {"scorer", eval::scorer_name(task.spec.scorer)},
                           {"licence", task.spec.licence}};
    if (!spec_.reference_path.empty()) out.details["reference"] = spec_.reference_path;

    const std::vector<size_t> order = chosen_items();
    // One request first: an engine that cannot score this task says so before the rest go out.
    std::vector<ItemResult> items(order.size());
    Counters counters;
    std::string cannot;
    score_item(h, task.items[order[0]], &items[0], &counters, &cannot);
    if (!cannot.empty()) {
      out.status = Status::kSkip;
      out.message =
          "cannot score " + std::string(eval::scorer_name(task.spec.scorer)) + " here: " + cannot;
      return out;
    }
    const double seconds = score_rest(h, order, &items, &counters);
    const Tally tally = tally_of(items);
    const eval::Comparison cmp = eval::compare(items, spec_.reference, spec_.gate);
    set_verdict(items, cmp, tally, &out);
    record_metrics(items.size(), cmp, tally, counters, seconds, &out);
    out.details["items"] = item_rows(items);
    out.details["flipped"] = cmp.flipped;
    if (!cmp.text_differs.empty()) out.details["completions_differ"] = cmp.text_differs;
    out.details["gate"] = gate_json();
    return out;
  }

  nlohmann::json describe() const override {
    return {{"kind", "eval"},
            {"model", spec_.model_dir},
            {"task", spec_.task.path},
            {"scorer", eval::scorer_name(spec_.task.spec.scorer)},
            {"items", chosen_items().size()},
            {"reference", spec_.reference_run.empty() ? spec_.reference_path : spec_.reference_run},
            {"gate", gate_json()}};
  }

 private:
  struct Counters {
    std::atomic<int64_t> requests{0}, retries{0};
  };

  // How the items went: answered (right or wrong) or failed (no answer after the retries).
  struct Tally {
    int64_t answered = 0, right = 0, failed = 0;
  };

  static Tally tally_of(const std::vector<ItemResult>& items) {
    Tally t;
    for (const auto& it : items) {
      if (!it.error.empty()) {
        ++t.failed;
        continue;
      }
      ++t.answered;
      t.right += it.correct;
    }
    return t;
  }

  // Scores items[1..] (the items `order` picks) on spec_.num_concurrent threads. Returns the
  // seconds it took.
  double score_rest(const ServiceHandle& h, const std::vector<size_t>& order,
                    std::vector<ItemResult>* items, Counters* counters) const {
    const eval::Task& task = spec_.task;
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<size_t> next{1};
    std::vector<std::thread> threads;
    for (int w = 0; w < std::min<int>(spec_.num_concurrent, int(order.size())); ++w) {
      threads.emplace_back([&] {
        std::string ignored;
        for (size_t k = next++; k < order.size(); k = next++)
          score_item(h, task.items[order[k]], &(*items)[k], counters, &ignored);
      });
    }
    for (auto& t : threads) t.join();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // The gate's verdict (eval/accuracy.h), failed where items got no answer or, against a
  // reference, have no reference result.
  void set_verdict(const std::vector<ItemResult>& items, const eval::Comparison& cmp,
                   const Tally& t, CheckResult* out) const {
    const bool has_reference = !spec_.reference_path.empty();
    const eval::Verdict v = eval::judge(cmp, spec_.gate, has_reference, t.answered, t.right);
    out->status = v.outcome == "pass"             ? Status::kPass
                  : v.outcome == "fail"           ? Status::kFail
                  : spec_.gate.inconclusive_fails ? Status::kFail
                                                  : Status::kSkip;
    out->message = v.message;
    if (t.failed > 0) {
      out->status = Status::kFail;
      out->message = std::to_string(t.failed) + " of " + std::to_string(items.size()) +
                     " items got no answer after " + std::to_string(spec_.retries) +
                     " retries (first: " + first_error(items) + "); " + out->message;
    }
    if (has_reference) {
      int64_t missing = 0;
      for (const auto& it : items) missing += spec_.reference.count(it.id) == 0;
      if (missing > 0 && out->status != Status::kFail) {
        out->status = Status::kFail;
        out->message = std::to_string(missing) + " items have no reference result in " +
                       spec_.reference_path + " (a different task file?); " + out->message;
      }
    }
  }

  // The score with its interval, the comparison with the reference (where there is one), and
  // the request counts and rate, over `n` items.
  void record_metrics(size_t n, const eval::Comparison& cmp, const Tally& t,
                      const Counters& counters, double seconds, CheckResult* out) const {
    const diff::Interval own = diff::wilson_interval(t.right, t.answered, spec_.gate.alpha);
    auto metric = [&](const char* name, double value) { out->metrics.push_back({name, value}); };
    metric("items", double(n));
    metric("score", t.answered ? double(t.right) / double(t.answered) : 0);
    metric("score_lo", own.lo);
    metric("score_hi", own.hi);
    if (!spec_.reference_path.empty()) {
      metric("ref_score", cmp.ref_score);
      metric("delta", cmp.delta);
      metric("delta_lo", cmp.delta_lo);
      metric("delta_hi", cmp.delta_hi);
      metric("agreement", cmp.agreement);
      metric("items_lost", double(cmp.lost));
      metric("items_gained", double(cmp.gained));
      metric("mcnemar_p", cmp.mcnemar_p);
      metric("unpaired_p", cmp.unpaired_p);
      metric("max_logprob_diff", cmp.max_logprob_diff);
      if (cmp.with_text > 0) metric("output_agreement", cmp.output_agreement);
    }
    metric("failed_items", double(t.failed));
    metric("retries", double(counters.retries.load()));
    metric("requests", double(counters.requests.load()));
    metric("items_per_s", seconds > 0 ? double(n - 1) / seconds : 0);
  }

  // Each item's result, with the reference's answer beside it where there is one.
  nlohmann::json item_rows(const std::vector<ItemResult>& items) const {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& it : items) {
      nlohmann::json row = it.to_json();
      if (auto r = spec_.reference.find(it.id); r != spec_.reference.end()) {
        row["ref_answer"] = r->second.answer;
        row["ref_correct"] = r->second.correct;
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  std::vector<size_t> chosen_items() const {
    std::vector<size_t> order(spec_.task.items.size());
    std::iota(order.begin(), order.end(), size_t(0));
    if (spec_.seed) {  // Fisher-Yates over mt19937 draws: the same order on every machine
      std::mt19937 g(*spec_.seed);
      for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[g() % i]);
    }
    if (spec_.limit > 0 && size_t(spec_.limit) < order.size()) order.resize(size_t(spec_.limit));
    return order;
  }

  nlohmann::json gate_json() const {
    const eval::GateSpec& g = spec_.gate;
    nlohmann::json j = {{"alpha", g.alpha},
                        {"inconclusive", g.inconclusive_fails ? "fail" : "skip"}};
    if (g.max_drop) j["max_drop"] = *g.max_drop;
    if (g.min_agreement) j["min_agreement"] = *g.min_agreement;
    if (g.min_score) j["min_score"] = *g.min_score;
    if (g.min_output_agreement) j["min_output_agreement"] = *g.min_output_agreement;
    if (g.max_logprob_diff) j["max_logprob_diff"] = *g.max_logprob_diff;
    return j;
  }

  static std::string first_error(const std::vector<ItemResult>& items) {
    for (const auto& it : items)
      if (!it.error.empty()) return it.id + ": " + it.error;
    return "";
  }

  // One request, sent again (at most spec_.retries times) while it fails for a retryable reason.
  service::Result send(const ServiceHandle& h, service::Request request, ItemResult* item,
                       Counters* counters) const {
    request.model = h.model;
    request.dialect = h.info.dialect;
    service::Result r;
    for (int attempt = 0; attempt <= spec_.retries; ++attempt) {
      if (attempt > 0) ++counters->retries;
      ++counters->requests;
      ++item->attempts;
      r = h.client->complete(request);
      if (r.ok() || !retryable(r)) break;
    }
    return r;
  }

  // Scores one item into *out. *cannot: set when the engine cannot score this task at all.
  void score_item(const ServiceHandle& h, const eval::Item& item, ItemResult* out,
                  Counters* counters, std::string* cannot) const {
    const eval::TaskSpec& ts = spec_.task.spec;
    out->id = item.id;
    service::Request base;
    base.sampling.temperature = 0;
    base.sampling.return_token_ids = true;  // where the dialect has them: the ids decide
    base.sampling.seed = 0;
    const tokenizer::Tokenizer* tok = tokenizer_of(spec_.model_dir);
    if (ts.scorer == Scorer::kGenerate) {
      service::Request req = base;
      req.prompt = item.prompt;
      req.sampling.max_tokens = ts.max_tokens;
      if (!ts.stop.empty()) req.extra["stop"] = ts.stop;
      const service::Result r = send(h, req, out, counters);
      if (!r.ok()) {
        out->error = failure_message(r);
        return;
      }
      const auto cut = [&](std::string text) {  // an engine that ignores stop: cut here
        for (const std::string& s : ts.stop)
          if (const size_t at = text.find(s); at != std::string::npos) text.resize(at);
        return text;
      };
      std::string text = cut(r.text);
      if (tok != nullptr && !r.token_ids.empty()) {
        // The text of the engine's ids, as the reference decodes its own: the engine's text
        // may differ from it only where its detokenizer settles incomplete UTF-8 (kept, noted).
        const std::vector<int32_t> ids(r.token_ids.begin(), r.token_ids.end());
        const std::string decoded = cut(tok->decode(ids, true));
        if (decoded != text &&
            compare::settle_text(text, decoded, tok, r.prompt_token_ids, r.token_ids).same) {
          out->engine_text = text;
          text = decoded;
        }
      }
      out->text = text;
      out->answer = eval::extract_answer(ts, text);
      out->correct = !out->answer.empty() && out->answer == eval::normalize_answer(item.target);
      return;
    }
    // Loglikelihood: one echo request per continuation, one generated token (ignored). The
    // continuation is located by tokens (eval/loglikelihood.h): with the model's tokenizer the
    // prompt is its ids where the engine takes them (else its text, tokenized alike).
    std::vector<eval::EchoScore> scored;
    for (const std::string& cont : item.continuations) {
      service::Request req = base;
      std::optional<eval::TokenizedPair> pair;
      if (tok != nullptr) pair = eval::tokenize_pair(*tok, item.prompt, cont);
      if (pair && h.info.dialect.id_prompts) {
        req.prompt_ids = pair->ids;
      } else {
        req.prompt = item.prompt + cont;
      }
      req.echo = true;
      req.sampling.max_tokens = 1;
      req.sampling.top_logprobs = 1;
      const service::Result r = send(h, req, out, counters);
      if (!r.ok()) {
        if (r.outcome == service::Outcome::kHttpError && r.http_status >= 400 &&
            r.http_status < 500 && r.http_status != 429)
          *cannot = "the engine refused an echo request with logprobs: " + failure_message(r);
        out->error = failure_message(r);
        return;
      }
      const eval::EchoScore s =
          pair ? eval::score_echo_tokens(r, *pair,
                                         r.completion_tokens >= 0 ? r.completion_tokens : 1, *tok)
               : eval::score_echo_offsets(r, item.prompt, cont);
      if (!s.cannot.empty()) {
        *cannot = std::string(r.tokens.empty() ? "the engine returns no prompt logprobs ("
                                               : "its echo cannot be scored (") +
                  s.cannot + ")";
        out->error = s.cannot;
        return;
      }
      scored.push_back(s);
    }
    if (ts.scorer == Scorer::kMultipleChoice) {
      size_t best = 0;
      for (size_t i = 0; i < scored.size(); ++i) {
        out->choice_logprobs.push_back(scored[i].logprob);
        if (scored[i].logprob > scored[best].logprob) best = i;
      }
      out->answer = std::to_string(best);
      out->correct = int64_t(best) == item.gold;
    } else {
      out->logprob = scored[0].logprob;
      out->answer = scored[0].greedy ? "greedy" : "not greedy";
      out->correct = scored[0].greedy;
    }
  }

  EvalSpec spec_;
  std::string case_id_;
};

std::map<std::string, ItemResult> load_reference(const suite::Case& c, const YAML::Node& node,
                                                 const std::string& path, const eval::Task& task) {
  const std::string text = base::read_regular_file(path, uint64_t(1) << 30);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("items") || !j.at("items").is_array())
    throw InputError(
        path, "not a reference file: expected {\"items\": [...]} (golden/tools/gen_eval.py)");
  if (j.contains("task_sha256") && j.at("task_sha256") != task.sha256)
    fail(c, node,
         "the reference " + path + " was made for another version of " + task.path +
             " (task_sha256 differs): regenerate it with golden/tools/gen_eval.py");
  std::map<std::string, ItemResult> out;
  size_t i = 0;
  for (const auto& row : j.at("items")) {
    try {
      ItemResult r = ItemResult::from_json(row);
      out[r.id] = std::move(r);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path, "items[" + std::to_string(i) + "]: " + e.what());
    }
    ++i;
  }
  return out;
}

eval::GateSpec parse_gate(const suite::Case& c) {
  eval::GateSpec g;
  const YAML::Node node = case_field(c, "gate");
  if (!node.IsDefined()) {
    g.max_drop = 0.02;
    return g;
  }
  if (!node.IsMap())
    fail(c, node,
         "gate must be a mapping {max_drop, alpha, min_agreement, min_output_agreement, "
         "max_logprob_diff, min_score, inconclusive}");
  auto share = [&](const YAML::Node& v, const std::string& what) {
    const double x = as_double(c, v, what);
    if (!(x >= 0 && x <= 1)) fail(c, v, what + " must be in [0, 1]");
    return x;
  };
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (key == "max_drop") {
      g.max_drop = share(kv.second, "max_drop");
    } else if (key == "alpha") {
      g.alpha = share(kv.second, "alpha");
      if (g.alpha <= 0 || g.alpha >= 1) fail(c, kv.second, "alpha must be in (0, 1)");
    } else if (key == "min_agreement") {
      g.min_agreement = share(kv.second, "min_agreement");
    } else if (key == "min_score") {
      g.min_score = share(kv.second, "min_score");
    } else if (key == "min_output_agreement") {
      g.min_output_agreement = share(kv.second, "min_output_agreement");
    } else if (key == "max_logprob_diff") {
      g.max_logprob_diff = as_double(c, kv.second, "max_logprob_diff");
      if (!(*g.max_logprob_diff >= 0)) fail(c, kv.second, "max_logprob_diff must be >= 0");
    } else if (key == "inconclusive") {
      const std::string v = as_string(c, kv.second, "inconclusive");
      if (v != "skip" && v != "fail") fail(c, kv.second, "inconclusive must be skip or fail");
      g.inconclusive_fails = v == "fail";
    } else {
      fail(c, kv.first,
           "unknown gate key '" + key +
               "' (expected one of: max_drop, alpha, min_agreement, min_output_agreement, "
               "max_logprob_diff, min_score, inconclusive)");
    }
  }
  return g;
}

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  EvalSpec s;
  const YAML::Node model = case_field(c, "model");
  if (!model.IsScalar())
    fail(c, model, "an eval check needs `model`: the model directory the service serves");
  s.model_dir = fs::absolute(resolve_case_path(c, model.Scalar())).lexically_normal().string();
  const YAML::Node task = case_field(c, "task");
  if (!task.IsScalar())
    fail(c, task, "an eval check needs `task`: a task file (JSONL, suites/tasks/)");
  YAML::Node overrides(YAML::NodeType::Map);
  for (const std::string& key : eval::spec_keys()) {
    if (const YAML::Node v = case_field(c, key); v.IsDefined()) overrides[key] = v;
  }
  s.task = eval::load_task(resolve_case_path(c, task.Scalar()), overrides, c.check->file);
  s.gate = parse_gate(c);
  s.limit = field_int(c, "limit", 0, 0);
  if (const YAML::Node seed = case_field(c, "seed"); seed.IsDefined())
    s.seed = uint32_t(as_int(c, seed, "seed", 0));
  s.gate.bootstrap_seed = s.seed.value_or(0);
  s.num_concurrent = int(field_int(c, "num_concurrent", 1, 1));
  s.retries = int(field_int(c, "retries", 2, 0));
  if (const YAML::Node ref = case_field(c, "reference"); ref.IsDefined()) {
    if (!ref.IsScalar())
      fail(c, ref,
           "reference must be a per-item results file (golden/tools/gen_eval.py) or a run of the "
           "results store (label:key=value, platform:NAME, stack:PREFIX, latest, an id)");
    const std::string path = resolve_case_path(c, ref.Scalar());
    std::error_code ec;
    if (store::SqliteStore::is_selector(ref.Scalar()) && !fs::exists(path, ec)) {
      s.reference_run = ref.Scalar();
    } else {
      s.reference_path = path;
      s.reference = load_reference(c, ref, s.reference_path, s.task);
    }
  }
  return std::make_unique<EvalCase>(std::move(s), c.id);
}

std::vector<std::string> eval_fields() {
  std::vector<std::string> f = {"model", "task", "reference",      "gate",
                                "limit", "seed", "num_concurrent", "retries"};
  for (const std::string& k : eval::spec_keys()) f.push_back(k);
  return f;
}

}  // namespace

CheckKind eval_check_kind() { return {"eval", eval_fields(), &prepare}; }

}  // namespace h0::checks
