// The cases the Day-0 stages build for a model (case_builders.h, and day0.h's model_shape_checks
// and rounding_checks): op cases at the model's shapes against the reference kernels, layer and
// model cases against --golden's dumps, the e2e, accuracy, serving, conversation and
// long-context cases. Each is a check as a suite file's entry (suite::suite_of_checks), never
// YAML text; stages.cc runs them.
#include "day0/case_builders.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "base/error.h"
#include "base/json_read.h"
#include "compare/rounding.h"
#include "io/safetensors_reader.h"
#include "model/exec/model_ops.h"
#include "model/weights/inventory.h"
#include "service/chat_template.h"
#include "suite/location.h"
#include "suite/suite.h"

namespace h0::day0 {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string absolute(const std::string& path) {
  return fs::absolute(path).lexically_normal().string();
}

// A check as a suite file's entry: id and kind, then `fields`.
YAML::Node check_node(const std::string& id, const std::string& kind,
                      const Json& fields = Json::object()) {
  Json check = fields;
  check["id"] = id;
  check["kind"] = kind;
  return suite::yaml_of(check);
}

// --- The op cases at the model's shapes (model_shape_checks) ---

// A prefill's tokens in the op cases at the model's shapes.
constexpr int64_t kTokens = 16;

// The most bytes of expert weights (at the model's dtype) a moe_experts case at the model's
// shapes holds.
constexpr int64_t kMoeCaseBytes = int64_t{512} << 20;

// The op cases at the model's shapes as they are built, and what each builder reads.
struct ShapeCases {
  explicit ShapeCases(const Context& c)
      : ctx(c),
        t(c.arch->text),
        a(c.arch->text.attn),
        dtype(tensor::dtype_name(c.model_dtype)),
        bound(model::model_ops(*c.arch, *tensor::parse_dtype(dtype))),
        bound_f32(model::model_ops(*c.arch, tensor::DType::kF32)),
        inventory(model::build_inventory(*c.arch)) {}

  // Whether the model's config needs the catalogue op `op`.
  bool uses(const char* op) const { return ctx.model_ops.count(op) > 0; }

  // One case of `op` at `shape`, with `fields` (attrs, inputs, with); `id` defaults to the op.
  void add(const std::string& op, const Json& shape, Json fields = Json::object(),
           const std::string& id = "") {
    fields["op"] = op;
    fields["golden"] = "reference";
    if (!fields.contains("dtype")) fields["dtype"] = dtype;
    fields["shape"] = shape;
    checks.push_back(
        check_node(ctx.model_name + "/shapes/" + (id.empty() ? op : id), "op", fields));
  }

  const Context& ctx;
  const model::TextModel& t;
  const model::Attention& a;
  const std::string dtype;
  const model::ModelOps bound;      // the attrs the executor runs them with
  const model::ModelOps bound_f32;  // the layer and model stages' run
  const model::Inventory inventory;
  std::vector<YAML::Node> checks;
};

Json attrs_of(const model::BoundOp& op) { return Json{{"attrs", op.attrs}}; }

// `op`'s attrs, and positions 0, 1, ... as its input.
Json with_positions(const model::BoundOp& op) {
  const Json positions = {{"positions", {{"arange", {{"start", 0}, {"step", 1}}}}}};
  Json fields = attrs_of(op);
  fields["inputs"] = positions;
  return fields;
}

// The config's softmax scale (Gemma 3's query_pre_attn_scalar), else the op's default.
Json with_scale(const model::Attention& a, Json attrs) {
  if (a.scale > 0) attrs["scale"] = a.scale;
  return attrs;
}

// RMSNorm at the hidden size and the decoder's other widths, and the embedding.
void add_norm_cases(ShapeCases& s) {
  const int64_t T = kTokens;
  if (s.uses("rmsnorm")) {
    s.add("rmsnorm", {T, s.t.hidden_size}, attrs_of(s.bound.rmsnorm));
    // The decoder's other RMSNorm widths: q/k norms (a head, or OLMo 2's whole projection) and
    // MLA's latent norms (q_lora_rank, kv_lora_rank; at the block's own eps).
    const model::BoundOp* latent = s.bound.find("latent_norm");
    std::map<int64_t, const model::BoundOp*> widths;
    for (const model::WeightInfo& w : s.inventory.weights) {
      const bool head =
          w.tensor == model::TensorRole::kAttnQNorm || w.tensor == model::TensorRole::kAttnKNorm;
      const bool lora =
          w.tensor == model::TensorRole::kAttnQANorm || w.tensor == model::TensorRole::kAttnKVANorm;
      if ((head || lora) && w.shape.size() == 1 && w.shape[0] != s.t.hidden_size && !w.mtp)
        widths.emplace(w.shape[0], lora && latent != nullptr ? latent : &s.bound.rmsnorm);
    }
    for (const auto& [d, op] : widths)
      s.add("rmsnorm", {T, d}, attrs_of(*op), "rmsnorm/" + std::to_string(d));
  }
  if (s.uses("embedding")) {
    s.add("embedding", {T, std::min<int64_t>(s.t.vocab_size, 32768), s.t.hidden_size},
          attrs_of(s.bound.embedding));
  }
}

// Every projection the decoder runs by linear, as its inventory has it, as (K, N) (not the
// embedding and the LM head: vocabulary-wide, their f64 references alone would take GBs at a real
// width).
std::set<std::pair<int64_t, int64_t>> decoder_projections(const model::Inventory& inventory) {
  std::set<std::pair<int64_t, int64_t>> projections;
  for (const model::WeightInfo& w : inventory.weights) {
    const bool by_role = w.tensor != model::TensorRole::kOther &&
                         w.tensor != model::TensorRole::kEmbed &&
                         w.tensor != model::TensorRole::kHead;
    if (by_role && w.shape.size() == 2 && w.piece == model::TensorPiece::kWeight && !w.quantized &&
        w.expert < 0 && !w.mtp)
      projections.insert({w.shape[1], w.shape[0]});
  }
  return projections;
}

// linear (and linear_widen) at the decoder's projections; scaled_linear at its fp8
// block-quantized ones, as stored.
void add_projection_cases(ShapeCases& s) {
  const int64_t T = kTokens;
  const std::set<std::pair<int64_t, int64_t>> projections = decoder_projections(s.inventory);
  if (s.uses("linear")) {
    for (const auto& [k, n] : projections)
      s.add("linear", {T, k, n}, Json::object(),
            "linear/" + std::to_string(k) + "x" + std::to_string(n));
    // The layer and model stages run in f32 with the projections kept as stored (bf16):
    // linear_widen at the same shapes, at a prefill's T and a decode step's (the cpu kernel's two
    // paths).
    if (s.bound_f32.linear_widen.def != nullptr) {
      for (const auto& [k, n] : projections) {
        for (const int64_t rows : {T, int64_t{1}}) {
          s.add("linear_widen", {rows, k, n},
                {{"attrs", s.bound_f32.linear_widen.attrs}, {"dtype", "f32"}},
                "linear_widen/" + std::to_string(rows) + "x" + std::to_string(k) + "x" +
                    std::to_string(n));
        }
      }
    }
  }
  if (s.uses("scaled_linear")) {  // the fp8 block-quantized projections, as stored
    std::set<std::pair<int64_t, int64_t>> shapes;
    for (const model::WeightInfo& w : s.inventory.weights) {
      if (w.quantized && w.expert < 0 && !w.mtp) shapes.insert({w.shape[1], w.shape[0]});
    }
    for (const auto& [k, n] : shapes) {
      for (const int64_t rows : {T, int64_t{1}}) {
        s.add("scaled_linear", {rows, k, n}, attrs_of(s.bound.scaled_linear),
              "scaled_linear/" + (rows == 1 ? std::string("1x") : std::string()) +
                  std::to_string(k) + "x" + std::to_string(n));
      }
    }
  }
}

// The MLP's activations and the shared-expert gate.
void add_activation_cases(ShapeCases& s) {
  const int64_t T = kTokens;
  if (s.uses("sigmoid")) s.add("sigmoid", {T, 1});  // the shared-expert gate, a value per token
  if (s.uses("swiglu") && s.t.intermediate_size > 0) s.add("swiglu", {T, s.t.intermediate_size});
  const model::BoundOp* act = s.bound.find("mlp_act");
  if (act != nullptr && s.t.intermediate_size > 0) {  // a gelu MLP: act(gate) · up
    s.add("gelu", {T, s.t.intermediate_size}, attrs_of(*act));
    s.add("mul", {T, s.t.intermediate_size});
  }
}

// RoPE (and the sliding layers' own), and paged attention: a prefill, a decode step, and the
// sliding layers' window.
void add_attention_cases(ShapeCases& s) {
  const int64_t T = kTokens, heads = s.a.num_heads;
  const model::Attention& a = s.a;
  if (s.uses("rope")) {
    const int64_t rot = a.mla ? a.qk_rope_head_dim : a.head_dim;
    if (const model::BoundOp* rope = s.bound.find("rope"))
      s.add("rope", {T, heads, rot}, with_positions(*rope));
    if (const model::BoundOp* local = s.bound.find("local_rope"))  // the sliding layers' own base
      s.add("rope", {T, heads, rot}, with_positions(*local), "rope/local");
  }
  if (!s.uses("paged_attention")) return;
  const int64_t kv_heads = a.mla ? heads : a.num_kv_heads;
  Json fields = {{"attrs", with_scale(a, {{"context_len", T}})}};
  if (a.sinks) fields["with"] = {"sinks"};  // GPT-OSS's attention sinks
  s.add("paged_attention", {T, T, heads, kv_heads, a.qk_head_dim(), a.value_head_dim(), 16},
        fields);
  // A decode step: one query after the prompt's keys, the context past a block boundary.
  Json step = fields;
  step["attrs"] = with_scale(a, {{"context_len", T + 1}});
  s.add("paged_attention", {1, T + 1, heads, kv_heads, a.qk_head_dim(), a.value_head_dim(), 16},
        step, "paged_attention/decode");
  if (a.sliding_window > 0) {  // the sliding layers': a context past the window, so the mask cuts
    const int64_t S = T + a.sliding_window;
    fields["attrs"] = with_scale(a, {{"context_len", S}, {"sliding_window", a.sliding_window}});
    s.add("paged_attention", {T, S, heads, kv_heads, a.qk_head_dim(), a.value_head_dim(), 16},
          fields, "paged_attention/sliding");
  }
}

// DeepSeek-V3.2's sparse attention: T queries after topk keys, so the selection cuts.
void add_indexer_cases(ShapeCases& s) {
  const model::BoundOp* index_select = s.bound.find("index_select");
  if (index_select == nullptr) return;
  const int64_t T = kTokens, heads = s.a.num_heads;
  const model::Attention& a = s.a;
  const model::Indexer& x = s.t.indexer;
  const int64_t S = T + x.topk;
  s.add("layernorm", {T, x.head_dim}, attrs_of(*s.bound.find("index_norm")),
        "layernorm/indexer_keys");
  s.add("rope", {T, x.n_heads, x.head_dim}, with_positions(*s.bound.find("index_rope")),
        "rope/indexer");
  const Json& select = index_select->attrs;
  s.add("lightning_indexer", {T, S, x.n_heads, x.head_dim, 16},
        {{"attrs",
          {{"topk", select.at("topk")}, {"scale", select.at("scale")}, {"context_len", S}}}});
  s.add("sparse_attention", {T, S, heads, heads, a.qk_head_dim(), a.value_head_dim(), 16, x.topk},
        {{"attrs", with_scale(a, {{"context_len", S}})}});
}

// Gated DeltaNet: the conv over q|k|v, the gating, the rule, the gated norm.
void add_linear_attention_cases(ShapeCases& s) {
  const model::BoundOp* rule = s.bound.find("gdn_rule");
  if (rule == nullptr) return;
  const int64_t T = kTokens;
  const model::LinearAttention& la = s.t.linear;
  s.add("causal_conv1d", {T, la.conv_dim(), la.conv_kernel}, attrs_of(*s.bound.find("gdn_conv")));
  s.add("gdn_gating", {T, la.num_v_heads});
  s.add("gated_delta_rule", {T, la.num_k_heads, la.k_head_dim, la.num_v_heads, la.v_head_dim},
        attrs_of(*rule));
  s.add("rmsnorm_gated", {T * la.num_v_heads, la.v_head_dim}, attrs_of(*s.bound.find("gdn_norm")));
}

// MXFP4 dequantization of one expert's gate_up, the router, and the experts at a prefill's
// tokens and a decode step's.
void add_moe_cases(ShapeCases& s) {
  const int64_t T = kTokens;
  const model::TextModel& t = s.t;
  if (s.uses("dequantize_mxfp4")) {  // one expert's gate_up as stored: [2F, D / 32] scales
    s.add("dequantize_mxfp4", {2 * t.moe.expert_intermediate_size, t.hidden_size / 32},
          {{"attrs", {{"out_dtype", s.dtype}}}});
  }
  if (!s.ctx.arch->is_moe()) return;
  const model::Moe& m = t.moe;
  s.add("moe_gate", {T, m.num_experts}, attrs_of(*s.bound.find("moe_gate")));
  // The experts' table cut to what kMoeCaseBytes holds (at least experts_per_token experts):
  // each expert's [D, F] shapes are the model's, their number only the table's size (a
  // DeepSeek-V3 layer's 256 experts are 22.5 GB in bf16, its f64 reference four times that).
  const int64_t per_expert = 3 * t.hidden_size * m.expert_intermediate_size *
                             static_cast<int64_t>(tensor::dtype_size(s.ctx.model_dtype));
  const int64_t experts = std::clamp<int64_t>(kMoeCaseBytes / std::max<int64_t>(per_expert, 1),
                                              m.experts_per_token, m.num_experts);
  Json fields = {
      {"inputs", {{"ids", {{"arange", {{"start", 0}, {"step", 1}, {"mod", experts}}}}}}}};
  const Json& experts_attrs = s.bound.find("moe_experts")->attrs;
  if (!experts_attrs.empty()) fields["attrs"] = experts_attrs;
  if (m.fused_experts) fields["with"] = {"b_gate", "b_up", "b_down"};  // GPT-OSS's biased experts
  std::string cut;  // "/<experts>-of-<num_experts>-experts" when the table is cut
  if (experts < m.num_experts)
    cut.append("/")
        .append(std::to_string(experts))
        .append("-of-")
        .append(std::to_string(m.num_experts))
        .append("-experts");
  for (const int64_t rows : {T, int64_t{1}}) {  // a prefill's tokens and a decode step's
    s.add("moe_experts",
          {rows, t.hidden_size, m.expert_intermediate_size, experts, m.experts_per_token}, fields,
          "moe_experts" + cut + (rows == 1 ? "/decode" : ""));
  }
}

}  // namespace

std::vector<YAML::Node> model_shape_checks(const Context& ctx) {
  ShapeCases s(ctx);
  add_norm_cases(s);
  add_projection_cases(s);
  add_activation_cases(s);
  add_attention_cases(s);
  add_indexer_cases(s);
  add_linear_attention_cases(s);
  add_moe_cases(s);
  return std::move(s.checks);
}

std::vector<YAML::Node> rounding_checks(const Context& ctx) {
  const std::string dtype = tensor::dtype_name(ctx.model_dtype);
  std::vector<YAML::Node> checks;
  for (const char* op : {"add", "mul"}) {
    if (compare::rounding_probes(op, ctx.model_dtype).empty()) continue;
    checks.push_back(
        check_node(ctx.model_name + "/rounding/" + op, "rounding", {{"op", op}, {"dtype", dtype}}));
  }
  return checks;
}

// --- Layer and model cases against --golden ---

GoldenDumps golden_dumps(const Context& ctx) {
  GoldenDumps d;
  if (ctx.options.golden.empty() || !fs::is_directory(ctx.options.golden)) return d;
  for (const auto& e : fs::directory_iterator(ctx.options.golden)) {
    if (e.path().extension() != ".safetensors") continue;
    const io::SafetensorsFile file = io::SafetensorsFile::open(e.path().string());
    const auto& md = file.metadata();
    if (!md.contains("probes")) continue;
    if (file.find("positions") != nullptr) continue;
    if (md.contains("image")) {
      ++d.image_dumps;
    } else if (md.contains("layer")) {
      int64_t layer = -1;
      const std::string& text = md.at("layer");
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), layer);
      if (ec != std::errc() || end != text.data() + text.size() || layer < 0 ||
          layer >= ctx.arch->text.num_layers) {
        throw InputError(e.path().string(),
                         "metadata layer '" + text + "' is not a layer of this model (0.." +
                             std::to_string(ctx.arch->text.num_layers - 1) + ")");
      }
      d.layers.emplace_back(absolute(e.path().string()), layer);
    } else {
      d.prompts.push_back(absolute(e.path().string()));
    }
  }
  std::sort(d.prompts.begin(), d.prompts.end());
  std::sort(d.layers.begin(), d.layers.end());
  return d;
}

std::vector<YAML::Node> golden_checks(const Context& ctx, const GoldenDumps& dumps, bool layer) {
  std::vector<YAML::Node> checks;
  for (const auto& f : dumps.prompts) {
    Json fields = {{"model", absolute(ctx.options.model)}, {"golden", f}};
    if (!layer && !ctx.options.original_golden.empty())  // reported; thresholds are a suite's
      fields["quant_budget"] = {{"original", absolute(ctx.options.original_golden)}};
    if (layer) {
      Json layers = Json::array();
      for (int64_t l = 0; l < ctx.arch->text.num_layers; ++l) layers.push_back(l);
      fields["matrix"] = {{"layer", layers}};
    }
    const std::string stem = fs::path(f).stem().string();
    checks.push_back(check_node(ctx.model_name + "/" + stem + (layer ? "-layers" : ""),
                                layer ? "layer" : "model", fields));
  }
  if (!layer) return checks;
  for (const auto& [f, l] : dumps.layers) {
    checks.push_back(check_node(
        ctx.model_name + "/" + fs::path(f).stem().string() + "-layer" + std::to_string(l), "layer",
        {{"model", absolute(ctx.options.model)}, {"golden", f}, {"layer", l}}));
  }
  return checks;
}

// --- The service's cases ---

namespace {

// The e2e goldens of --golden: the gen_e2e.py files (<case>.json with a request and the
// reference's token ids), sorted; each with whether its request holds an image.
std::vector<std::pair<std::string, bool>> e2e_golden_files(const Context& ctx) {
  std::vector<std::pair<std::string, bool>> files;
  if (ctx.options.golden.empty() || !fs::is_directory(ctx.options.golden)) return files;
  for (const auto& e : fs::directory_iterator(ctx.options.golden)) {
    if (e.path().extension() != ".json") continue;
    const std::optional<std::string> text = suite::read_text_file(e.path().string());
    const Json j = base::parse_json_or_discarded(text ? *text : "");
    if (!j.is_object() || !j.contains("request") || !j.contains("token_ids")) continue;
    files.emplace_back(absolute(e.path().string()),
                       j["request"].dump().find("image_url") != std::string::npos);
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::vector<YAML::Node> e2e_checks(const Context& ctx) {
  const Json model = {{"model", absolute(ctx.options.model)}};
  const std::string& name = ctx.model_name;
  const auto goldens = e2e_golden_files(ctx);
  std::vector<YAML::Node> checks = {check_node(name + "/service", "service", model)};
  std::string determinism_golden;
  for (const auto& [file, image] : goldens) {
    Json fields = model;
    fields["golden"] = file;
    fields["compare"] = "auto";
    checks.push_back(check_node(name + "/" + fs::path(file).stem().string(),
                                image ? "e2e_image" : "e2e_text", fields));
    if (determinism_golden.empty() && !image) determinism_golden = file;
  }
  Json chat = model;
  chat["messages"] = {{{"role", "user"}, {"content", "Hello! Who are you?"}}};
  chat["max_tokens"] = 16;
  if (goldens.empty()) {
    Json fields = chat;
    fields["expect"] = {{"min_tokens", 1}};
    checks.push_back(check_node(name + "/chat_uncompared", "e2e_text", fields));
  }
  Json determinism = chat;
  if (!determinism_golden.empty()) {
    determinism = model;
    determinism["golden"] = determinism_golden;
  }
  checks.push_back(check_node(name + "/determinism", "determinism", determinism));
  Json load = model;
  load["prompt"] = "The quick brown fox jumps over the lazy dog.";
  load["max_tokens"] = 32;
  load["requests"] = 8;
  load["concurrency"] = 4;
  checks.push_back(check_node(name + "/load", "e2e_load", load));
  return checks;
}

namespace {

// The reference of an --eval task: --eval-reference (a store selector for every task; a file for
// the only one), else <task stem>.json in --golden (gen_eval.py --out); "" when there is none.
std::string eval_reference(const Context& ctx, const std::string& task) {
  const std::string& ref = ctx.options.eval_reference;
  if (!ref.empty()) return fs::exists(ref) ? absolute(ref) : ref;
  if (ctx.options.golden.empty()) return "";
  const fs::path file = fs::path(ctx.options.golden) / (fs::path(task).stem().string() + ".json");
  return fs::is_regular_file(file) ? absolute(file.string()) : "";
}

}  // namespace

std::vector<YAML::Node> eval_checks(const Context& ctx) {
  // The default gate (max_drop 0.02 by the paired test, alpha 0.05): a real model on another
  // platform agrees with its reference on most items, not on every one.
  std::vector<YAML::Node> checks;
  for (const std::string& task : ctx.options.eval_tasks) {
    Json fields = {
        {"model", absolute(ctx.options.model)}, {"task", absolute(task)}, {"num_concurrent", 4}};
    if (const std::string ref = eval_reference(ctx, task); !ref.empty()) fields["reference"] = ref;
    checks.push_back(
        check_node(ctx.model_name + "/" + fs::path(task).stem().string(), "eval", fields));
  }
  return checks;
}

std::vector<YAML::Node> serving_checks(const Context& ctx) {
  std::vector<YAML::Node> checks;
  for (const char* feature : {"prefix_cache", "decode_prefill", "batch", "chunked_prefill",
                              "preemption", "integrity", "spec_decode"}) {
    checks.push_back(check_node(ctx.model_name + "/" + feature, "serving",
                                {{"model", absolute(ctx.options.model)}, {"feature", feature}}));
  }
  return checks;
}

ConversationCases conversation_cases(const Context& ctx) {
  const std::string model = absolute(ctx.options.model);
  const std::string& name = ctx.model_name;
  ConversationCases out;
  std::vector<YAML::Node>& checks = out.checks;
  std::vector<std::string>& absent = out.absent;
  const fs::path root = fs::path(ctx.suites_dir).parent_path();
  const fs::path goldens = root / "golden" / "chat" / name;
  if (fs::is_directory(goldens)) {
    checks.push_back(check_node(name + "/chat_template", "chat_template",
                                {{"model", model}, {"goldens", goldens.string()}}));
  } else {
    absent.push_back("prompt rendering (no golden/chat/" + name +
                     "/: make them with golden/tools/gen_chat.py)");
  }
  std::string chat_template;  // none (no tokenizer_config.json): no reasoning format either
  try {
    chat_template = service::chat_template_text(model);
  } catch (const InputError&) {
  }
  if (chat_template.find("<think>") != std::string::npos) {
    // Qwen3's switch is enable_thinking (on by default), DeepSeek-V3.1's thinking (off).
    const char* tasks = chat_template.find("enable_thinking") != std::string::npos
                            ? "tasks/reasoning.jsonl"
                            : "tasks/reasoning_deepseek.jsonl";
    checks.push_back(
        check_node(name + "/reasoning", "reasoning",
                   {{"model", model}, {"tasks", (fs::path(ctx.suites_dir) / tasks).string()}}));
  } else {
    absent.push_back("reasoning split (the chat template has no <think>)");
  }
  for (const char* kind : {"structured_output", "tool_calls"})
    checks.push_back(check_node(name + "/" + kind, kind, {{"model", model}}));
  if (!ctx.options.tool_reference.empty()) {
    checks.push_back(check_node(name + "/tool_agreement", "tool_agreement",
                                {{"model", model}, {"reference", ctx.options.tool_reference}}));
  } else {
    absent.push_back("tool_choice auto against a reference (no --tool-reference)");
  }
  return out;
}

// --- Long context ---

namespace {

// The long-context goldens (gen_long.py: rows at sampled `positions`) for this model: those of
// --golden, else the shipped golden/models/<model>/long.safetensors.
std::vector<std::string> long_golden_files(const Context& ctx, const fs::path& root) {
  std::vector<std::string> files;
  const std::string dir = !ctx.options.golden.empty()
                              ? ctx.options.golden
                              : (root / "golden" / "models" / ctx.model_name).string();
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    if (io::SafetensorsFile::open(e.path().string()).find("positions") != nullptr)
      files.push_back(absolute(e.path().string()));
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The service's long goldens: <--golden>/long/*.json, else the shipped
// golden/e2e/<model>/long/*.json (gen_long.py writes completion_long.json there).
std::vector<std::string> long_e2e_files(const Context& ctx, const fs::path& root) {
  std::vector<std::string> files;
  fs::path dir = root / "golden" / "e2e" / ctx.model_name / "long";
  if (!ctx.options.golden.empty() && fs::is_directory(fs::path(ctx.options.golden) / "long"))
    dir = fs::path(ctx.options.golden) / "long";
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(absolute(e.path().string()));
  std::sort(files.begin(), files.end());
  return files;
}

// The executor's long cases: each golden whole and chunked, else the synthetic prompt's
// prefill consistency; none for a family the executor does not model (said in the notes).
void add_executor_long_cases(const Context& ctx, const std::vector<std::string>& goldens,
                             LongCases* out) {
  const std::string model = absolute(ctx.options.model);
  const std::string& name = ctx.model_name;
  if (!ctx.arch->modelled) {
    out->notes.push_back("executor not run: family " + ctx.arch->family + " is not modelled");
  } else if (!goldens.empty()) {
    for (const std::string& g : goldens) {
      const std::string stem = fs::path(g).stem().string();
      Json fields = {{"model", model}, {"golden", g}};
      out->checks.push_back(check_node(name + "/" + stem, "model", fields));
      fields["chunk"] = 512;
      out->checks.push_back(check_node(name + "/" + stem + "_chunked", "model", fields));
      out->lengths.insert(io::SafetensorsFile::open(g).get("input_ids").numel());
    }
  } else {
    const int64_t max_pos = ctx.arch->text.max_position_embeddings;
    const int64_t tokens = std::min<int64_t>(2048, max_pos > 0 ? max_pos : 2048) - 8;
    out->checks.push_back(check_node(name + "/prefill_consistency", "prefill_consistency",
                                     {{"model", model}, {"tokens", tokens}, {"chunk", 512}}));
    out->notes.push_back(
        "no long-context goldens (golden/tools/gen_long.py): chunked against one "
        "pass only, no reference compared");
    out->lengths.insert(tokens);
  }
}

// The service's long cases when the service stage passed: the continuation of each long e2e
// golden, then the engine's logprobs of the long prompt's own tokens at the goldens' sampled
// positions.
void add_service_long_cases(const Context& ctx, const fs::path& root,
                            const std::vector<std::string>& goldens, LongCases* out) {
  const std::string model = absolute(ctx.options.model);
  const std::string& name = ctx.model_name;
  const std::vector<std::string> e2e = long_e2e_files(ctx, root);
  const auto service = ctx.stage_status.find("service");
  const bool served = service != ctx.stage_status.end() && service->second == StageStatus::kPass;
  if (e2e.empty()) {
    out->notes.push_back("service not run: no long e2e golden (<golden>/long/*.json, golden/e2e/" +
                         name + "/long/)");
  } else if (!served) {
    out->notes.push_back("service not run: the service stage did not pass");
  } else {
    for (const std::string& g : e2e) {
      out->checks.push_back(check_node(name + "/" + fs::path(g).stem().string(), "e2e_text",
                                       {{"model", model}, {"golden", g}, {"compare", "auto"}}));
      const Json j = base::read_json_file(g);
      if (j.contains("prompt_token_ids"))
        out->lengths.insert(int64_t(j["prompt_token_ids"].size()));
    }
  }
  // The engine's logprobs of the long prompt's own tokens at the golden's sampled positions.
  if (served)
    for (const std::string& g : goldens)
      out->checks.push_back(
          check_node(name + "/" + fs::path(g).stem().string() + "_prompt_logprobs",
                     "prompt_logprobs", {{"model", model}, {"golden", g}}));
}

}  // namespace

LongCases long_cases(const Context& ctx) {
  LongCases out;
  const fs::path root = fs::path(ctx.suites_dir).parent_path();
  const std::vector<std::string> goldens = long_golden_files(ctx, root);
  add_executor_long_cases(ctx, goldens, &out);
  add_service_long_cases(ctx, root, goldens, &out);
  // The plan's KV capacity against the engine's own report (platform service.kv_source), when
  // there is a long prompt to run.
  const auto service = ctx.stage_status.find("service");
  if (!out.checks.empty() && service != ctx.stage_status.end() &&
      service->second == StageStatus::kPass) {
    out.checks.push_back(check_node(ctx.model_name + "/kv_capacity", "kv_capacity",
                                    {{"model", absolute(ctx.options.model)}}));
  }
  return out;
}

}  // namespace h0::day0
