// harness model run --model DIR [--platform P] [--dtype f32|bf16|f16] [--prompt-ids 1,2,3]
//                   [--image FILE] [--greedy N] [--repeats R] [--dump DIR] [--json]
// Runs a model on a platform's backend: prefill of the prompt, greedy decode of N tokens over
// the paged cache; prints the tokens, prefill/decode tokens per second (best of R) and the
// ops that took the time. --dump writes the probes, logits and greedy tokens in the format of
// golden/tools/dump_hf.py, for `harness compare-dumps` against a reference dump.
#include "model_run.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "base/error.h"
#include "cli_output.h"
#include "io/sharded_checkpoint.h"
#include "model/exec/dump_file.h"
#include "model/exec/executor.h"
#include "model/exec/generation.h"
#include "model/weights/model_source.h"
#include "suite/platform.h"

namespace h0::cli {
namespace {

struct RunOptions {
  std::string model, platform, dtype = "f32", image, dump;
  std::vector<int64_t> prompt;
  int greedy = 8, repeats = 1;
  bool json = false;
};

int run_model(RunOptions opt) {
  const suite::Platform platform = suite::load_platform(default_platform(opt.platform));
  const auto dtype = tensor::parse_dtype(opt.dtype);
  if (!dtype || !tensor::is_float(*dtype))
    throw InputError("--dtype", "must be f32, bf16 or f16, got '" + opt.dtype + "'");
  const model::ModelSource src = model::resolve_model(opt.model);
  const model::Architecture arch = model::load_architecture(src.dir);
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(src.dir);
  if (opt.prompt.empty()) opt.prompt = model::synthetic_prompt(arch, 16);
  auto be = backend::Backend::open({platform.backend, platform.lib, platform.options});
  const int64_t tokens = int64_t(opt.prompt.size()) + opt.greedy + 16;
  model::Executor ex(arch, ckpt, *be, {*dtype, backend::FallbackMode::kHost, 16, tokens, true});
  tensor::Tensor features;
  model::ProbeRecorder probes;
  std::vector<model::ImageGrid> grids;  // where M-RoPE places the image
  if (!opt.image.empty()) {
    model::ImageInput in = model::image_input(ex, opt.model, opt.image, &probes);
    features = std::move(in.features);
    grids = std::move(in.grids);
  }
  model::Generation best;
  for (int r = 0; r < std::max(1, opt.repeats); ++r) {
    model::ProbeRecorder* rec = r == 0 ? &probes : nullptr;
    model::Generation g = model::generate_greedy(ex, opt.prompt, opt.greedy, rec,
                                                 opt.image.empty() ? nullptr : &features, grids);
    if (r == 0) best = g;
    best.prefill_s = std::min(best.prefill_s, g.prefill_s);
    best.decode_s = std::min(best.decode_s, g.decode_s);
  }
  const double prefill_tps = double(opt.prompt.size()) / best.prefill_s;
  const double decode_tps = opt.greedy > 1 ? double(opt.greedy - 1) / best.decode_s : 0;
  if (!opt.dump.empty()) {
    std::filesystem::create_directories(opt.dump);
    model::write_dump(
        opt.dump + "/prompt.safetensors", opt.prompt, probes, best,
        {{"producer", "harness model run"}, {"backend", be->name()}, {"dtype", opt.dtype}});
  }
  std::vector<model::OpStats> ops = ex.ops().profile();
  model::sort_by_total_time(&ops);
  if (opt.json) {
    nlohmann::json top = nlohmann::json::array();
    for (size_t i = 0; i < ops.size() && i < 10; ++i) {
      top.push_back({{"op", ops[i].op},
                     {"shapes", ops[i].shapes},
                     {"calls", ops[i].calls},
                     {"total_ms", model::total_ns(ops[i]) / 1e6},
                     {"route", ops[i].route}});
    }
    std::printf("%s\n", nlohmann::json{{"model", opt.model},
                                       {"backend", be->name()},
                                       {"dtype", opt.dtype},
                                       {"prompt_tokens", opt.prompt.size()},
                                       {"generated", best.ids},
                                       {"prefill_tokens_per_s", prefill_tps},
                                       {"decode_tokens_per_s", decode_tps},
                                       {"top_ops", top}}
                            .dump(2)
                            .c_str());
    return kExitOk;
  }
  std::printf("%s on %s (%s): %zu prompt tokens\n", arch.architecture.c_str(), be->name().c_str(),
              opt.dtype.c_str(), opt.prompt.size());
  std::printf("generated:");
  for (int64_t id : best.ids) std::printf(" %lld", (long long)id);
  std::printf("\nprefill %.1f tokens/s, decode %.1f tokens/s (best of %d)\n", prefill_tps,
              decode_tps, std::max(1, opt.repeats));
  std::printf("%-16s %-28s %7s %10s  %s\n", "op", "shapes", "calls", "total ms", "route");
  for (size_t i = 0; i < ops.size() && i < 8; ++i) {
    std::printf("%-16s %-28.28s %7lld %10.3f  %s\n", ops[i].op.c_str(), ops[i].shapes.c_str(),
                (long long)ops[i].calls, model::total_ns(ops[i]) / 1e6, ops[i].route.c_str());
  }
  if (!opt.dump.empty()) std::printf("dump: %s/prompt.safetensors\n", opt.dump.c_str());
  return kExitOk;
}

}  // namespace

void add_model_run(CLI::App* model, Run* run) {
  auto opt = std::make_shared<RunOptions>();
  CLI::App* sub = model->add_subcommand(
      "run", "Run a model on a platform: greedy generation, tokens/s, the costliest ops");
  sub->add_option("--model", opt->model,
                  "A checkpoint directory (or a model config directory: synthesized, seed 0)")
      ->required();
  sub->add_option("--platform", opt->platform,
                  "Platform config (default configs/platforms/cpu.yaml)");
  sub->add_option("--dtype", opt->dtype, "Run dtype: f32, bf16 or f16 (weights converted on load)");
  sub->add_option("--prompt-ids", opt->prompt, "Prompt token ids, comma separated")->delimiter(',');
  sub->add_option(
      "--image", opt->image,
      "An image for a model with a vision tower (LLaVA, Qwen2.5-VL); the prompt must hold "
      "its image tokens");
  sub->add_option("--greedy", opt->greedy, "Tokens to generate (default 8)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--repeats", opt->repeats, "Runs; tokens/s is the best (default 1)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--dump", opt->dump,
                  "Write probes, logits and greedy tokens to DIR/prompt.safetensors");
  sub->add_flag("--json", opt->json, "Machine-readable output");
  sub->callback([run, opt] { *run = [opt] { return run_model(*opt); }; });
}

}  // namespace h0::cli
