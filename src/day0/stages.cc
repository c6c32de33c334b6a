// The Day-0 stage runners before the service, one function each (the order and the gating are
// checklist.cc's; service_stages.cc has the service's): each runs its cases and judges them into a
// status and a summary with the key numbers.
// Accuracy stages run the shipped suites' cases for the model (suites/*.yaml, ids
// "<model name>/..."); a model without shipped goldens runs the cases case_builders.cc builds
// against --golden (golden/tools/dump_hf.py output). The service stages share one run of the e2e
// cases.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "backend/backend.h"
#include "base/error.h"
#include "base/text_format.h"
#include "checks/coverage.h"
#include "day0/case_builders.h"
#include "day0/day0.h"
#include "day0/stage_runs.h"
#include "io/sharded_checkpoint.h"
#include "model/config/tower.h"
#include "model/exec/executor.h"
#include "model/weights/checkpoint_inventory.h"
#include "model/weights/inventory.h"
#include "model/weights/model_source.h"
#include "plan/memory_plan.h"
#include "plan/plan_report.h"
#include "plan/rank_loader.h"
#include "run/isolation.h"
#include "suite/suite.h"

namespace h0::day0 {
namespace {

namespace fs = std::filesystem;

std::string suite_path(const Context& ctx, const std::string& name) {
  return (fs::path(ctx.suites_dir) / name).string();
}

std::vector<run::CaseOutcome> run_suite(Context& ctx, const suite::Suite& s,
                                        const std::string& filter) {
  run::RunOptions o;
  o.filter = filter;
  o.world = ctx.world;
  o.isolate =
      ctx.platform.isolation != "none" && ctx.world == nullptr;  // MPI does not survive fork
  o.service_log_dir = (fs::path(ctx.options.out) / "service-logs").string();
  o.store_path = ctx.options.db;  // an eval reference may be a run there
  return run::run_suite(s, ctx.platform, o, nullptr).cases;
}

}  // namespace

std::vector<run::CaseOutcome> run_cases(Context& ctx, const std::string& name,
                                        const std::string& filter) {
  checks::register_kinds_with_suite_parser();
  return run_suite(ctx, suite::load_suite(suite_path(ctx, name)), filter);
}

std::vector<run::CaseOutcome> run_built(Context& ctx, const std::string& name,
                                        const std::vector<YAML::Node>& checks) {
  checks::register_kinds_with_suite_parser();
  return run_suite(ctx, suite::suite_of_checks("day0-" + name, "day0 " + name + " cases", checks),
                   "");
}

StageResult judge(std::vector<run::CaseOutcome> cases, const std::string& what) {
  StageResult r;
  if (cases.empty()) {
    r.status = StageStatus::kNotRun;
    r.summary = "no " + what;
    return r;
  }
  int failed = 0, skipped = 0;
  std::string first, first_skip;
  for (const auto& c : cases) {
    if (checks::is_failing(c.result.status) && failed++ == 0)
      first = c.id + ": " + c.result.message;
    if (c.result.status == checks::Status::kSkip && skipped++ == 0)
      first_skip = c.id + ": " + c.result.message;
  }
  r.summary = std::to_string(cases.size()) + " " + what + ", " + std::to_string(failed) + " failed";
  if (failed > 0) r.summary += " (first: " + first + ")";
  if (skipped > 0) r.summary += ", " + std::to_string(skipped) + " skipped (" + first_skip + ")";
  r.status = failed > 0                     ? StageStatus::kFail
             : skipped == int(cases.size()) ? StageStatus::kNotRun
                                            : StageStatus::kPass;
  r.cases = std::move(cases);
  return r;
}

bool shipped(const Context& ctx, const std::string& suite) {
  checks::register_kinds_with_suite_parser();
  return !run::list_cases(suite::load_suite(suite_path(ctx, suite)), ctx.model_name + "/*").empty();
}

namespace {

const char* kNoGoldens =
    "no goldens for this model: make them on the reference machine with golden/tools/dump_hf.py "
    "and pass --golden DIR";

// The layers to check alone, one per block type (plan::representative_layers), into `details`,
// each marked dumped when --golden holds a dump of a layer of its type (`dumped`); returns those
// not dumped, described: "0 (MLA, dense MLP; 1.9 GiB), 1 (MLA, MoE; 12.1 GiB, over the device's
// 8.0 GiB; 58 layers like it)".
std::string undumped_layers(const Context& ctx, const std::set<int64_t>& dumped,
                            nlohmann::json* details) {
  const double device = ctx.platform.device_memory_bytes;
  std::string text;
  nlohmann::json rows = nlohmann::json::array();
  for (const plan::LayerChoice& c : plan::representative_layers(*ctx.arch)) {
    const bool covered = std::any_of(c.layers.begin(), c.layers.end(),
                                     [&](int64_t l) { return dumped.count(l) > 0; });
    if (!covered) text += (text.empty() ? "" : ", ") + plan::describe(c, device);
    rows.push_back(plan::to_json(c, device));
    rows.back()["dumped"] = covered;
  }
  (*details)["representative_layers"] = rows;
  return text;
}

// Layer (`layer` true) or full-model cases against --golden's dumps (golden_checks). Without a
// whole-model dump the layer stage names the layers to dump alone, one per block type, and which
// of them --golden lacks.
StageResult golden_stage(Context& ctx, bool layer) {
  const GoldenDumps dumps = golden_dumps(ctx);
  const std::vector<YAML::Node> checks = golden_checks(ctx, dumps, layer);
  std::string alone;  // the layers of layer dumps, checked alone
  if (layer) {
    for (const auto& [f, l] : dumps.layers)
      alone += (alone.empty() ? "" : ", ") + std::to_string(l);
  }
  if (checks.empty()) {
    if (!dumps.layers.empty()) {
      return {StageStatus::kNotRun,
              "--golden holds layer dumps only (dump_hf.py --layers): the model stage needs a "
              "whole-model dump",
              {},
              {}};
    }
    if (layer) {
      StageResult r{StageStatus::kNotRun, kNoGoldens, {}, {}};
      r.summary += "; the layers to check alone, one per block type: " +
                   undumped_layers(ctx, {}, &r.details) + " (dump_hf.py --layers N for each)";
      return r;
    }
    return {StageStatus::kNotRun, kNoGoldens, {}, {}};
  }
  StageResult r = judge(run_built(ctx, layer ? "layers" : "model", checks),
                        layer ? "layer cases" : "model cases");
  if (!alone.empty()) {
    r.summary += "; layer(s) " + alone +
                 " alone from dump_hf.py --layers dumps (their input the embedding output)";
    if (dumps.prompts.empty()) {  // no whole-model dump covers every layer
      std::set<int64_t> dumped;
      for (const auto& [f, l] : dumps.layers) dumped.insert(l);
      const std::string missing = undumped_layers(ctx, dumped, &r.details);
      if (!missing.empty()) r.summary += "; block types with no layer dump: " + missing;
    }
  }
  if (dumps.image_dumps > 0)
    r.summary += "; " + std::to_string(dumps.image_dumps) +
                 " dump(s) of an image prompt in --golden not compared here (the image stage's)";
  return r;
}

}  // namespace

double metric(const run::CaseOutcome& c, const std::string& name, double fallback) {
  for (const auto& [n, v] : c.result.metrics) {
    if (n == name) return v;
  }
  return fallback;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

StageResult not_modelled(const Context& ctx, const std::string& what) {
  const model::Architecture& a = *ctx.arch;
  return {StageStatus::kNotModelled,
          "not run: family " + a.family + " is not modelled by the executor (" + what + ")",
          {},
          {{"family", a.family}, {"modelled", false}}};
}

namespace {

std::string mib(int64_t bytes) { return fixed(double(bytes) / (1024.0 * 1024.0), 1) + " MiB"; }

// Stage 1 for a family the executor does not model: what the config says, and the exact
// counts from the checkpoint's headers.
StageResult unmodelled_config_stage(Context& ctx) {
  const model::Architecture& a = *ctx.arch;
  std::string summary = a.family + (a.architecture.empty() ? "" : " (" + a.architecture + ")") +
                        ": not modelled by the executor, its stages will not run; ";
  nlohmann::json details = {
      {"family", a.family},          {"architecture", a.architecture},
      {"modelled", false},           {"modelled_families", model::known_architectures()},
      {"layers", a.text.num_layers}, {"hidden_size", a.text.hidden_size}};
  if (!a.derived.empty()) {  // fields under another name, or derived as transformers does
    details["derived"] = a.derived;
    for (const std::string& d : a.derived) summary += d + "; ";
  }
  if (!model::has_checkpoint(ctx.options.model)) {
    summary += "exact parameter counts need the checkpoint (this directory holds the config only)";
    details["needs"] = "checkpoint";
    return {StageStatus::kPass, summary, {}, details};
  }
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(ctx.options.model);
  model::CheckpointTally t;
  ctx.stored = model::inventory_from_checkpoint(a, ckpt, &t);
  std::string dtypes;
  nlohmann::json by = nlohmann::json::object();
  for (const auto& [dtype, d] : t.by_dtype) {
    dtypes += (dtypes.empty() ? "" : ", ") + dtype + " " + mib(d.bytes);
    by[dtype] = {{"tensors", d.tensors}, {"elements", d.elements}, {"bytes", d.bytes}};
  }
  summary += plan::with_commas(t.parameters) + " parameters in " + std::to_string(t.tensors) +
             " tensors from the checkpoint (" + dtypes + ")";
  // The saved state that is no parameter, apart, so the count is transformers' num_parameters().
  if (!t.count_note.empty()) summary += "; " + t.count_note;
  const std::vector<std::string> lines = model::class_lines(t);
  for (size_t i = 1; i < lines.size(); ++i) summary += "; " + lines[i];
  details["parameters"] = t.parameters;
  details["tensors"] = t.tensors;
  details["checkpoint_bytes"] = t.bytes;
  details["by_dtype"] = by;
  details["classes"] = model::class_json(t);
  return {StageStatus::kPass, summary, {}, details};
}

}  // namespace

const char* stage_status_name(StageStatus s) {
  switch (s) {
    case StageStatus::kPass:
      return "pass";
    case StageStatus::kFail:
      return "fail";
    case StageStatus::kBlocked:
      return "blocked";
    case StageStatus::kNotModelled:
      return "not_modelled";
    case StageStatus::kNotApplicable:
      return "not_applicable";
    default:
      return "not_run";
  }
}

StageResult run_config_stage(Context& ctx) {
  ctx.arch = model::load_any_architecture(ctx.options.model);
  if (!ctx.arch->modelled) return unmodelled_config_stage(ctx);
  ctx.model_ops = checks::ops_of_model(*ctx.arch);
  ctx.model_dtype = ctx.arch->text.dtype.value_or(tensor::DType::kBF16);
  const model::ParamCounts c = model::build_inventory(*ctx.arch).counts;
  std::string summary = ctx.arch->architecture + ": " + plan::with_commas(c.total) + " parameters";
  if (c.active != c.total) summary += ", " + plan::with_commas(c.active) + " active";
  return {
      StageStatus::kPass, summary, {}, {{"parameters", c.total}, {"active_parameters", c.active}}};
}

StageResult run_coverage_stage(Context& ctx) {
  if (!ctx.arch->modelled) return not_modelled(ctx, "the ops a model runs come from its family");
  // op -> native / decomposed / host / missing. Asked of the backend in a child process when the
  // platform isolates: a runtime opened in this process would be inherited half-alive by the
  // op stage's forked workers (PoCL's threads do not survive fork: its kernels then never return).
  const auto ask = [&](const std::string&) {
    auto be =
        backend::Backend::open({ctx.platform.backend, ctx.platform.lib, ctx.platform.options});
    nlohmann::json routes = nlohmann::json::object();
    for (const auto& row : checks::coverage(*be, {ctx.model_dtype}, ctx.model_ops))
      routes[row.op] = checks::coverage_word(row.routes[0].second);
    return routes.dump();
  };
  nlohmann::json routes;
  if (ctx.platform.isolation != "none" && ctx.world == nullptr) {
    run::Worker worker([&](const std::string& request) {
      try {
        return ask(request);
      } catch (const std::exception& e) {
        return nlohmann::json{{"error", e.what()}}.dump();
      }
    });
    std::string reply, why;
    if (worker.call("coverage", ctx.platform.case_timeout_s, &reply, &why) !=
        run::Worker::Reply::kOk)
      return {StageStatus::kFail, "opening the backend: the platform's process " + why, {}, {}};
    routes = nlohmann::json::parse(reply);
    if (routes.contains("error"))
      return {
          StageStatus::kFail, "opening the backend: " + routes["error"].get<std::string>(), {}, {}};
  } else {
    routes = nlohmann::json::parse(ask(""));
  }
  int native = 0, fallback = 0;
  std::string missing;
  for (const auto& [op, word_json] : routes.items()) {
    const std::string word = word_json.get<std::string>();
    native += word == "native";
    fallback += word == "decomposed" || word == "host";
    if (word == "missing") missing += (missing.empty() ? "" : ", ") + op;
  }
  std::string summary =
      std::to_string(native) + " native, " + std::to_string(fallback) + " fallback";
  if (!missing.empty())
    return {StageStatus::kFail, summary + ", missing: " + missing, {}, {{"routes", routes}}};
  return {StageStatus::kPass,
          summary + " of the model's " + std::to_string(ctx.model_ops.size()) + " ops in " +
              tensor::dtype_name(ctx.model_dtype),
          {},
          {{"routes", routes}}};
}

StageResult run_memory_plan_stage(Context& ctx) {
  if (!(ctx.platform.device_memory_bytes > 0))
    return {StageStatus::kFail, "the platform file states no device_memory", {}, {}};
  if (const auto issue = plan::check_plan(*ctx.arch, ctx.parallel)) {
    return {StageStatus::kFail,
            "--mesh " + plan::plan_name(ctx.parallel) + ": " + issue->message,
            {},
            {}};
  }
  plan::MemoryOptions o;
  o.device_memory = ctx.platform.device_memory_bytes;
  std::string source;
  o.weights = plan::checkpoint_weight_format(*ctx.arch, &source);
  if (!ctx.arch->modelled) {
    if (!ctx.stored) {
      return {StageStatus::kNotRun,
              "needs the checkpoint: the weights of a family the executor does not model are "
              "read from its safetensors headers",
              {},
              {}};
    }
    o.checkpoint = &*ctx.stored;
    if (ctx.arch->text.dtype && tensor::is_float(*ctx.arch->text.dtype) &&
        tensor::dtype_size(*ctx.arch->text.dtype) <= 2)
      o.kv_dtype = *ctx.arch->text.dtype;
  }
  if (const model::Tower* tower = model::tower_of(*ctx.arch))
    o.max_image_pixels = tower->max_image_pixels(ctx.options.model);
  const plan::MemoryPlan p = plan::plan_memory(*ctx.arch, ctx.parallel, o);
  const std::string on = ctx.parallel.world() == 1
                             ? "one device"
                             : std::to_string(ctx.parallel.world()) + " devices (" +
                                   plan::plan_name(ctx.parallel) + ")";
  nlohmann::json details = {{"kv_tokens", p.kv_tokens},
                            {"plan", plan::plan_name(ctx.parallel)},
                            {"total_weights", p.total_weights},
                            {"kv_bytes_per_token", p.kv_bytes_per_token},
                            {"notes", p.notes}};
  details["weight_format"] = plan::weight_format_name(o.weights);
  if (o.checkpoint != nullptr) details["weights_as_stored"] = true;
  const std::string weights =
      o.checkpoint != nullptr
          ? "; weights " + mib(p.ranks[0].weights) + " per rank as stored"
          : std::string("; weights ") + plan::weight_format_name(o.weights) + " (" + source + ")";
  std::string vision;
  if (p.ranks[0].vision_activations > 0) {
    details["vision_activations"] = p.ranks[0].vision_activations;
    vision = "; vision tower " + mib(p.ranks[0].vision_activations) +
             " of activations at the largest image";
  }
  if (!p.fits) return {StageStatus::kFail, "does not fit " + on + ": " + p.reason, {}, details};
  return {StageStatus::kPass,
          "fits " + on + ": " + plan::with_commas(p.kv_tokens) + " KV tokens per replica" +
              weights + vision,
          {},
          details};
}

StageResult run_load_stage(Context& ctx) {
  const model::ModelSource src = model::resolve_model(ctx.options.model);
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(src.dir);
  if (!ctx.arch->modelled && !ctx.stored)
    return {StageStatus::kNotRun, "needs the checkpoint (no safetensors in the directory)", {}, {}};
  const model::Inventory inv =
      ctx.arch->modelled ? plan::checkpoint_inventory(*ctx.arch, ckpt) : *ctx.stored;
  std::vector<plan::RankLoad> ranks = {
      plan::load_rank(*ctx.arch, inv, ckpt, plan::ParallelPlan{}, 0, {true})};
  const plan::ShardVerification v = plan::verify_rank_shards(inv, ckpt, ranks);
  if (!v.problems.empty()) return {StageStatus::kFail, v.problems[0], {}, {}};
  const std::vector<std::string>& notes = ranks[0].notes;
  return {StageStatus::kPass,
          std::to_string(v.tensors) + " tensors, " +
              human_bytes(uint64_t(ranks[0].report.bytes_read)) +
              (src.synthesized ? " (synthesized, seed 0)" : "") + ", checksummed" +
              (notes.empty()
                   ? ""
                   : "; " + std::to_string(notes.size()) +
                         " stored otherwise than the inventory says, read as stored (first: " +
                         notes[0] + ")"),
          {},
          {{"tensors", v.tensors}, {"bytes", ranks[0].report.bytes_read}, {"dtype_notes", notes}}};
}

StageResult run_op_accuracy_stage(Context& ctx) {
  if (!ctx.arch->modelled)
    return not_modelled(ctx, "the ops and shapes a model runs come from its family");
  std::string filter;
  for (const auto& op : ctx.model_ops) {
    filter +=
        (filter.empty() ? "" : ":") + op + "[*:" + op + "/*:*[op=" + op + ",*:dynamic/" + op + "*";
  }
  const bool suite_cases = ctx.options.op_cases != "model";
  std::vector<run::CaseOutcome> cases =
      suite_cases ? run_cases(ctx, "ops.yaml", filter) : std::vector<run::CaseOutcome>{};
  const size_t generic = cases.size();
  std::vector<YAML::Node> shaped = model_shape_checks(ctx);
  for (YAML::Node& c : rounding_checks(ctx)) shaped.push_back(std::move(c));
  if (!shaped.empty()) {
    for (auto& c : run_built(ctx, "op-shapes", shaped)) cases.push_back(std::move(c));
  }
  const size_t at_model = cases.size() - generic;
  const std::string what =
      cases.empty() ? "op cases"
                    : "op cases (" + std::to_string(at_model) + " at this model's shapes)";
  StageResult r = judge(std::move(cases), what);
  if (!suite_cases) r.summary += "; the op suite's own cases not run (--op-cases model)";
  return r;
}

StageResult run_layer_stage(Context& ctx) {
  if (!ctx.arch->modelled)
    return not_modelled(ctx,
                        "an engine's dump compared with harness compare-dumps localizes a layer");
  if (!shipped(ctx, "layers.yaml")) return golden_stage(ctx, true);
  return judge(run_cases(ctx, "layers.yaml", ctx.model_name + "/*"), "layer cases");
}

// A quantized checkpoint's cases with a quant_budget: the worst budget numbers over them, in
// the summary and the details (the metrics themselves are in the run record); cases run with
// dynamic activation quantization are summed up apart.
void add_quant_budget(StageResult* r) {
  struct Worst {
    double kl = -1, top1 = 2, diverge = 1e9;
  } plain, act;
  for (const auto& c : r->cases) {
    if (metric(c, "budget_kl_mean") < 0) continue;
    Worst& w = metric(c, "act_quant_dynamic", 0) > 0 ? act : plain;
    w.kl = std::max(w.kl, metric(c, "budget_kl_mean"));
    w.top1 = std::min(w.top1, metric(c, "budget_top1_agreement"));
    w.diverge = std::min(w.diverge, metric(c, "budget_greedy_divergence"));
  }
  const auto text = [](const Worst& w) {
    return "mean KL " + fixed(w.kl, 4) + ", top-1 " + fixed(w.top1, 3) + ", greedy identical for " +
           fixed(w.diverge, 0) + " steps";
  };
  const auto json = [](const Worst& w) {
    return nlohmann::json{{"kl_mean_max", w.kl},
                          {"top1_agreement_min", w.top1},
                          {"greedy_divergence_min", w.diverge}};
  };
  if (plain.kl >= 0) {
    r->summary +=
        "; quantization budget vs the unquantized original (worst prompt): " + text(plain);
    r->details["quant_budget"] = json(plain);
  }
  if (act.kl >= 0) {
    r->summary += "; with dynamic activation quantization: " + text(act);
    r->details["quant_budget_act_quant"] = json(act);
  }
}

StageResult run_model_stage(Context& ctx) {
  if (!ctx.arch->modelled)
    return not_modelled(ctx, "the service stages compare the served answers instead");
  StageResult r = shipped(ctx, "model.yaml")
                      ? judge(run_cases(ctx, "model.yaml", ctx.model_name + "/*"), "model cases")
                      : golden_stage(ctx, false);
  add_quant_budget(&r);
  return r;
}

StageResult run_image_stage(Context& ctx) {
  if (!ctx.arch->has_vision)
    return {StageStatus::kNotApplicable, "not applicable: a text-only model", {}, {}};
  if (!ctx.arch->modelled) return not_modelled(ctx, "its vision tower");
  if (!shipped(ctx, "image.yaml"))
    return {StageStatus::kNotRun, "no image goldens for this model", {}, {}};
  return judge(run_cases(ctx, "image.yaml", ctx.model_name + "/*"), "image cases");
}

StageResult run_mesh_stage(Context& ctx) {
  if (ctx.world == nullptr)
    return {StageStatus::kNotApplicable,
            "not applicable: one rank (run under mpirun for the mesh)",
            {},
            {}};
  if (!ctx.arch->modelled) return not_modelled(ctx, "sharded execution runs the executor");
  StageResult r = judge(run_cases(ctx, "mesh.yaml", ctx.model_name + "/*"), "sharded cases");
  size_t ran = 0;
  for (const auto& c : r.cases) ran += c.result.status != checks::Status::kSkip;
  if (ran == 0) {
    return {StageStatus::kNotRun,
            "no sharded case of suites/mesh.yaml spans " + std::to_string(ctx.world->size()) +
                " ranks for this model",
            {},
            {}};
  }
  return r;
}

}  // namespace h0::day0
