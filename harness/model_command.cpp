// harness model info --model DIR_OR_CONFIG [--tensors [GLOB]] [--json]
// harness model synth --model DIR --out DIR [--seed N] [--shards N] [--json]
// harness model run ... (model_run.cpp)
// `info`: the architecture read from config.json, exact parameter counts and the tensor
// inventory with sharding rules. `synth`: a complete HF checkpoint with Philox weights.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "io/sharded_checkpoint.h"
#include "model/config/architecture.h"
#include "model/weights/checkpoint_inventory.h"
#include "model/weights/inventory.h"
#include "model/weights/synth.h"
#include "model_run.h"
#include "report/terminal.h"
#include "suite/filter.h"
#include "tensor/tensor.h"

namespace h0::cli {
namespace {

struct ModelOptions {
  std::string model, out;
  uint64_t seed = 0;
  int shards = 1;
  bool tensors = false, json = false;
  std::string tensor_glob = "*";  // --tensors GLOB: the tensors whose names match
};

// Rows of `model info --tensors` a user's terminal gets before the rest is summarized: Kimi K2's
// 139,583 tensors scroll by uselessly; a pipe or a file gets them all.
constexpr size_t kTerminalRows = 40;

nlohmann::json counts_json(const model::ParamCounts& c) {
  return {{"total", c.total}, {"active", c.active},         {"buffers", c.buffers},
          {"mtp", c.mtp},     {"mtp_shared", c.mtp_shared}, {"vision", c.vision}};
}

nlohmann::json weight_json(const model::WeightInfo& w) {
  nlohmann::json j = {{"name", w.name},
                      {"shape", w.shape},
                      {"dtype", tensor::dtype_name(w.dtype)},
                      {"tp", model::tp_split_name(w.tp)},
                      {"layer", w.layer}};
  if (w.tp_unit > 1) j["tp_unit"] = w.tp_unit;
  if (w.kv_heads) j["kv_heads"] = true;
  if (w.expert >= 0) j["expert"] = w.expert;
  if (w.mtp) j["mtp"] = true;
  if (w.role == model::WeightRole::kBuffer) j["role"] = "buffer";
  if (w.role == model::WeightRole::kQuantScale) j["role"] = "quant_scale";
  return j;
}

std::string billions(int64_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3fB", double(n) / 1e9);
  return buf;
}

// The tensors matching `glob`, one a line; on the user's terminal the first kTerminalRows and
// how to see the rest.
void print_tensors(const model::Inventory& inv, const std::string& glob) {
  const size_t cap =
      report::user_terminal(STDOUT_FILENO) ? kTerminalRows : std::numeric_limits<size_t>::max();
  size_t shown = 0, matched = 0;
  for (const auto& w : inv.weights) {
    if (!suite::glob_match(glob, w.name) || ++matched > cap) continue;
    ++shown;
    std::printf("  %-64s %-8s %-20s %s%s\n", w.name.c_str(), tensor::dtype_name(w.dtype),
                tensor::shape_string(w.shape).c_str(), model::tp_split_name(w.tp),
                w.expert >= 0 ? " expert" : "");
  }
  if (matched == 0) std::printf("  no tensor matches '%s'\n", glob.c_str());
  if (shown < matched) {
    std::printf(
        "  ... %zu more of the %zu: --tensors 'GLOB' selects (e.g. 'model.layers.3.*'), "
        "a pipe or a file gets them all, --json too\n",
        matched - shown, matched);
  }
}

int run_info(const ModelOptions& opt) {
  const model::Architecture a = model::load_any_architecture(opt.model);
  // A family the executor does not model: the checkpoint's own tensors, when it is there.
  const bool counted = a.modelled || model::has_checkpoint(opt.model);
  model::Inventory inv;
  std::optional<model::CheckpointTally> tally;  // the classes of the saved tensors
  if (a.modelled) {
    inv = model::build_inventory(a);
  } else if (counted) {
    tally.emplace();
    inv = model::inventory_from_checkpoint(a, io::ShardedCheckpoint::open(opt.model), &*tally);
  }
  const model::TextModel& t = a.text;
  int64_t bytes = 0;
  for (const auto& w : inv.weights) bytes += w.bytes();
  if (opt.json) {
    nlohmann::json j = {{"model", opt.model},
                        {"family", a.family},
                        {"architecture", a.architecture},
                        {"hidden_size", t.hidden_size},
                        {"layers", t.num_layers},
                        {"vocab_size", t.vocab_size},
                        {"heads", t.attn.num_heads},
                        {"kv_heads", t.attn.num_kv_heads},
                        {"mla", t.attn.mla},
                        {"experts", t.moe.num_experts},
                        {"experts_per_token", t.moe.experts_per_token},
                        {"parameters", counts_json(inv.counts)},
                        {"checkpoint_bytes", bytes},
                        {"tensors", inv.weights.size()},
                        {"modelled", a.modelled},
                        {"counted", counted}};
    if (!a.derived.empty()) j["derived"] = a.derived;
    if (tally) j["classes"] = model::class_json(*tally);
    if (opt.tensors) {
      j["inventory"] = nlohmann::json::array();
      for (const auto& w : inv.weights) {
        if (suite::glob_match(opt.tensor_glob, w.name)) j["inventory"].push_back(weight_json(w));
      }
    }
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf(
      "%s (%s): %lld layers, hidden %lld, vocab %lld, %s attention with %lld heads / %lld kv "
      "heads\n",
      a.architecture.c_str(), a.family.c_str(), (long long)t.num_layers, (long long)t.hidden_size,
      (long long)t.vocab_size, t.attn.mla ? "latent (MLA)" : "grouped-query",
      (long long)t.attn.num_heads, (long long)t.attn.num_kv_heads);
  if (!a.modelled) {
    std::printf("not modelled by the executor: %s\n",
                counted
                    ? "the counts are the checkpoint's tensors: parameters apart from buffers and "
                      "quantization companions"
                    : "the parameter counts need the checkpoint (config.json and *.safetensors)");
  }
  for (const std::string& d : a.derived) std::printf("derived: %s\n", d.c_str());
  if (a.is_moe() && !a.modelled) {  // only the counts the shared config fields give
    std::printf("MoE: %lld routed experts (top %lld)\n", (long long)t.moe.num_experts,
                (long long)t.moe.experts_per_token);
  } else if (a.is_moe()) {
    std::printf("MoE: %lld routed experts (top %lld), %lld shared, %s routing\n",
                (long long)t.moe.num_experts, (long long)t.moe.experts_per_token,
                (long long)t.moe.num_shared_experts, t.moe.scoring.c_str());
  }
  if (!counted) return kExitOk;
  if (a.modelled) {
    std::printf("parameters: %lld total (%s), %lld active per token (%s)\n",
                (long long)inv.counts.total, billions(inv.counts.total).c_str(),
                (long long)inv.counts.active, billions(inv.counts.active).c_str());
  } else {
    std::printf(
        "parameters: %lld total (%s); active per token not computed (the family is not modelled)\n",
        (long long)inv.counts.total, billions(inv.counts.total).c_str());
  }
  if (inv.counts.mtp > 0) {
    std::printf(
        "multi-token prediction (checkpoint only): %lld unique + %lld embedding/head copies\n",
        (long long)inv.counts.mtp, (long long)inv.counts.mtp_shared);
  }
  std::printf("checkpoint: %zu tensors, %s\n", inv.weights.size(),
              human_bytes(uint64_t(bytes)).c_str());
  if (tally) {
    for (const std::string& line : model::class_lines(*tally)) std::printf("  %s\n", line.c_str());
  }
  if (opt.tensors) print_tensors(inv, opt.tensor_glob);
  return kExitOk;
}

int run_synth(const ModelOptions& opt) {
  if (!opt.json)
    std::fprintf(stderr, "synthesizing %s into %s ...\n", opt.model.c_str(), opt.out.c_str());
  const model::SynthReport r =
      model::synthesize_checkpoint(opt.model, opt.out, {opt.seed, opt.shards});
  if (opt.json) {
    std::printf("%s\n", nlohmann::json{{"out", opt.out},
                                       {"files", r.files},
                                       {"tensors", r.tensors},
                                       {"parameters", r.parameters},
                                       {"bytes", r.bytes},
                                       {"seed", opt.seed}}
                            .dump(2)
                            .c_str());
  } else {
    std::printf("wrote %s: %lld tensors, %lld parameters, %s in %zu files\n", opt.out.c_str(),
                (long long)r.tensors, (long long)r.parameters,
                human_bytes(uint64_t(r.bytes)).c_str(), r.files.size());
  }
  return kExitOk;
}

}  // namespace

void register_model(CLI::App& app, Run* run) {
  auto opt = std::make_shared<ModelOptions>();
  CLI::App* sub =
      app.add_subcommand("model", "Model architectures: inspect a config, synthesize a checkpoint");
  sub->require_subcommand(1);
  CLI::App* info = sub->add_subcommand(
      "info", "Architecture, exact parameter counts and tensor inventory of a config.json");
  info->add_option("--model", opt->model, "A model directory or its config.json")->required();
  CLI::Option* tensors =
      info->add_option(
              "--tensors", opt->tensor_glob,
              "List the tensors (those matching GLOB, e.g. 'model.layers.0.*') with shape, "
              "dtype and sharding rule; a terminal gets the first 40")
          ->expected(0, 1)
          ->default_str("*");
  info->add_flag("--json", opt->json, "Machine-readable output");
  info->callback([run, opt, tensors] {
    opt->tensors = tensors->count() > 0;
    if (opt->tensor_glob.empty()) opt->tensor_glob = "*";
    *run = [opt] { return run_info(*opt); };
  });
  CLI::App* synth = sub->add_subcommand(
      "synth", "Write a complete HF checkpoint with deterministic Philox weights");
  synth->add_option("--model", opt->model, "A model directory (config.json, tokenizer files)")
      ->required();
  synth->add_option("--out", opt->out, "Output directory")->required();
  synth->add_option("--seed", opt->seed, "Philox seed (default 0)");
  synth->add_option("--shards", opt->shards, "Number of safetensors shards (default 1)")
      ->check(CLI::PositiveNumber);
  synth->add_flag("--json", opt->json, "Machine-readable output");
  synth->callback([run, opt] { *run = [opt] { return run_synth(*opt); }; });
  add_model_run(sub, run);
}

}  // namespace h0::cli
