// harness plan --model DIR_OR_CONFIG [--tp N] [--pp N] [--ep N] [--dp N] [--weight-dtype F]
//              [--kv-dtype D] [--block-size N] [--max-model-len N] [--concurrency N]
//              [--max-batch-tokens N] [--device-memory SIZE | --platform P] [--utilization U]
//              [--reserve SIZE] [--mtp] [--json]
// The memory plan of a model under a parallel plan: per rank, weights, KV cache, activations,
// communication buffers and reserve, the KV capacity, and the verdict. Exit 0 when it fits,
// 1 when it does not, 2 on bad input (an unknown dtype, heads that do not divide by tp, ...).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/error.h"
#include "cli_output.h"
#include "commands.h"
#include "io/sharded_checkpoint.h"
#include "model/config/architecture.h"
#include "model/config/tower.h"
#include "model/vision/image.h"
#include "model/weights/checkpoint_inventory.h"
#include "plan/memory_plan.h"
#include "plan/plan_report.h"
#include "suite/platform.h"

namespace h0::cli {
namespace {

struct PlanOptions {
  std::string model, platform, weight_dtype, kv_dtype = "bf16", device_memory, reserve = "1GiB";
  plan::ParallelPlan parallel;
  int64_t block_size = 16, max_model_len = 0, concurrency = 1, max_batch_tokens = 8192;
  int64_t max_image_pixels =
      0;  // 0: the model directory's preprocessor_config.json, else the class default
  double utilization = 0.9;
  bool dp_given = false, mtp = false, json = false;
};

double parse_bytes(const std::string& flag, const std::string& text) {
  try {
    return suite::parse_size(YAML::Node(text));
  } catch (const InputError& e) {
    throw InputError(flag + " " + text, e.message());
  }
}

// The platform file's device_memory, when --device-memory is not given.
double platform_memory(const std::string& flag) {
  const suite::Platform platform = suite::load_platform(default_platform(flag));
  if (!(platform.device_memory_bytes > 0)) {
    throw InputError(platform.file, "states no device_memory; give --device-memory (e.g. 141GiB)");
  }
  return platform.device_memory_bytes;
}

plan::MemoryOptions memory_options(const PlanOptions& opt, const model::Architecture& arch,
                                   std::string* source) {
  plan::MemoryOptions o;
  if (opt.weight_dtype.empty()) {  // the checkpoint's own format
    o.weights = plan::checkpoint_weight_format(arch, source);
    *source = "the checkpoint's: " + *source;
  } else {
    const auto format = plan::parse_weight_format(opt.weight_dtype);
    if (!format)
      throw InputError("--weight-dtype " + opt.weight_dtype,
                       std::string("expected one of ") + plan::weight_format_names());
    o.weights = *format;
    *source = "--weight-dtype";
  }
  const auto kv = plan::parse_kv_dtype(opt.kv_dtype);
  if (!kv)
    throw InputError("--kv-dtype " + opt.kv_dtype, "expected a float dtype: bf16, f16, f32, fp8");
  o.kv_dtype = *kv;
  o.block_size = opt.block_size;
  o.max_model_len = opt.max_model_len;
  o.concurrency = opt.concurrency;
  o.max_batch_tokens = opt.max_batch_tokens;
  o.device_memory = opt.device_memory.empty() ? platform_memory(opt.platform)
                                              : parse_bytes("--device-memory", opt.device_memory);
  o.reserve = parse_bytes("--reserve", opt.reserve);
  o.utilization = opt.utilization;
  o.include_mtp = opt.mtp;
  return o;
}

void print_header(const model::Architecture& arch, const plan::MemoryPlan& p,
                  const std::string& model, const std::string& weight_source) {
  const plan::MemoryOptions& o = p.options;
  std::printf(
      "model    %s (%s, %lld layers%s)\n", model.c_str(), arch.architecture.c_str(),
      static_cast<long long>(arch.text.num_layers),
      arch.is_moe() ? (", " + std::to_string(arch.text.moe.num_experts) + " experts").c_str() : "");
  std::printf("plan     %s, %lld ranks\n", plan::plan_name(p.plan).c_str(),
              static_cast<long long>(p.plan.world()));
  std::printf(
      "serving  weights %s (%s), kv cache %s, block %lld, max_model_len %lld x concurrency %lld, "
      "max batch tokens %lld\n",
      plan::weight_format_name(o.weights), weight_source.c_str(), tensor::dtype_name(o.kv_dtype),
      static_cast<long long>(o.block_size), static_cast<long long>(o.max_model_len),
      static_cast<long long>(o.concurrency), static_cast<long long>(o.max_batch_tokens));
  std::printf("device   %s x %.2f = %s usable, reserve %s\n",
              human_bytes(static_cast<uint64_t>(o.device_memory)).c_str(), o.utilization,
              human_bytes(static_cast<uint64_t>(p.usable)).c_str(),
              human_bytes(static_cast<uint64_t>(o.reserve)).c_str());
  int64_t per_rank = 0;
  for (const plan::RankMemory& r : p.ranks) per_rank = std::max(per_rank, r.kv_bytes_per_token);
  std::printf("kv cache %s bytes per token (model), %s per rank at most\n",
              plan::with_commas(p.kv_bytes_per_token).c_str(), plan::with_commas(per_rank).c_str());
  // Rank 0's share by layer type: where the bytes per token come from.
  for (const plan::KvLayerType& t : plan::kv_by_layer_type(arch, p)) {
    std::printf("  %-23s %s layer%s x %s B = %s B/%s%s\n", t.kind.c_str(),
                plan::with_commas(t.layers).c_str(), t.layers == 1 ? "" : "s",
                plan::with_commas(t.bytes_per_layer).c_str(), plan::with_commas(t.bytes).c_str(),
                t.per_sequence ? "sequence" : "token",
                t.note.empty() ? "" : ("  (" + t.note + ")").c_str());
  }
  for (const std::string& note : p.notes) std::printf("note     %s\n", note.c_str());
  if (!arch.modelled) return;
  // The layers day0's layer stage checks alone (dump_hf.py --layers makes their goldens).
  std::string layers;
  for (const plan::LayerChoice& c : plan::representative_layers(arch))
    layers += (layers.empty() ? "" : ", ") + plan::describe(c, o.device_memory);
  std::printf("layers   checked alone, one per block type: %s\n", layers.c_str());
}

// A family the executor does not model is planned from its checkpoint's tensor headers.
std::optional<model::Inventory> stored_inventory(const model::Architecture& arch,
                                                 const std::string& model) {
  if (arch.modelled) return std::nullopt;
  if (!model::has_checkpoint(model)) {
    throw InputError(
        model,
        "family " + arch.family +
            " is not modelled by the executor: its plan reads the checkpoint's tensor headers, "
            "so give the checkpoint directory (config.json and *.safetensors)");
  }
  return model::inventory_from_checkpoint(arch, io::ShardedCheckpoint::open(model));
}

int run_plan(const PlanOptions& opt) {
  const model::Architecture arch = model::load_any_architecture(opt.model);
  const std::optional<model::Inventory> stored = stored_inventory(arch, opt.model);
  plan::ParallelPlan parallel = opt.parallel;
  const std::string dp_note = plan::default_dp(&parallel, opt.dp_given);
  if (const auto issue = plan::check_plan(arch, parallel)) {
    const int64_t value = issue->dimension == "tp"   ? parallel.tp
                          : issue->dimension == "pp" ? parallel.pp
                          : issue->dimension == "ep" ? parallel.ep
                                                     : parallel.dp;
    throw InputError("--" + issue->dimension + " " + std::to_string(value), issue->message);
  }
  std::string source;
  plan::MemoryOptions o = memory_options(opt, arch, &source);
  if (stored) {
    o.checkpoint = &*stored;
    source = "as stored in the checkpoint; " + arch.family + " is not modelled";
  }
  if (const model::Tower* tower = model::tower_of(arch)) {
    o.max_image_pixels =
        opt.max_image_pixels > 0 ? opt.max_image_pixels : tower->max_image_pixels(opt.model);
  }
  plan::MemoryPlan p = plan::plan_memory(arch, parallel, o);
  if (!dp_note.empty()) p.notes.insert(p.notes.begin(), dp_note);
  if (opt.json) {
    nlohmann::json j = plan::plan_json(p);
    j["weight_format_source"] = source;
    j["model"] = opt.model;
    j["architecture"] = arch.architecture;
    nlohmann::json types = nlohmann::json::array();
    for (const plan::KvLayerType& t : plan::kv_by_layer_type(arch, p))
      types.push_back({{"kind", t.kind},
                       {"layers", t.layers},
                       {"bytes_per_layer", t.bytes_per_layer},
                       {"bytes", t.bytes},
                       {"per", t.per_sequence ? "sequence" : "token"},
                       {"note", t.note}});
    j["kv_by_layer_type"] = types;
    if (arch.modelled) {
      nlohmann::json layers = nlohmann::json::array();
      for (const plan::LayerChoice& c : plan::representative_layers(arch))
        layers.push_back(plan::to_json(c, o.device_memory));
      j["representative_layers"] = layers;
    }
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_header(arch, p, opt.model, source);
    std::printf("\n%s\n", plan::plan_table(p).c_str());
    std::printf("%s\n", colored(plan::plan_verdict(p), p.fits ? "32" : "31").c_str());
  }
  return p.fits ? kExitOk : kExitMismatch;
}

}  // namespace

void register_plan(CLI::App& app, Run* run) {
  auto opt = std::make_shared<PlanOptions>();
  CLI::App* sub = app.add_subcommand(
      "plan", "Plan a model's memory per rank under a parallel plan; does it fit?");
  sub->add_option("--model", opt->model, "A config.json or a model directory holding one")
      ->required();
  sub->add_option("--tp", opt->parallel.tp, "Tensor-parallel ranks (default 1)");
  sub->add_option("--pp", opt->parallel.pp, "Pipeline stages (default 1)");
  sub->add_option("--ep", opt->parallel.ep,
                  "Expert-parallel groups, formed from the tp x dp ranks of a stage (default 1)");
  CLI::Option* dp = sub->add_option("--dp", opt->parallel.dp,
                                    "Data-parallel replicas (default: ep/tp when ep > tp, else 1)");
  sub->add_option(
      "--weight-dtype", opt->weight_dtype,
      "bf16, f16, f32, fp8 (128x128 block scales), int8, int4 (default: the checkpoint's, from "
      "quantization_config / torch_dtype)");
  sub->add_option("--kv-dtype", opt->kv_dtype,
                  "KV-cache dtype: bf16, f16, f32, fp8 (default bf16)");
  sub->add_option("--block-size", opt->block_size, "KV-cache block size in tokens (default 16)");
  sub->add_option("--max-model-len", opt->max_model_len,
                  "Longest sequence (default min(max_position_embeddings, 8192))");
  sub->add_option("--concurrency", opt->concurrency,
                  "Sequences of max-model-len that must fit at once (default 1)");
  sub->add_option("--max-batch-tokens", opt->max_batch_tokens,
                  "Tokens per forward pass, for activations (default 8192)");
  sub->add_option("--max-image-pixels", opt->max_image_pixels,
                  "Largest image, in pixels, for the vision tower's activations (Qwen2.5-VL; "
                  "default: the model's "
                  "preprocessor_config.json max_pixels, else the processor class default 1003520)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--device-memory", opt->device_memory,
                  "Memory per device: 141GiB, 80GB, 1.5TiB, or bytes (default: the platform's)");
  sub->add_option(
      "--platform", opt->platform,
      "Platform config whose device_memory to use (default configs/platforms/cpu.yaml)");
  sub->add_option("--utilization", opt->utilization,
                  "Fraction of device memory to use (default 0.9)");
  sub->add_option("--reserve", opt->reserve,
                  "Memory kept for the runtime, CUDA graphs, workspaces (default 1GiB)");
  sub->add_flag("--mtp", opt->mtp,
                "Load the multi-token-prediction layers too (speculative decoding)");
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt, dp] {
    opt->dp_given = dp->count() > 0;
    *run = [opt] { return run_plan(*opt); };
  });
}

}  // namespace h0::cli
