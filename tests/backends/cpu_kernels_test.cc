// The cpu backend against the catalogue's reference kernels: every op in f32, bf16 and f16 on
// Philox inputs, run through the plugin ABI and compared with compare_tensors.
//
// Tolerances. Both sides see identical inputs; the reference accumulates in f64 and rounds once,
// the backend accumulates in f32 and rounds once. So:
//   - bf16/f16 outputs: the dtype preset; the f32 result differs from the f64 one by far less
//     than an output ulp, so at most one ulp (2^-8 / 2^-10 relative) apart, within its rtol;
//   - f32 outputs: rtol 1e-5 (a length-L f32 sum is off by <~ sqrt(L)·2^-24 of Σ|terms|, about
//     4e-6 at L = 4096; libm exp/erf/tanh/cos add 1-2 ulp) plus an atol at the output's scale
//     for elements that cancel to ~0: GEMMs 1e-6·sqrt(K) (|out| ~ sqrt(K) for unit normals),
//     norms/rope/attention/activations 1e-6 (|out| ~ 1), softmax/moe weights 1e-7 (|out| <= 1).
//     Measured errors (--gtest_output=xml records them) are 10-100x below these bounds;
//   - exact: integer outputs (argmax/sample/moe_gate ids), row copies (embedding), single
//     correctly rounded operations (add, mul: RN(RN64(x)) = RN(x) for f32 and narrower) and
//     quantize/dequantize (the same f64 quotient / an exact product, rounded the same way).
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu_test_util.h"
#include "compare/tensor_compare.h"
#include "ops/op.h"

namespace h0::tensor {
// A dtype in gtest's messages by its name ("bf16"), not by its bytes.
static void PrintTo(DType d, std::ostream* os) { *os << dtype_name(d); }
}  // namespace h0::tensor

namespace h0::test {
namespace {

using ops::Dims;

struct Tol {
  double rtol = 1e-5, atol = 1e-5;  // for f32 outputs
  bool exact = false;
};

struct OpCase {
  const char* label;  // unique test name suffix
  const char* op;
  Dims dims;
  Json attrs = Json::object();
  std::set<std::string> with = {};  // optional operands to pass
  Json inputs = Json::object();     // distributions overriding the catalogue's default_inputs
  Tol tol = {};
};

void PrintTo(const OpCase& c, std::ostream* os) { *os << c.label << " " << c.attrs.dump(); }

compare::Tolerance tolerance_for(const Tol& tol, DType out) {
  if (tol.exact || !tensor::is_float(out)) return *compare::preset("exact");
  if (out == DType::kF32) return {"f32-op", {tol.rtol, tol.atol, true}, {}};
  return *compare::preset(tensor::dtype_name(out));
}

class CpuVsReference : public testing::TestWithParam<std::tuple<OpCase, DType>> {};

TEST_P(CpuVsReference, MatchesReference) {
  const auto& [c, dtype] = GetParam();
  const ops::OpDef* op = ops::find_op(c.op);
  ASSERT_NE(op, nullptr) << c.op;
  if (!op->reference || !op->operands || !op->infer)
    GTEST_SKIP() << c.op << ": reference kernel not in the catalogue yet";
  Json attrs_in = c.attrs;
  if (std::string(c.op) == "dequantize" || std::string(c.op) == "dequantize_mxfp4")
    attrs_in["out_dtype"] = tensor::dtype_name(dtype);
  const Json attrs = ops::validate_attrs(*op, attrs_in);
  const auto descs = op->operands(c.dims, attrs, dtype, DType::kI64, c.with);
  const Json defaults = op->default_inputs ? op->default_inputs(c.dims, attrs) : Json::object();

  std::vector<Tensor> inputs(descs.size());
  std::vector<const Tensor*> in_ptrs;
  std::vector<ops::TensorDesc> present;
  for (size_t i = 0; i < descs.size(); ++i) {
    if (!descs[i].present) {
      in_ptrs.push_back(nullptr);
      continue;
    }
    const char* name = op->inputs[i].name;
    const Json dist = c.inputs.contains(name)   ? c.inputs[name]
                      : defaults.contains(name) ? defaults[name]
                                                : Json{{"normal", {{"mean", 0}, {"std", 1}}}};
    inputs[i] = synthesize(dist, descs[i].dtype, descs[i].shape, 7, i);
    in_ptrs.push_back(&inputs[i]);
    present.push_back(descs[i]);
  }
  const auto out_descs = ops::infer_outputs(*op, present, attrs);
  std::vector<Tensor> expected, actual;
  std::vector<Tensor*> exp_ptrs;
  for (const auto& d : out_descs) {
    expected.push_back(Tensor::zeros(d.dtype, d.shape));
    actual.push_back(Tensor::zeros(d.dtype, d.shape));
  }
  for (auto& t : expected) exp_ptrs.push_back(&t);
  op->reference(in_ptrs, exp_ptrs, attrs);

  ASSERT_EQ(run_on_backend(c.op, in_ptrs, actual, attrs), HB_OK)
      << backend()->last_error(backend()->self);
  for (size_t i = 0; i < actual.size(); ++i) {
    const auto cmp =
        compare::compare_tensors(actual[i], expected[i], tolerance_for(c.tol, actual[i].dtype()));
    char errors[64];  // recorded for --gtest_output, to see the margin under the tolerance
    std::snprintf(errors, sizeof errors, "%.3g %.3g", cmp.metrics.max_abs_err,
                  cmp.metrics.max_rel_err);
    RecordProperty(std::string(op->outputs[i].name) + "_max_abs_rel_err", errors);
    EXPECT_TRUE(cmp.pass) << c.label << " " << tensor::dtype_name(dtype) << " output "
                          << op->outputs[i].name << ": max_abs_err " << cmp.metrics.max_abs_err
                          << " max_rel_err " << cmp.metrics.max_rel_err << " mismatches "
                          << cmp.metrics.mismatch_count << " worst at " << cmp.metrics.worst_index
                          << " (" << cmp.metrics.worst_actual << " vs "
                          << cmp.metrics.worst_expected << ")"
                          << (cmp.failures.empty() ? "" : " " + cmp.failures[0]);
  }
}

const Tol kExact{0, 0, true};

// Small problems covering every op and the attrs that change its code path. Dims use the
// catalogue's names (`d0`, `d1`, ... for any-rank ops).

std::vector<OpCase> cases() {
  const Json yarn = {
      {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 4096}};
  const Json yarn_ds = {
      {"type", "yarn"}, {"factor", 40.0},          {"original_max_position_embeddings", 4096},
      {"mscale", 1.0},  {"mscale_all_dim", 0.707}, {"beta_fast", 32},
      {"beta_slow", 1}};
  const Json llama3 = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  const Json positions = {{"ints", {{"low", 0}, {"high", 200000}}}};
  const Dims attn = {{"T", 5}, {"S", 19}, {"Hq", 4}, {"Hkv", 2}, {"Dh", 32}, {"Dv", 32}};
  const Dims paged = {{"T", 3}, {"S", 14}, {"Hq", 4}, {"Hkv", 2}, {"Dh", 16}, {"Dv", 24}, {"B", 4}};
  const Dims moe = {{"T", 9}, {"D", 48}, {"E", 8}, {"k", 2}, {"F", 40}};
  const Json ids8 = {{"topk_ids", {{"experts", 8}}}};
  return {
      {"matmul", "matmul", {{"M", 7}, {"K", 256}, {"N", 33}}, {}, {}, {}, {1e-5, 1.6e-5}},
      {"linear", "linear", {{"T", 5}, {"K", 200}, {"N", 31}}, {}, {}, {}, {1e-5, 1.4e-5}},
      {"linear_k4096", "linear", {{"T", 3}, {"K", 4096}, {"N", 17}}, {}, {}, {}, {1e-5, 6.4e-5}},
      {"linear_bias",
       "linear",
       {{"T", 5}, {"K", 200}, {"N", 31}},
       {},
       {"bias"},
       {},
       {1e-5, 1.4e-5}},
      // linear_widen: the per-row dot path (T <= 4, K not a multiple of the 16 lanes) in bf16
      // and f16, and the tiled sgemm path over two tiles of w (256 rows of K 4096 each).
      {"linear_widen_decode",
       "linear_widen",
       {{"T", 3}, {"K", 203}, {"N", 31}},
       {{"dtype", "bf16"}},
       {"bias"},
       {},
       {1e-5, 1.4e-5}},
      {"linear_widen_decode_f16",
       "linear_widen",
       {{"T", 1}, {"K", 200}, {"N", 9}},
       {{"dtype", "f16"}},
       {},
       {},
       {1e-5, 1.4e-5}},
      {"linear_widen_tiles",
       "linear_widen",
       {{"T", 9}, {"K", 4096}, {"N", 300}},
       {{"dtype", "bf16"}},
       {"bias"},
       {},
       {1e-5, 6.4e-5}},
      {"embedding",
       "embedding",
       {{"T", 11}, {"V", 50}, {"D", 24}},
       {},
       {},
       {{"ids", {{"ints", {{"low", 0}, {"high", 50}}}}}},
       kExact},
      {"add", "add", {{"d0", 13}, {"d1", 77}}, {}, {}, {}, kExact},
      {"mul", "mul", {{"d0", 13}, {"d1", 77}}, {}, {}, {}, kExact},
      {"rmsnorm", "rmsnorm", {{"T", 6}, {"D", 4096}}, {{"eps", 1e-6}}, {}, {}, {1e-5, 1e-6}},
      {"layernorm", "layernorm", {{"T", 6}, {"D", 1000}}, {}, {}, {}, {1e-5, 1e-6}},
      {"rope_neox",
       "rope",
       {{"T", 6}, {"H", 3}, {"Dh", 64}},
       {},
       {},
       {{"positions", positions}},
       {1e-5, 1e-6}},
      {"rope_gptj_partial",
       "rope",
       {{"T", 6}, {"H", 3}, {"Dh", 64}},
       {{"style", "gptj"}, {"rotary_dim", 32}},
       {},
       {{"positions", positions}},
       {1e-5, 1e-6}},
      {"rope_linear",
       "rope",
       {{"T", 6}, {"H", 2}, {"Dh", 32}},
       {{"scaling", {{"type", "linear"}, {"factor", 4.0}}}},
       {},
       {{"positions", positions}},
       {1e-5, 1e-6}},
      {"rope_llama3",
       "rope",
       {{"T", 6}, {"H", 2}, {"Dh", 128}},
       {{"theta", 500000.0}, {"scaling", llama3}},
       {},
       {{"positions", positions}},
       {1e-5, 1e-6}},
      {"rope_yarn",
       "rope",
       {{"T", 6}, {"H", 2}, {"Dh", 64}},
       {{"scaling", yarn}},
       {},
       {{"positions", positions}},
       {1e-5, 1e-6}},
      {"rope_yarn_mscale",
       "rope",
       {{"T", 6}, {"H", 2}, {"Dh", 64}},
       {{"style", "gptj"}, {"scaling", yarn_ds}},
       {},
       {{"positions", positions}},
       {1e-5, 1e-6}},
      {"softmax", "softmax", {{"d0", 2}, {"d1", 3}, {"d2", 300}}, {}, {}, {}, {1e-5, 1e-7}},
      {"silu", "silu", {{"d0", 9}, {"d1", 100}}, {}, {}, {}, {1e-5, 1e-6}},
      {"sigmoid", "sigmoid", {{"d0", 9}, {"d1", 100}}, {}, {}, {}, {1e-5, 1e-6}},
      {"gelu", "gelu", {{"d0", 9}, {"d1", 100}}, {}, {}, {}, {1e-5, 1e-6}},
      {"gelu_tanh",
       "gelu",
       {{"d0", 9}, {"d1", 100}},
       {{"approximate", "tanh"}},
       {},
       {},
       {1e-5, 1e-6}},
      {"swiglu", "swiglu", {{"T", 9}, {"F", 100}}, {}, {}, {}, {1e-5, 1e-6}},
      {"attention_causal_gqa", "attention", attn, {}, {}, {}, {1e-5, 1e-6}},
      {"attention_window_offset",
       "attention",
       attn,
       {{"sliding_window", 6}, {"q_offset", 9}},
       {},
       {},
       {1e-5, 1e-6}},
      {"attention_noncausal_mla",
       "attention",
       {{"T", 5}, {"S", 19}, {"Hq", 4}, {"Hkv", 1}, {"Dh", 24}, {"Dv", 16}},
       {{"causal", false}, {"scale", 0.3}},
       {},
       {},
       {1e-5, 1e-6}},
      {"attention_more_queries_than_keys",
       "attention",
       {{"T", 7}, {"S", 4}, {"Hq", 2}, {"Hkv", 2}, {"Dh", 16}, {"Dv", 16}},
       {},
       {},
       {},
       {1e-5, 1e-6}},
      {"paged_attention", "paged_attention", paged, {{"context_len", 11}}, {}, {}, {1e-5, 1e-6}},
      {"paged_attention_full", "paged_attention", paged, {{"causal", false}}, {}, {}, {1e-5, 1e-6}},
      // The indexer over integral scores (ties everywhere: picked by lower key id) and over normal
      // ones, prefill and decode; sparse attention over drawn indices (-1s and repeats among them).
      {"lightning_indexer_ties",
       "lightning_indexer",
       {{"T", 6}, {"S", 30}, {"H", 2}, {"D", 8}, {"B", 4}},
       {{"topk", 5}, {"context_len", 30}, {"scale", 1.0}},
       {},
       {{"q", {{"ints", {{"low", -1}, {"high", 2}}}}},
        {"k_cache", {{"ints", {{"low", -1}, {"high", 2}}}}},
        {"weights", {{"ints", {{"low", -1}, {"high", 2}}}}}},
       kExact},
      {"lightning_indexer",
       "lightning_indexer",
       {{"T", 9}, {"S", 9}, {"H", 4}, {"D", 16}, {"B", 4}},
       {{"topk", 4}},
       {},
       {},
       kExact},
      {"lightning_indexer_decode",
       "lightning_indexer",
       {{"T", 1}, {"S", 50}, {"H", 4}, {"D", 16}, {"B", 8}},
       {{"topk", 7}, {"context_len", 45}},
       {},
       {},
       kExact},
      {"sparse_attention",
       "sparse_attention",
       {{"T", 5}, {"S", 14}, {"Hq", 4}, {"Hkv", 2}, {"Dh", 16}, {"Dv", 24}, {"B", 4}, {"K", 6}},
       {{"context_len", 14}},
       {},
       {},
       {1e-5, 1e-6}},
      {"sparse_attention_full",
       "sparse_attention",
       {{"T", 3}, {"S", 14}, {"Hq", 2}, {"Hkv", 2}, {"Dh", 8}, {"Dv", 8}, {"B", 4}, {"K", 20}},
       {{"causal", false}, {"context_len", 13}, {"scale", 0.2}},
       {},
       {},
       {1e-5, 1e-6}},
      // The conv with and without the bias; the delta rule with GVA (Hv = 2·Hk), short and long.
      {"causal_conv1d", "causal_conv1d", {{"T", 9}, {"C", 40}, {"K", 4}}, {}, {}, {}, {1e-5, 1e-6}},
      {"causal_conv1d_bias",
       "causal_conv1d",
       {{"T", 2}, {"C", 24}, {"K", 3}},
       {{"activation", "none"}},
       {"bias"},
       {},
       {1e-5, 1e-6}},
      {"gated_delta_rule",
       "gated_delta_rule",
       {{"T", 9}, {"Hk", 2}, {"Dk", 16}, {"Hv", 4}, {"Dv", 8}},
       {},
       {},
       {},
       {1e-5, 1e-6}},
      {"gated_delta_rule_long",
       "gated_delta_rule",
       {{"T", 150}, {"Hk", 1}, {"Dk", 32}, {"Hv", 2}, {"Dv", 24}},
       {},
       {},
       {},
       {1e-5, 1e-6}},
      {"gdn_gating",
       "gdn_gating",
       {{"T", 9}, {"Hv", 6}},
       {},
       {},
       {{"a", {{"uniform", {{"low", -30}, {"high", 30}}}}}},
       {1e-5, 1e-6}},
      {"rmsnorm_gated", "rmsnorm_gated", {{"T", 5}, {"D", 64}}, {}, {}, {}, {1e-5, 1e-6}},
      {"moe_gate_softmax", "moe_gate", {{"T", 9}, {"E", 16}}, {{"top_k", 2}}, {}, {}, {1e-5, 1e-7}},
      {"moe_gate_deepseek",
       "moe_gate",
       {{"T", 9}, {"E", 16}},
       {{"top_k", 4},
        {"scoring", "sigmoid"},
        {"normalize", true},
        {"n_group", 4},
        {"topk_group", 2},
        {"routed_scaling_factor", 2.5}},
       {"bias"},
       {},
       {1e-5, 1e-7}},
      {"moe_gate_ties_grouped",  // integral logits: equal scores, picked by lower id
       "moe_gate",
       {{"T", 9}, {"E", 16}},
       {{"top_k", 3}, {"n_group", 4}, {"topk_group", 2}},
       {},
       {{"logits", {{"ints", {{"low", 0}, {"high", 3}}}}}},
       {1e-5, 1e-7}},
      {"moe_experts", "moe_experts", moe, {}, {}, {{"ids", ids8}}, {1e-5, 1e-5}},
      {"patch_embed",
       "patch_embed",
       {{"C", 3}, {"Hi", 16}, {"Wi", 12}, {"D", 20}},
       {{"patch", 4}},
       {"b"},
       {},
       {1e-5, 1e-5}},
      {"quantize_i8_tensor",
       "quantize",
       {{"d0", 6}, {"d1", 70}},
       {{"dtype", "i8"}},
       {},
       {},
       kExact},
      {"quantize_e4m3_channel",
       "quantize",
       {{"d0", 6}, {"d1", 70}},
       {{"dtype", "f8_e4m3"}, {"granularity", "channel"}},
       {},
       {},
       kExact},
      {"quantize_e5m2_block",
       "quantize",
       {{"d0", 6}, {"d1", 70}},
       {{"dtype", "f8_e5m2"}, {"granularity", "block"}, {"block", 16}},
       {},
       {},
       kExact},
      {"dequantize_i8_channel",
       "dequantize",
       {{"d0", 6}, {"d1", 70}},
       {{"dtype", "i8"}, {"granularity", "channel"}},
       {},
       {},
       kExact},
      {"dequantize_mxfp4",
       "dequantize_mxfp4",
       {{"d0", 5}, {"d1", 7}},
       Json::object(),
       {},
       {},
       kExact},
      {"dequantize_e4m3_block",
       "dequantize",
       {{"d0", 6}, {"d1", 70}},
       {{"dtype", "f8_e4m3"}, {"granularity", "block"}, {"block", 32}},
       {},
       {},
       kExact},
      {"quantize_e4m3_block2d",
       "quantize",
       {{"d0", 37}, {"d1", 70}},
       {{"dtype", "f8_e4m3"}, {"granularity", "block2d"}, {"block_rows", 16}, {"block", 32}},
       {},
       {},
       kExact},
      {"dequantize_e4m3_block2d",
       "dequantize",
       {{"d0", 37}, {"d1", 70}},
       {{"dtype", "f8_e4m3"}, {"granularity", "block2d"}, {"block_rows", 16}, {"block", 32}},
       {},
       {},
       kExact},
      // The fused path (up to 8 tokens) and the sgemm path; ragged blocks on both axes.
      {"scaled_linear_decode",
       "scaled_linear",
       {{"T", 3}, {"K", 70}, {"N", 37}},
       {{"block_n", 16}, {"block_k", 32}},
       {"bias"},
       {},
       {1e-5, 1e-5}},
      {"scaled_linear_prefill",
       "scaled_linear",
       {{"T", 20}, {"K", 300}, {"N", 130}},
       {{"block_n", 128}, {"block_k", 128}},
       {},
       {},
       {1e-5, 1e-5}},
      {"scaled_linear_act_quant",
       "scaled_linear",
       {{"T", 5}, {"K", 70}, {"N", 37}},
       {{"block_n", 16}, {"block_k", 32}, {"act_quant", "dynamic"}},
       {},
       {},
       {1e-5, 1e-5}},
      {"argmax",
       "argmax",
       {{"T", 8}, {"V", 300}},
       {},
       {},
       {{"x", {{"ints", {{"low", 0}, {"high", 40}}}}}},
       kExact},
      {"sample",
       "sample",
       {{"T", 8}, {"V", 300}},
       {{"seed", 1234}, {"step", 5}},
       {},
       {{"logits", {{"normal", {{"mean", 0}, {"std", 3}}}}}},
       kExact},
      {"sample_topk_topp",
       "sample",
       {{"T", 8}, {"V", 300}},
       {{"temperature", 0.7}, {"top_k", 40}, {"top_p", 0.9}, {"seed", 99}, {"step", 2}},
       {},
       {{"logits", {{"normal", {{"mean", 0}, {"std", 3}}}}}},
       kExact},
      {"sample_greedy", "sample", {{"T", 8}, {"V", 300}}, {{"temperature", 0.0}}, {}, {}, kExact},
  };
}

std::string case_name(const testing::TestParamInfo<std::tuple<OpCase, DType>>& info) {
  return std::string(std::get<0>(info.param).label) + "_" +
         tensor::dtype_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllOps, CpuVsReference,
                         testing::Combine(testing::ValuesIn(cases()),
                                          testing::Values(DType::kF32, DType::kBF16, DType::kF16)),
                         case_name);

TEST(CpuBackendCases, CoverEveryCatalogueOp) {
  for (const ops::OpDef* op : ops::all_ops()) {
    bool covered = false;
    for (const auto& c : cases()) covered |= std::string(c.op) == op->name;
    EXPECT_TRUE(covered) << op->name << " has no case";
  }
}

}  // namespace
}  // namespace h0::test
