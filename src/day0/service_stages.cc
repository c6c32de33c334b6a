// The Day-0 stages that talk to the serving engine (the order and the gating are checklist.cc's):
// service start, text and image end-to-end, accuracy, determinism, serving features, the
// conversation layer, long context and the performance snapshot. They share one run of the e2e
// cases; stages.cc holds the stages before the service and what both share (stage_runs.h).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/error.h"
#include "base/text_format.h"
#include "day0/case_builders.h"
#include "day0/day0.h"
#include "day0/stage_runs.h"
#include "io/sharded_checkpoint.h"
#include "model/exec/executor.h"
#include "model/exec/generation.h"
#include "model/weights/model_source.h"
#include "plan/memory_plan.h"
#include "suite/suite.h"

namespace h0::day0 {
namespace {

const char* kNoE2eGoldens =
    "not compared: no e2e goldens for this model (on the reference machine: "
    "golden/tools/gen_e2e.py --model DIR --out G, then day0 --golden G)";

// The e2e cases for this model: the shipped ones, else the generated ones (e2e_checks). Without
// goldens a chat request still runs, as evidence that the service answers, but the text stage
// reports "not compared". Run once.
const std::vector<run::CaseOutcome>& e2e_cases(Context& ctx) {
  if (ctx.e2e) return *ctx.e2e;
  ctx.e2e = shipped(ctx, "e2e.yaml") ? run_cases(ctx, "e2e.yaml", ctx.model_name + "/*")
                                     : run_built(ctx, "e2e", e2e_checks(ctx));
  return *ctx.e2e;
}

std::vector<run::CaseOutcome> of_kind(const std::vector<run::CaseOutcome>& cases,
                                      const std::string& kind) {
  std::vector<run::CaseOutcome> out;
  for (const auto& c : cases) {
    if (c.kind == kind) out.push_back(c);
  }
  return out;
}

}  // namespace

StageResult run_service_stage(Context& ctx) {
  StageResult r = judge(of_kind(e2e_cases(ctx), "service"), "service checks");
  if (r.status == StageStatus::kPass)
    r.summary = r.cases.front().result.message;  // "started in 0.15 s, serves ..."
  return r;
}

StageResult run_e2e_text_stage(Context& ctx) {
  StageResult r = judge(of_kind(e2e_cases(ctx), "e2e_text"), "text requests");
  const bool uncompared =
      r.cases.size() == 1 && r.cases[0].id == ctx.model_name + "/chat_uncompared";
  if (uncompared) {  // evidence that the service answers, but nothing was compared: never a pass
    const std::string answer = r.cases[0].result.message;
    r.summary = std::string(kNoE2eGoldens) + "; the service answered: " + answer;
    if (r.status == StageStatus::kPass) r.status = StageStatus::kNotRun;
  }
  return r;
}

StageResult run_e2e_image_stage(Context& ctx) {
  if (!ctx.arch->has_vision)
    return {StageStatus::kNotApplicable, "not applicable: a text-only model", {}, {}};
  StageResult r = judge(of_kind(e2e_cases(ctx), "e2e_image"), "image requests");
  if (r.cases.empty()) r.summary = "not compared: no image e2e goldens for this model";
  return r;
}

bool accuracy_stage_applies(const Context& ctx) {
  return !ctx.options.eval_tasks.empty() || shipped(ctx, "eval.yaml");
}

const char* kNoEvalReference =
    "no reference to compare with: make one on the reference machine with golden/tools/gen_eval.py "
    "--model DIR --task FILE --out G/<task>.json and pass --golden G, or run day0 on the reference "
    "platform with --label stack=gpu-ref and pass --eval-reference label:stack=gpu-ref";

// "facts 0.283 [0.184, 0.408] vs 0.283, agreement 1.000": a task's score with its Wilson
// interval, and the reference's score and the agreement when there is a reference.
std::string accuracy_line(const run::CaseOutcome& c) {
  const std::string task = c.id.substr(c.id.rfind('/') + 1);
  if (metric(c, "items", -1) < 0) return task + ": " + c.result.message;
  std::string line = task + " " + fixed(metric(c, "score"), 3) + " [" +
                     fixed(metric(c, "score_lo"), 3) + ", " + fixed(metric(c, "score_hi"), 3) + "]";
  if (const double agreement = metric(c, "agreement"); agreement >= 0) {
    line += " vs " + fixed(metric(c, "ref_score"), 3) + ", agreement " + fixed(agreement, 3);
  }
  return line;
}

StageResult run_accuracy_stage(Context& ctx) {
  std::vector<run::CaseOutcome> cases = !ctx.options.eval_tasks.empty()
                                            ? run_built(ctx, "accuracy", eval_checks(ctx))
                                            : run_cases(ctx, "eval.yaml", ctx.model_name + "/*");
  std::string lines;
  nlohmann::json tasks = nlohmann::json::object();
  bool unreferenced = false;
  for (const auto& c : cases) {
    unreferenced = unreferenced || (c.result.status == checks::Status::kSkip &&
                                    !c.result.details.contains("reference"));
    lines += (lines.empty() ? "" : "; ") + accuracy_line(c);
    nlohmann::json m = nlohmann::json::object();
    for (const auto& [name, value] : c.result.metrics) m[name] = value;
    tasks[c.id] = {{"status", checks::status_name(c.result.status)}, {"metrics", m}};
  }
  StageResult r = judge(std::move(cases), "tasks");
  if (unreferenced) r.summary += "; " + std::string(kNoEvalReference);
  if (!lines.empty()) r.summary += ": " + lines;
  r.details = {{"tasks", tasks}};
  return r;
}

StageResult run_determinism_stage(Context& ctx) {
  return judge(of_kind(e2e_cases(ctx), "determinism"), "determinism checks");
}

StageResult run_serving_stage(Context& ctx) {
  StageResult r = judge(run_built(ctx, "serving", serving_checks(ctx)), "serving features");
  if (r.status != StageStatus::kPass) return r;
  // Which features were used and equal, and why the others were not exercised (the features
  // one reason holds for, together).
  std::string passed;
  std::vector<std::pair<std::string, std::string>> why_features;  // reason, features
  int exercised = 0;
  for (const run::CaseOutcome& c : r.cases) {
    const std::string feature = c.id.substr(c.id.rfind('/') + 1);
    if (c.result.status == checks::Status::kPass) {
      passed += (passed.empty() ? "" : ", ") + feature;
      ++exercised;
      continue;
    }
    std::string why = c.result.message;
    if (why.rfind("not exercised: ", 0) == 0) why = why.substr(15);
    if (why.find("has no '" + feature + "' variant") != std::string::npos)
      why = "no service variant turns it on";
    auto it = std::find_if(why_features.begin(), why_features.end(),
                           [&](const auto& w) { return w.first == why; });
    if (it == why_features.end()) {
      why_features.push_back({why, feature});
    } else {
      it->second += ", " + feature;
    }
  }
  std::string skipped;
  for (const auto& [why, features] : why_features)
    skipped += (skipped.empty() ? "" : "; ") + features + " (" + why + ")";
  r.summary = std::to_string(exercised) + " of " + std::to_string(r.cases.size()) +
              " features exercised and unchanged (" + passed + ")";
  if (!skipped.empty()) r.summary += "; not exercised: " + skipped;
  return r;
}

// The conversation layer on the served model (conversation_cases). The summary names what passed
// and why the rest was not exercised.
StageResult run_conversation_stage(Context& ctx) {
  const ConversationCases built = conversation_cases(ctx);
  StageResult r = judge(run_built(ctx, "conversation", built.checks), "conversation checks");
  std::string also;
  for (const std::string& a : built.absent) also += (also.empty() ? "" : "; ") + a;
  if (r.status != StageStatus::kPass && r.status != StageStatus::kNotRun) {
    if (!also.empty()) r.summary += "; not run: " + also;
    return r;
  }
  std::string passed, skipped;
  for (const run::CaseOutcome& c : r.cases) {
    const std::string what = c.id.substr(c.id.rfind('/') + 1);
    if (c.result.status == checks::Status::kPass) {
      passed += (passed.empty() ? "" : ", ") + what;
    } else {
      std::string why = c.result.message;
      if (why.rfind("not exercised: ", 0) == 0) why = why.substr(15);
      skipped += (skipped.empty() ? "" : "; ") + what + " (" + why.substr(0, 160) + ")";
    }
  }
  if (passed.empty()) {  // nothing this engine and model let it check: never a pass
    r.status = StageStatus::kNotApplicable;
    r.summary = "not applicable: nothing of the conversation layer could be exercised here";
  } else {
    r.summary = "passed: " + passed;
  }
  if (!skipped.empty()) r.summary += "; not exercised: " + skipped;
  if (!also.empty()) r.summary += "; not run: " + also;
  return r;
}

namespace {

// Runs `checks` one at a time while the --long budget lasts; the ids of those it leaves unrun go
// to `left`.
std::vector<run::CaseOutcome> run_within_budget(Context& ctx, const std::vector<YAML::Node>& checks,
                                                std::vector<std::string>* left) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<run::CaseOutcome> cases;
  for (const YAML::Node& check : checks) {
    const double spent =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (spent >= ctx.options.long_budget_s) {
      left->push_back(check["id"].as<std::string>());
      continue;
    }
    for (run::CaseOutcome& c : run_built(ctx, "long", {check})) cases.push_back(std::move(c));
  }
  return cases;
}

// The long stage's summary after judge: what passed at which lengths (else the lengths), what
// the budget left, the notes, and what ran but was not exercised.
void summarize_long(const Context& ctx, const LongCases& built,
                    const std::vector<std::string>& left, StageResult* r) {
  std::string ran, skipped;
  for (int64_t n : built.lengths) ran += (ran.empty() ? "" : ", ") + plan::with_commas(n);
  if (r->status == StageStatus::kPass) {  // name what passed: executor, chunked, service
    std::string passed;
    for (const run::CaseOutcome& c : r->cases) {
      const std::string what = c.id.substr(c.id.rfind('/') + 1);
      if (c.result.status == checks::Status::kPass)
        passed += (passed.empty() ? "" : ", ") + what;
      else
        skipped += "; " + what + " " + c.result.message.substr(0, 200);
    }
    r->summary = "passed at " + ran + " tokens: " + passed;
  } else {
    r->summary += "; lengths: " + ran + " tokens";
  }
  if (!left.empty()) {
    std::string names;
    for (const std::string& l : left) names += (names.empty() ? "" : ", ") + l;
    r->summary += "; not run within --long " + printf_string("%g", ctx.options.long_budget_s) +
                  " s: " + names;
  }
  for (const std::string& n : built.notes) r->summary += "; " + n;
  r->summary +=
      skipped;  // what ran and was not exercised (kv_capacity on an engine reporting none)
  r->details["lengths"] = built.lengths;
  r->details["not_run"] = left;
}

}  // namespace

// Long context, bounded by --long SECONDS: the executor at the long goldens' length against
// transformers' rows at sampled positions, in one pass and prefilled in chunks of 512 (without
// long goldens: a synthetic prompt of min(2048, max_position_embeddings) - 8 tokens prefilled in
// chunks against one pass, consistency only, said so), then the service's greedy continuation of
// the same long prompt when the service stage passed. One case at a time: once the budget is
// spent the rest is named, not run. The summary says which lengths ran.
StageResult run_long_stage(Context& ctx) {
  if (ctx.options.long_budget_s <= 0) return {StageStatus::kNotRun, "not run: --long 0", {}, {}};
  const LongCases built = long_cases(ctx);
  if (built.checks.empty()) {  // no long prompt to run here
    if (!ctx.arch->modelled) return not_modelled(ctx, "no long e2e golden for the service");
    return {StageStatus::kNotRun, "not run: " + built.notes.front(), {}, {}};
  }
  std::vector<std::string> left;
  StageResult r = judge(run_within_budget(ctx, built.checks, &left), "long-context cases");
  summarize_long(ctx, built, left, &r);
  return r;
}

// What the served load captured of the engine's own profile (service.profiler): "" when the
// platform names no profiler.
std::string engine_profile_text(const run::CaseOutcome& load) {
  const nlohmann::json& d = load.result.details;
  if (!d.contains("engine_profile")) return "";
  const nlohmann::json& p = d["engine_profile"];
  if (p.contains("error")) return "; engine profile not captured: " + p["error"].get<std::string>();
  std::string top;
  if (!p["top"].empty()) {
    top = ", heaviest " + p["top"][0]["name"].get<std::string>() + " " +
          fixed(100 * p["top"][0]["share"].get<double>(), 0) + "%";
  }
  return "; engine profile: " + std::to_string(p["steps"].get<int64_t>()) + " steps, " +
         std::to_string(p["rows"].get<int64_t>()) + " kernel rows" + top;
}

// Prefill and decode tokens/s of the executor on the platform (64-token prompt, 32 greedy
// steps, best of 3), TTFT/TPOT of the served load, and the costliest ops with the bandwidth
// they achieved against the platform's peak.
// The served numbers alone, for a family the executor does not model.
StageResult served_performance(Context& ctx) {
  StageResult r;
  const std::vector<run::CaseOutcome> loads =
      ctx.e2e ? of_kind(*ctx.e2e, "e2e_load") : std::vector<run::CaseOutcome>{};
  for (const auto& c : loads) {
    if (c.result.status != checks::Status::kPass) continue;
    const double ttft = metric(c, "ttft_p50_ms"), tpot = metric(c, "tpot_p50_ms"),
                 tps = metric(c, "output_tokens_per_s");
    r.status = StageStatus::kPass;
    r.summary = "served TTFT p50 " + fixed(ttft, 1) + " ms, TPOT p50 " + fixed(tpot, 2) + " ms, " +
                fixed(tps, 0) + " output tok/s" + engine_profile_text(c) +
                "; executor prefill/decode not measured (family " + ctx.arch->family +
                " is not modelled)";
    r.details = {{"ttft_p50_ms", ttft}, {"tpot_p50_ms", tpot}, {"served_tokens_per_s", tps}};
    r.cases = loads;
    return r;
  }
  r.status = StageStatus::kFail;
  r.summary =
      loads.empty() ? "no served load ran" : "the served load failed: " + loads[0].result.message;
  r.cases = loads;
  return r;
}

StageResult run_performance_stage(Context& ctx) {
  if (!ctx.arch->modelled) return served_performance(ctx);
  StageResult r;
  const model::ModelSource src = model::resolve_model(ctx.options.model);
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(src.dir);
  auto be = backend::Backend::open({ctx.platform.backend, ctx.platform.lib, ctx.platform.options});
  const std::vector<int64_t> prompt = model::synthetic_prompt(*ctx.arch, 64);
  const int steps = 32;
  model::Executor ex(
      *ctx.arch, ckpt, *be,
      {tensor::DType::kF32, backend::FallbackMode::kHost, 16, 64 + steps + 16, true});
  double prefill_s = 1e30, decode_s = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const model::Generation g = model::generate_greedy(ex, prompt, steps, nullptr, nullptr);
    prefill_s = std::min(prefill_s, g.prefill_s);
    decode_s = std::min(decode_s, g.decode_s);
  }
  const double prefill_tps = double(prompt.size()) / prefill_s,
               decode_tps = double(steps - 1) / decode_s;
  run::CaseOutcome perf{ctx.model_name + "/performance", "performance", "performance", {}, {}};
  perf.result.status = checks::Status::kPass;
  perf.result.metrics = {{"prefill_tokens_per_s", prefill_tps},
                         {"decode_tokens_per_s", decode_tps}};
  std::vector<model::OpStats> ops = ex.ops().profile();
  model::sort_by_total_time(&ops);
  double all_ns = 0;
  for (const auto& s : ops) all_ns += model::total_ns(s);
  nlohmann::json top = nlohmann::json::array();
  std::string top_text;
  for (size_t i = 0; i < ops.size() && i < 5; ++i) {
    const double t = model::total_ns(ops[i]),
                 gbps = t > 0 ? ops[i].bytes * double(ops[i].samples_ns.size()) / t : 0;
    nlohmann::json row = {{"op", ops[i].op},
                          {"shapes", ops[i].shapes},
                          {"calls", ops[i].calls},
                          {"total_ms", t / 1e6},
                          {"share", all_ns > 0 ? t / all_ns : 0},
                          {"achieved_gbps", gbps},
                          {"route", ops[i].route}};
    if (ctx.platform.peak_gbps > 0) row["peak_fraction"] = gbps / ctx.platform.peak_gbps;
    top.push_back(row);
    perf.result.profile.push_back(
        checks::summarize("op", ops[i].op + " " + ops[i].shapes, ops[i].samples_ns));
    if (i == 0) {
      top_text = "; top op " + ops[i].op + " " + fixed(100 * t / all_ns, 0) + "% of op time at " +
                 fixed(gbps, 1) + " GB/s" +
                 (ctx.platform.peak_gbps > 0
                      ? " (" + fixed(100 * gbps / ctx.platform.peak_gbps, 0) + "% of peak)"
                      : "");
    }
  }
  perf.result.details = {{"top_ops", top}};
  std::string served;
  const std::vector<run::CaseOutcome> loads =
      ctx.e2e ? of_kind(*ctx.e2e, "e2e_load") : std::vector<run::CaseOutcome>{};
  for (const auto& c : loads) {
    if (c.result.status == checks::Status::kPass) {
      const double ttft = metric(c, "ttft_p50_ms"), tpot = metric(c, "tpot_p50_ms");
      perf.result.metrics.push_back({"ttft_p50_ms", ttft});
      perf.result.metrics.push_back({"tpot_p50_ms", tpot});
      perf.result.metrics.push_back({"served_tokens_per_s", metric(c, "output_tokens_per_s")});
      served = "; served TTFT p50 " + fixed(ttft, 1) + " ms, TPOT p50 " + fixed(tpot, 2) + " ms" +
               engine_profile_text(c);
      break;
    }
  }
  r.status = StageStatus::kPass;
  r.summary = "prefill " + fixed(prefill_tps, 0) + " tok/s, decode " + fixed(decode_tps, 0) +
              " tok/s" + served + top_text;
  perf.result.message = r.summary;
  r.details = {
      {"top_ops", top}, {"prefill_tokens_per_s", prefill_tps}, {"decode_tokens_per_s", decode_tps}};
  r.cases.push_back(std::move(perf));
  r.cases.insert(r.cases.end(), loads.begin(), loads.end());
  return r;
}

}  // namespace h0::day0
