// The cases the Day-0 stages build for a model that has no shipped suite entries (internal to
// src/day0/; case_builders.cc). Each is a list of checks as a suite file's entries
// (suite::suite_of_checks), never YAML text, with ids "<model name>/..."; stages.cc runs them and
// judges the outcome. model_shape_checks and rounding_checks, the op stage's, are in day0.h.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "day0/day0.h"

namespace h0::day0 {

// The dumps in --golden (dump_hf.py writes <prompt>.safetensors, its probes in the metadata),
// sorted: whole-model dumps of text prompts, and layer dumps (dump_hf.py --layers N: metadata
// "layer"; one decoder layer built alone, for a model too big to load whole). A dump of an image
// prompt (metadata "image") is neither: the layer and model cases feed the prompt's ids alone, so
// its image rows would differ from the start — counted, left to the image stage. Other
// safetensors files (gen_models' pixels_*) and long-context goldens (the long stage's) are
// skipped. Throws InputError for a layer dump whose layer is not one of the model's.
struct GoldenDumps {
  std::vector<std::string> prompts;
  std::vector<std::pair<std::string, int64_t>> layers;  // file, its layer
  int image_dumps = 0;
};
GoldenDumps golden_dumps(const Context& ctx);

// Layer (`layer` true) or full-model cases against `dumps`: a whole-model dump gives a layer case
// over every decoder layer and a model case (with quant_budget against --original-golden); with
// `layer`, a layer dump gives a case of its layer alone, after them.
std::vector<YAML::Node> golden_checks(const Context& ctx, const GoldenDumps& dumps, bool layer);

// The generated e2e cases for a model without shipped ones: the service, one e2e_text /
// e2e_image case per gen_e2e.py golden of --golden (compare: auto — exact tokens; a parting only
// at a near tie, as vLLM's check_logprobs_close, when the engine returns logprobs), determinism on
// the first text golden's request, a small load. Without goldens a chat request
// ("<model>/chat_uncompared") still runs, as evidence that the service answers.
std::vector<YAML::Node> e2e_checks(const Context& ctx);

// One eval case per --eval task, with its reference: --eval-reference (a store selector for every
// task; a file for the only one), else <task stem>.json in --golden (gen_eval.py --out), else
// none. The default gate (max_drop 0.02 by the paired test, alpha 0.05).
std::vector<YAML::Node> eval_checks(const Context& ctx);

// The serving features (kind: serving), one case each.
std::vector<YAML::Node> serving_checks(const Context& ctx);

// The conversation layer's cases: prompt rendering against golden/chat/<model>/ (when shipped),
// the reasoning split (when the model's chat template has <think>), structured output, tool
// calls, and with --tool-reference the tool_choice auto comparison; `absent` says what has
// nothing to run on this model, and why.
struct ConversationCases {
  std::vector<YAML::Node> checks;
  std::vector<std::string> absent;
};
ConversationCases conversation_cases(const Context& ctx);

// The long-context cases, in the order they run: the executor at the long goldens' length (a
// case in one pass and one prefilled in chunks of 512 per golden; without goldens a synthetic
// prompt of min(2048, max_position_embeddings) - 8 tokens prefilled in chunks against one pass),
// then when the service stage passed the service's greedy continuation of the long e2e goldens,
// the engine's prompt logprobs at the goldens' positions and, when there is any case, the KV
// capacity. `notes` says what is not run and why; `lengths` are the prompts' lengths in tokens.
struct LongCases {
  std::vector<YAML::Node> checks;
  std::vector<std::string> notes;
  std::set<int64_t> lengths;
};
LongCases long_cases(const Context& ctx);

}  // namespace h0::day0
