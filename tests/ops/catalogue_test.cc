// The catalogue's tables: every entry complete and self-consistent (operands -> infer_outputs ->
// reference, default_inputs naming the operands), attrs and shapes rejected with exact
// messages, and the cost formulas of each op's header comment.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "base/error.h"
#include "ops/op.h"
#include "ops/op_list.h"
#include "ops/op_test_util.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using testing::make;
using testing::run;

// A small problem for each op: dims, attrs and the optional operands to include.
struct Problem {
  const char* op;
  Dims dims;
  Json attrs;
  std::set<std::string> with;
};

const std::vector<Problem>& problems() {
  static const std::vector<Problem> p = {
      {"matmul", {{"M", 3}, {"K", 4}, {"N", 5}}, Json::object(), {}},
      {"linear", {{"T", 3}, {"K", 4}, {"N", 5}}, Json::object(), {"bias"}},
      {"linear_widen", {{"T", 3}, {"K", 4}, {"N", 5}}, {{"dtype", "f16"}}, {"bias"}},
      {"embedding", {{"T", 3}, {"V", 10}, {"D", 4}}, Json::object(), {}},
      {"add", {{"d0", 2}, {"d1", 3}, {"d2", 4}}, Json::object(), {}},
      {"mul", {{"d0", 6}}, Json::object(), {}},
      {"rmsnorm", {{"T", 2}, {"D", 8}}, Json::object(), {}},
      {"layernorm", {{"T", 2}, {"D", 8}}, Json::object(), {}},
      {"rope", {{"T", 3}, {"H", 2}, {"Dh", 8}}, {{"rotary_dim", 4}}, {}},
      {"softmax", {{"d0", 2}, {"d1", 5}}, Json::object(), {}},
      {"silu", {{"d0", 7}}, Json::object(), {}},
      {"sigmoid", {{"d0", 7}}, Json::object(), {}},
      {"gelu", {{"d0", 2}, {"d1", 3}}, {{"approximate", "tanh"}}, {}},
      {"swiglu", {{"T", 2}, {"F", 6}}, Json::object(), {}},
      {"attention",
       {{"T", 3}, {"S", 5}, {"Hq", 4}, {"Hkv", 2}, {"Dh", 8}, {"Dv", 6}},
       Json::object(),
       {}},
      {"paged_attention",
       {{"T", 2}, {"S", 7}, {"Hq", 2}, {"Hkv", 1}, {"Dh", 4}, {"B", 4}},
       {{"context_len", 7}},
       {}},
      {"rmsnorm_gated", {{"T", 2}, {"D", 8}}, Json::object(), {}},
      {"lightning_indexer",
       {{"T", 2}, {"S", 7}, {"H", 2}, {"D", 4}, {"B", 4}},
       {{"topk", 3}, {"context_len", 7}},
       {}},
      {"sparse_attention",
       {{"T", 2}, {"S", 7}, {"Hq", 2}, {"Hkv", 1}, {"Dh", 4}, {"Dv", 3}, {"B", 4}, {"K", 3}},
       {{"context_len", 7}},
       {}},
      {"causal_conv1d", {{"T", 3}, {"C", 5}, {"K", 4}}, {{"activation", "none"}}, {"bias"}},
      {"gated_delta_rule",
       {{"T", 3}, {"Hk", 1}, {"Dk", 4}, {"Hv", 2}, {"Dv", 3}},
       Json::object(),
       {}},
      {"gdn_gating", {{"T", 3}, {"Hv", 4}}, Json::object(), {}},
      {"moe_gate", {{"T", 3}, {"E", 8}}, {{"n_group", 4}, {"topk_group", 2}}, {"bias"}},
      {"moe_experts", {{"T", 3}, {"D", 4}, {"F", 6}, {"E", 4}, {"k", 2}}, Json::object(), {}},
      {"patch_embed", {{"C", 3}, {"Hi", 8}, {"Wi", 12}, {"D", 5}}, {{"patch", 4}}, {"b"}},
      {"quantize", {{"d0", 3}, {"d1", 10}}, {{"granularity", "block"}, {"block", 4}}, {}},
      {"dequantize",
       {{"d0", 3}, {"d1", 10}},
       {{"granularity", "block"}, {"block", 4}, {"dtype", "f8_e4m3"}, {"out_dtype", "bf16"}},
       {}},
      {"dequantize_mxfp4", {{"d0", 3}, {"d1", 2}}, {{"out_dtype", "bf16"}}, {}},
      {"scaled_linear",
       {{"T", 3}, {"K", 40}, {"N", 20}},
       {{"block_n", 16}, {"block_k", 16}},
       {"bias"}},
      {"argmax", {{"T", 2}, {"V", 9}}, Json::object(), {}},
      {"sample", {{"T", 2}, {"V", 9}}, {{"top_k", 3}}, {}},
  };
  return p;
}

const Problem& problem(const std::string& op) {
  for (const auto& p : problems()) {
    if (op == p.op) return p;
  }
  throw std::runtime_error("no test problem for " + op);
}

std::vector<TensorDesc> operands_of(const Problem& p, DType dtype = DType::kF32,
                                    DType index_dtype = DType::kI64) {
  const OpDef& op = require_op(p.op);
  return op.operands(p.dims, validate_attrs(op, p.attrs), dtype, index_dtype, p.with);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TensorDesc d(DType dtype, Shape shape) { return {dtype, std::move(shape), true}; }
constexpr DType kF32 = DType::kF32;

std::string infer_error(const char* op, const std::vector<TensorDesc>& in,
                        const Json& attrs = Json::object()) {
  return error_of(
      [&] { infer_outputs(require_op(op), in, validate_attrs(require_op(op), attrs)); });
}

std::string attrs_error(const char* op, const Json& attrs) {
  return error_of([&] { validate_attrs(require_op(op), attrs); });
}

Cost cost_of(const Problem& p) {
  const OpDef& op = require_op(p.op);
  const Json a = validate_attrs(op, p.attrs);
  const auto in = operands_of(p);
  return op.cost(in, infer_outputs(op, in, a), a);
}

bool kind_fits(OperandKind kind, DType dtype, DType float_dtype, DType index_dtype) {
  switch (kind) {
    case OperandKind::kFloat:
      return dtype == float_dtype;
    case OperandKind::kIndex:
      return dtype == index_dtype;
    case OperandKind::kF32:
      return dtype == DType::kF32;
    case OperandKind::kI32:
      return dtype == DType::kI32;
    case OperandKind::kI64:
      return dtype == DType::kI64;
    case OperandKind::kU8:
      return dtype == DType::kU8;
    case OperandKind::kStored:
      return dtype == DType::kBF16 || dtype == DType::kF16 || dtype == DType::kF32;
    default:
      return dtype == DType::kI8 || dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2;
  }
}

TEST(Catalogue, EveryEntryIsComplete) {
  EXPECT_EQ(all_ops().size(), 31u);
  for (const OpDef* op : all_ops()) {
    SCOPED_TRACE(op->name);
    EXPECT_FALSE(op->inputs.empty());
    EXPECT_FALSE(op->outputs.empty());
    EXPECT_FALSE(op->dims.empty());
    EXPECT_NE(op->operands, nullptr);
    EXPECT_NE(op->infer, nullptr);
    EXPECT_NE(op->cost, nullptr);
    EXPECT_NE(op->reference, nullptr);
    EXPECT_NE(op->default_inputs, nullptr);
    bool seen_optional = false;
    for (const auto& in : op->inputs) {
      EXPECT_TRUE(!seen_optional || in.optional) << in.name << ": optional operands come last";
      seen_optional = seen_optional || in.optional;
    }
    for (const auto& a : op->attrs) {
      if (a.default_json != nullptr) {
        EXPECT_NO_THROW(Json::parse(a.default_json)) << a.name;
      }
      EXPECT_TRUE(a.doc != nullptr && *a.doc) << a.name;
    }
    EXPECT_NO_THROW(problem(op->name));
  }
}

TEST(Catalogue, ToleranceClasses) {
  const std::map<std::string, ToleranceClass> want = {
      {"matmul", ToleranceClass::kReduction},
      {"linear", ToleranceClass::kReduction},
      {"linear_widen", ToleranceClass::kReduction},
      {"attention", ToleranceClass::kReduction},
      {"paged_attention", ToleranceClass::kReduction},
      {"moe_experts", ToleranceClass::kReduction},
      {"patch_embed", ToleranceClass::kReduction},
      {"softmax", ToleranceClass::kReduction},
      {"rope", ToleranceClass::kTranscendental},
      {"silu", ToleranceClass::kTranscendental},
      {"sigmoid", ToleranceClass::kTranscendental},
      {"gelu", ToleranceClass::kTranscendental},
      {"swiglu", ToleranceClass::kTranscendental},
      {"moe_gate", ToleranceClass::kTranscendental},
      {"add", ToleranceClass::kElementwise},
      {"mul", ToleranceClass::kElementwise},
      {"embedding", ToleranceClass::kElementwise},
      {"dequantize", ToleranceClass::kElementwise},
      {"dequantize_mxfp4", ToleranceClass::kElementwise},
      {"rmsnorm_gated", ToleranceClass::kReduction},
      {"causal_conv1d", ToleranceClass::kReduction},
      {"gated_delta_rule", ToleranceClass::kReduction},
      {"lightning_indexer", ToleranceClass::kExact},
      {"gdn_gating", ToleranceClass::kTranscendental},
      {"sparse_attention", ToleranceClass::kReduction},
      {"quantize", ToleranceClass::kElementwise},
      {"argmax", ToleranceClass::kExact},
      {"sample", ToleranceClass::kExact},
  };
  for (const auto& [name, cls] : want) EXPECT_EQ(require_op(name).tolerance, cls) << name;
}

// operands() -> infer_outputs() -> reference() for every op, in bf16 with i32 indices, with
// and without the optional operands.
TEST(Catalogue, OperandsInferAndRunForEveryOp) {
  for (const Problem& p : problems()) {
    SCOPED_TRACE(p.op);
    const OpDef& op = require_op(p.op);
    const Json attrs = validate_attrs(op, p.attrs);
    for (const bool with_optional : {true, false}) {
      const auto in = op.operands(p.dims, attrs, DType::kBF16, DType::kI32,
                                  with_optional ? p.with : std::set<std::string>());
      size_t want = 0;
      for (const auto& spec : op.inputs)
        want += !spec.optional || (with_optional && p.with.count(spec.name));
      ASSERT_EQ(in.size(), want);
      for (size_t i = 0; i < in.size(); ++i) {
        EXPECT_TRUE(in[i].present);
        EXPECT_TRUE(kind_fits(op.inputs[i].kind, in[i].dtype, DType::kBF16, DType::kI32))
            << op.inputs[i].name << " is " << tensor::dtype_name(in[i].dtype);
      }
      std::vector<TensorDesc> out;
      ASSERT_NO_THROW(out = infer_outputs(op, in, attrs));
      ASSERT_EQ(out.size(), op.outputs.size());
      for (size_t i = 0; i < out.size(); ++i) {  // dequantize's problem asks for bf16 too
        EXPECT_TRUE(kind_fits(op.outputs[i].kind, out[i].dtype, DType::kBF16, DType::kI32))
            << op.outputs[i].name << " is " << tensor::dtype_name(out[i].dtype);
      }
      // Zeros are valid inputs of every op (id 0, block 0, expert 0).
      std::vector<Tensor> tensors;
      for (const auto& desc : in) tensors.push_back(Tensor::zeros(desc.dtype, desc.shape));
      std::vector<Tensor> outputs;
      ASSERT_NO_THROW(outputs = run(p.op, tensors, p.attrs));
      for (size_t i = 0; i < outputs.size(); ++i) {
        EXPECT_EQ(outputs[i].shape(), out[i].shape);
        for (double v : testing::values(outputs[i]))
          EXPECT_TRUE(std::isfinite(v)) << op.outputs[i].name;
      }
    }
  }
}

TEST(Catalogue, DefaultInputsNameTheOperands) {
  for (const Problem& p : problems()) {
    SCOPED_TRACE(p.op);
    const OpDef& op = require_op(p.op);
    const Json dists = op.default_inputs(p.dims, validate_attrs(op, p.attrs));
    std::set<std::string> names, want;
    for (const auto& [name, dist] : dists.items()) {
      names.insert(name);
      EXPECT_TRUE(dist.is_object() && dist.size() == 1) << name << ": " << dist.dump();
    }
    for (const auto& in : op.inputs) want.insert(in.name);
    EXPECT_EQ(names, want);
  }
}

TEST(Catalogue, DefaultInputDistributions) {
  const Json mm = matmul_op().default_inputs({{"M", 2}, {"K", 16}, {"N", 3}}, Json::object());
  EXPECT_EQ(mm["b"]["normal"]["std"].get<double>(), 0.25);
  const Json emb = embedding_op().default_inputs(problem("embedding").dims, Json::object());
  EXPECT_EQ(emb["ids"], Json::parse(R"({"ints": {"low": 0, "high": 10}})"));
  const Json rope = rope_op().default_inputs(problem("rope").dims, Json::object());
  EXPECT_EQ(rope["positions"], Json::parse(R"({"arange": {"start": 0, "step": 1}})"));
  const Json paged =
      paged_attention_op().default_inputs(problem("paged_attention").dims, Json::object());
  EXPECT_TRUE(paged["block_table"].contains("permutation"));
  const Json moe = moe_experts_op().default_inputs(problem("moe_experts").dims, Json::object());
  EXPECT_EQ(moe["ids"], Json::parse(R"({"topk_ids": {"experts": 4}})"));
  EXPECT_EQ(moe["weights"], Json::parse(R"({"uniform": {"low": 0, "high": 1}})"));
  const Json pe = patch_embed_op().default_inputs(problem("patch_embed").dims, Json{{"patch", 4}});
  EXPECT_EQ(pe["pixels"], Json::parse(R"({"uniform": {"low": -1, "high": 1}})"));
  const Json dq =
      dequantize_op().default_inputs({}, validate_attrs(dequantize_op(), Json::object()));
  EXPECT_EQ(dq["q"], Json::parse(R"({"ints": {"low": -127, "high": 128}})"));
}

TEST(Catalogue, OperandShapes) {
  // Optional operands only when asked for; kIndex operands take index_dtype.
  EXPECT_EQ(operands_of({"linear", {{"T", 3}, {"K", 4}, {"N", 5}}, Json::object(), {}}).size(), 2u);
  const auto lin = operands_of(problem("linear"));
  ASSERT_EQ(lin.size(), 3u);
  EXPECT_EQ(lin[1].shape, (Shape{5, 4}));
  EXPECT_EQ(lin[2].shape, (Shape{5}));
  EXPECT_EQ(operands_of(problem("embedding"), kF32, DType::kI32)[0].dtype, DType::kI32);
  EXPECT_EQ(operands_of(problem("rope"), kF32, DType::kI64)[1].dtype, DType::kI64);
  // Any-shape ops read d0, d1, ... in order.
  EXPECT_EQ(operands_of(problem("add"))[1].shape, (Shape{2, 3, 4}));
  Dims twelve;
  for (int i = 0; i < 12; ++i) twelve[std::string("d").append(std::to_string(i))] = i + 1;
  EXPECT_EQ(util::full_shape(twelve), (Shape{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  // Dv defaults to Dh.
  auto att = operands_of(problem("attention"));
  EXPECT_EQ(att[2].shape, (Shape{5, 2, 6}));
  Problem no_dv = problem("attention");
  no_dv.dims.erase("Dv");
  EXPECT_EQ(operands_of(no_dv)[2].shape, (Shape{5, 2, 8}));
  // paged: n = ceil(S / B) = 2 table entries, NB = n + 2 cache blocks.
  const auto paged = operands_of(problem("paged_attention"));
  EXPECT_EQ(paged[1].shape, (Shape{4, 4, 1, 4}));
  EXPECT_EQ(paged[3].shape, (Shape{2}));
  EXPECT_EQ(paged[3].dtype, DType::kI32);
  // moe_experts: weights f32 and ids i32 whatever the float dtype.
  const auto moe = operands_of(problem("moe_experts"), DType::kBF16);
  EXPECT_EQ(moe[1].dtype, DType::kF32);
  EXPECT_EQ(moe[2].dtype, DType::kI32);
  EXPECT_EQ(moe[5].shape, (Shape{4, 4, 6}));
  // patch_embed takes P from the attr.
  EXPECT_EQ(operands_of(problem("patch_embed"))[1].shape, (Shape{5, 3, 4, 4}));
  // dequantize: q of the attr dtype, scale per granularity.
  const auto dq = operands_of(problem("dequantize"));
  EXPECT_EQ(dq[0].dtype, DType::kF8E4M3);
  EXPECT_EQ(dq[1].shape, (Shape{3, 3}));
  EXPECT_EQ(error_of([] {
              operands_of({"matmul", {{"M", 3}, {"K", 4}}, Json::object(), {}});
            }),
            "op 'matmul': missing dim 'N'");
}

TEST(Catalogue, InferredOutputs) {
  const auto infer = [](const char* op, const std::vector<TensorDesc>& in,
                        const Json& attrs = Json::object()) {
    return infer_outputs(require_op(op), in, validate_attrs(require_op(op), attrs));
  };
  const auto q =
      infer("quantize", {d(kF32, {2, 3, 300})}, {{"granularity", "block"}, {"dtype", "f8_e5m2"}});
  EXPECT_EQ(q[0].dtype, DType::kF8E5M2);
  EXPECT_EQ(q[1].shape, (Shape{2, 3, 3}));
  EXPECT_EQ(q[1].dtype, DType::kF32);
  EXPECT_EQ(infer("quantize", {d(kF32, {2, 3, 300})}, {{"granularity", "channel"}})[1].shape,
            (Shape{2, 3}));
  EXPECT_EQ(infer("quantize", {d(kF32, {2, 3, 300})})[1].shape, (Shape{1}));
  const auto dq = infer("dequantize", {d(DType::kI8, {4, 6}), d(kF32, {4})},
                        {{"granularity", "channel"}, {"out_dtype", "f16"}});
  EXPECT_EQ(dq[0].dtype, DType::kF16);
  EXPECT_EQ(dq[0].shape, (Shape{4, 6}));
  // block2d: a scale per block_rows x block tile, the last ones ragged; 2-D only.
  EXPECT_EQ(infer("quantize", {d(kF32, {300, 200})},
                  {{"granularity", "block2d"}, {"dtype", "f8_e4m3"}})[1]
                .shape,
            (Shape{3, 2}));
  EXPECT_EQ(error_of([&] {
              infer("quantize", {d(kF32, {2, 3, 4})}, {{"granularity", "block2d"}});
            }),
            "op 'quantize': x must be [M, N] (granularity block2d), got 2x3x4 f32");
  // scaled_linear: y[T, N] in x's dtype; w of the attr dtype; w_scale covering w in blocks.
  const TensorDesc x = d(DType::kBF16, {5, 300}), w = d(DType::kF8E4M3, {200, 300});
  const auto y = infer("scaled_linear", {x, w, d(kF32, {2, 3})});
  EXPECT_EQ(y[0].dtype, DType::kBF16);
  EXPECT_EQ(y[0].shape, (Shape{5, 200}));
  EXPECT_EQ(
      error_of([&] {
        infer("scaled_linear", {x, w, d(kF32, {2, 2})});
      }),
      "op 'scaled_linear': w_scale must be [2, 3] (w 200x300 in 128x128 blocks), got 2x2 f32");
  EXPECT_EQ(error_of([&] {
              infer("scaled_linear", {x, d(DType::kF8E5M2, {200, 300}), d(kF32, {2, 3})});
            }),
            "op 'scaled_linear': input 'w' must be f8_e4m3 (attr dtype), got f8_e5m2");
  const auto gate = infer("moe_gate", {d(DType::kBF16, {5, 16})}, {{"top_k", 3}});
  EXPECT_EQ(gate[0].dtype, DType::kF32);
  EXPECT_EQ(gate[1].dtype, DType::kI32);
  EXPECT_EQ(gate[1].shape, (Shape{5, 3}));
  EXPECT_EQ(
      infer("patch_embed", {d(kF32, {3, 8, 12}), d(kF32, {5, 3, 4, 4})}, {{"patch", 4}})[0].shape,
      (Shape{6, 5}));
  EXPECT_EQ(infer("argmax", {d(DType::kF16, {3, 7})})[0].dtype, DType::kI64);
  // rope with M-RoPE: positions [axes, T], the output x's shape.
  EXPECT_EQ(infer("rope", {d(kF32, {3, 2, 8}), d(DType::kI64, {3, 3})},
                  {{"mrope", {{"section", {1, 1, 2}}, {"layout", "chunked"}}}})[0]
                .shape,
            (Shape{3, 2, 8}));
  EXPECT_EQ(
      infer("attention", {d(kF32, {2, 4, 8}), d(kF32, {5, 1, 8}), d(kF32, {5, 1, 3})})[0].shape,
      (Shape{2, 4, 3}));
}

TEST(Catalogue, AttrErrors) {
  EXPECT_EQ(attrs_error("gelu", {{"approximate", "fast"}}),
            "op 'gelu': attr 'approximate' must be one of none|tanh, got \"fast\"");
  EXPECT_EQ(attrs_error("rope", {{"base", 10000}}),
            "op 'rope': unknown attr 'base' (expected theta, style, rotary_dim, scaling, mrope)");
  EXPECT_EQ(attrs_error("rope", {{"style", "llama"}}),
            "op 'rope': attr 'style' must be one of neox|gptj, got \"llama\"");
  EXPECT_EQ(attrs_error("rope", {{"scaling", "yarn"}}),
            "op 'rope': attr 'scaling' must be an object or null, got \"yarn\"");
  EXPECT_EQ(attrs_error("add", {{"alpha", 2}}), "op 'add': unknown attr 'alpha' (it takes none)");
  EXPECT_EQ(attrs_error("attention", {{"causal", "yes"}}),
            "op 'attention': attr 'causal' must be a boolean, got \"yes\"");
  EXPECT_EQ(attrs_error("sample", {{"top_k", 1.5}}),
            "op 'sample': attr 'top_k' must be an integer, got 1.5");
  EXPECT_EQ(attrs_error("patch_embed", Json::object()), "op 'patch_embed': missing attr 'patch'");
  EXPECT_EQ(attrs_error("quantize", {{"dtype", "i4"}}),
            "op 'quantize': attr 'dtype' must be one of i8|f8_e4m3|f8_e5m2, got \"i4\"");
  EXPECT_EQ(
      attrs_error("quantize", {{"granularity", "row"}}),
      "op 'quantize': attr 'granularity' must be one of tensor|channel|block|block2d, got \"row\"");
  EXPECT_EQ(attrs_error("scaled_linear", {{"act_quant", "static"}}),
            "op 'scaled_linear': attr 'act_quant' must be one of none|dynamic, got \"static\"");
  EXPECT_EQ(attrs_error("dequantize", {{"out_dtype", "f64"}}),
            "op 'dequantize': attr 'out_dtype' must be one of f32|bf16|f16, got \"f64\"");
  EXPECT_EQ(attrs_error("moe_gate", {{"scoring", "relu"}}),
            "op 'moe_gate': attr 'scoring' must be one of softmax|sigmoid, got \"relu\"");

  // Defaults.
  const Json rope = validate_attrs(rope_op(), Json::object());
  EXPECT_EQ(rope["theta"].get<double>(), 10000.0);
  EXPECT_EQ(rope["style"], "neox");
  EXPECT_TRUE(rope["rotary_dim"].is_null());
  EXPECT_TRUE(rope["scaling"].is_null());
  const Json att = validate_attrs(attention_op(), Json::object());
  EXPECT_EQ(att["causal"], true);
  EXPECT_TRUE(att["scale"].is_null());
  EXPECT_TRUE(att["q_offset"].is_null());
  EXPECT_EQ(att["sliding_window"], 0);
  const Json gate = validate_attrs(moe_gate_op(), Json::object());
  EXPECT_EQ(gate["top_k"], 2);
  EXPECT_EQ(gate["scoring"], "softmax");
  EXPECT_EQ(gate["normalize"], false);
  EXPECT_EQ(gate["routed_scaling_factor"].get<double>(), 1.0);
  const Json sample = validate_attrs(sample_op(), Json::object());
  EXPECT_EQ(sample["temperature"].get<double>(), 1.0);
  EXPECT_EQ(sample["top_p"].get<double>(), 1.0);
  EXPECT_EQ(sample["top_k"], 0);
  const Json q = validate_attrs(quantize_op(), Json::object());
  EXPECT_EQ(q["dtype"], "i8");
  EXPECT_EQ(q["granularity"], "tensor");
  EXPECT_EQ(q["block"], 128);
  EXPECT_EQ(validate_attrs(dequantize_op(), Json::object())["out_dtype"], "f32");
  EXPECT_EQ(validate_attrs(gelu_op(), Json::object())["approximate"], "none");
}

TEST(Catalogue, ShapeErrors) {
  EXPECT_EQ(infer_error("matmul", {d(kF32, {2, 3}), d(kF32, {4, 5})}),
            "op 'matmul': b must be [K, N] with K = 3, got 4x5 f32");
  EXPECT_EQ(infer_error("matmul", {d(kF32, {2, 3, 1}), d(kF32, {3, 5})}),
            "op 'matmul': a must be [M, K], got 2x3x1 f32");
  EXPECT_EQ(infer_error("linear", {d(kF32, {2, 4}), d(kF32, {5, 3})}),
            "op 'linear': w must be [N, K] with K = 4, got 5x3 f32");
  EXPECT_EQ(infer_error("linear", {d(kF32, {2, 4}), d(kF32, {5, 4}), d(kF32, {4})}),
            "op 'linear': bias must be [N] = [5], got 4 f32");
  EXPECT_EQ(infer_error("embedding", {d(DType::kI32, {2, 3}), d(kF32, {10, 4})}),
            "op 'embedding': ids must be [T], got 2x3 i32");
  EXPECT_EQ(infer_error("embedding", {d(kF32, {3}), d(kF32, {10, 4})}),
            "op 'embedding': input 'ids' must be i32 or i64, got f32");
  EXPECT_EQ(infer_error("add", {d(kF32, {2, 3}), d(kF32, {3, 2})}),
            "op 'add': b must be the shape of a, 2x3, got 3x2 f32");
  EXPECT_EQ(infer_error("mul", {d(kF32, {2, 3}), d(DType::kBF16, {2, 3})}),
            "op 'mul': input 'b' is bf16 but the other float inputs are f32");
  EXPECT_EQ(infer_error("swiglu", {d(kF32, {6}), d(kF32, {6})}),
            "op 'swiglu': gate must be [T, F], got 6 f32");
  EXPECT_EQ(infer_error("swiglu", {d(kF32, {2, 6}), d(kF32, {2, 5})}),
            "op 'swiglu': up must be the shape of gate, 2x6, got 2x5 f32");
  EXPECT_EQ(infer_error("softmax", {d(kF32, {})}),
            "op 'softmax': x must be [..., N], got scalar f32");

  const TensorDesc x = d(kF32, {3, 2, 8});
  EXPECT_EQ(infer_error("rope", {x, d(DType::kI64, {4})}),
            "op 'rope': positions must be [T] = [3], got 4 i64");
  EXPECT_EQ(infer_error("rope", {x, d(DType::kI64, {3})}, {{"rotary_dim", 5}}),
            "op 'rope': attr 'rotary_dim' must be even and in [2, Dh = 8], got 5");
  EXPECT_EQ(infer_error("rope", {x, d(DType::kI64, {3})}, {{"rotary_dim", 10}}),
            "op 'rope': attr 'rotary_dim' must be even and in [2, Dh = 8], got 10");
  EXPECT_EQ(infer_error("rope", {d(kF32, {3, 2, 7}), d(DType::kI64, {3})}),
            "op 'rope': attr 'rotary_dim' must be even and in [2, Dh = 7], got 7");
  EXPECT_EQ(infer_error("rope", {x, d(DType::kI64, {3})}, {{"theta", 0}}),
            "op 'rope': attr 'theta' must be positive, got 0.0");
  // M-RoPE: positions [axes, T], sections summing to rd / 2.
  const Json chunked = {{"section", {1, 1, 2}}, {"layout", "chunked"}};
  EXPECT_EQ(infer_error("rope", {x, d(DType::kI64, {3})}, {{"mrope", chunked}}),
            "op 'rope': positions must be [axes, T] = [3, 3], got 3 i64");
  EXPECT_EQ(infer_error("rope", {x, d(DType::kI64, {3, 3})},
                        {{"mrope", {{"section", {1, 1, 1}}, {"layout", "chunked"}}}}),
            "op 'rope': attr 'mrope' sections sum to 3 pairs, not rd / 2 = 4");
  EXPECT_EQ(infer_error("rope", {x, d(DType::kI64, {3, 3})},
                        {{"mrope", {{"section", {1, 1, 2}}, {"layout", "zigzag"}}}}),
            "op 'rope': attr 'mrope' key 'layout' must be chunked, interleaved or per_axis");
  EXPECT_EQ(infer_error("rope", {x, d(DType::kI64, {2, 3})},
                        {{"mrope", {{"section", {2, 2}}, {"layout", "per_axis"}}},
                         {"scaling", {{"rope_type", "linear"}, {"factor", 2.0}}}}),
            "op 'rope': attr 'mrope' layout per_axis takes no 'scaling'");

  const TensorDesc q = d(kF32, {1, 3, 8});
  EXPECT_EQ(infer_error("attention", {q, d(kF32, {5, 2, 8}), d(kF32, {5, 2, 8})}),
            "op 'attention': q must be [T, Hq, Dh] with Hq a multiple of Hkv = 2, got 1x3x8 f32");
  EXPECT_EQ(infer_error("attention", {q, d(kF32, {5, 1, 4}), d(kF32, {5, 1, 4})}),
            "op 'attention': k must be [S, Hkv, Dh] with Dh = 8, got 5x1x4 f32");
  EXPECT_EQ(infer_error("attention", {q, d(kF32, {5, 1, 8}), d(kF32, {4, 1, 8})}),
            "op 'attention': v must be [S, Hkv, Dv] with S = 5, Hkv = 1, got 4x1x8 f32");
  EXPECT_EQ(infer_error("attention", {q, d(kF32, {5, 1, 8}), d(kF32, {5, 1, 8})},
                        {{"sliding_window", -1}}),
            "op 'attention': attr 'sliding_window' must be >= 0, got -1");

  const TensorDesc cache = d(kF32, {4, 4, 1, 8});
  EXPECT_EQ(
      infer_error("paged_attention", {q, cache, cache, d(DType::kI32, {2})}, {{"context_len", 9}}),
      "op 'paged_attention': attr 'context_len' must be in [0, n * B = 8], got 9");
  EXPECT_EQ(infer_error("paged_attention", {q, cache, d(kF32, {4, 2, 1, 8}), d(DType::kI32, {2})}),
            "op 'paged_attention': v_cache must be [NB, B, Hkv, Dv] with NB = 4, B = 4, Hkv = 1, "
            "got 4x2x1x8 f32");
  EXPECT_EQ(infer_error("paged_attention", {q, cache, cache, d(DType::kI64, {2})}),
            "op 'paged_attention': input 'block_table' must be i32, got i64");

  const TensorDesc logits = d(kF32, {3, 8});
  EXPECT_EQ(
      infer_error("moe_gate", {logits}, {{"top_k", 9}}),
      "op 'moe_gate': attr 'top_k' must be in [1, 8] (the experts of topk_group groups), got 9");
  EXPECT_EQ(infer_error("moe_gate", {logits}, {{"n_group", 3}}),
            "op 'moe_gate': attr 'n_group' must divide E = 8, got 3");
  EXPECT_EQ(infer_error("moe_gate", {logits}, {{"n_group", 4}, {"topk_group", 5}}),
            "op 'moe_gate': attr 'topk_group' must be in [1, n_group = 4], got 5");
  EXPECT_EQ(
      infer_error("moe_gate", {logits}, {{"n_group", 4}, {"topk_group", 1}, {"top_k", 3}}),
      "op 'moe_gate': attr 'top_k' must be in [1, 2] (the experts of topk_group groups), got 3");
  EXPECT_EQ(infer_error("moe_gate", {logits, d(kF32, {7})}),
            "op 'moe_gate': bias must be [E] = [8], got 7 f32");

  const TensorDesc w = d(kF32, {4, 6, 5});
  EXPECT_EQ(infer_error("moe_experts", {d(kF32, {3, 5}), d(kF32, {3, 2}), d(DType::kI32, {3, 2}), w,
                                        w, d(kF32, {4, 6, 5})}),
            "op 'moe_experts': w_down must be [E, D, F] = 4x5x6, got 4x6x5 f32");
  EXPECT_EQ(infer_error("moe_experts", {d(kF32, {3, 5}), d(kF32, {3, 2}), d(DType::kI32, {3, 1}), w,
                                        w, d(kF32, {4, 5, 6})}),
            "op 'moe_experts': ids must be [T, k] = 3x2, got 3x1 i32");

  EXPECT_EQ(
      infer_error("patch_embed", {d(kF32, {3, 10, 8}), d(kF32, {5, 3, 4, 4})}, {{"patch", 4}}),
      "op 'patch_embed': pixels must be [C, Hi, Wi] with Hi and Wi multiples of patch 4, got "
      "3x10x8 f32");
  EXPECT_EQ(infer_error("patch_embed", {d(kF32, {3, 8, 8}), d(kF32, {5, 1, 4, 4})}, {{"patch", 4}}),
            "op 'patch_embed': w must be [D, C, P, P] with C = 3, P = 4, got 5x1x4x4 f32");
  EXPECT_EQ(infer_error("patch_embed", {d(kF32, {3, 8, 8}), d(kF32, {5, 3, 4, 4})}, {{"patch", 0}}),
            "op 'patch_embed': attr 'patch' must be positive, got 0");

  EXPECT_EQ(infer_error("quantize", {d(kF32, {4, 8})}, {{"block", 0}}),
            "op 'quantize': attr 'block' must be positive, got 0");
  EXPECT_EQ(infer_error("dequantize", {d(DType::kI8, {3, 10}), d(kF32, {3, 2})},
                        {{"granularity", "block"}, {"block", 4}}),
            "op 'dequantize': scale must be [3, 3] (granularity block), got 3x2 f32");
  EXPECT_EQ(
      infer_error("dequantize", {d(DType::kI8, {3, 10}), d(kF32, {1})}, {{"dtype", "f8_e4m3"}}),
      "op 'dequantize': input 'q' must be f8_e4m3 (attr dtype), got i8");

  EXPECT_EQ(infer_error("argmax", {d(kF32, {2, 0})}),
            "op 'argmax': x must be [T, V] with V >= 1, got 2x0 f32");
  EXPECT_EQ(infer_error("sample", {d(kF32, {2, 5})}, {{"top_p", 0.0}}),
            "op 'sample': attr 'top_p' must be in (0, 1], got 0.0");
  EXPECT_EQ(infer_error("sample", {d(kF32, {2, 5})}, {{"top_k", -1}}),
            "op 'sample': attr 'top_k' must be >= 0 (0 = off), got -1");
  EXPECT_EQ(infer_error("sample", {d(kF32, {2, 5})}, {{"seed", -3}}),
            "op 'sample': attr 'seed' must be >= 0, got -3");
}

TEST(Catalogue, RopeScalingErrors) {
  const std::vector<TensorDesc> in = {d(kF32, {3, 2, 8}), d(DType::kI64, {3})};
  const auto err = [&](const char* scaling) {
    return infer_error("rope", in, {{"scaling", Json::parse(scaling)}});
  };
  EXPECT_EQ(err(R"({"rope_type": "dynamic", "factor": 2})"),
            "op 'rope': attr 'scaling' has unknown rope_type 'dynamic' (expected default, linear, "
            "llama3 or yarn)");
  EXPECT_EQ(err(R"({"factor": 2})"),
            "op 'rope': attr 'scaling' needs key 'rope_type' (or legacy 'type')");
  EXPECT_EQ(err(R"({"type": "linear"})"),
            "op 'rope': attr 'scaling' (rope_type 'linear') needs key 'factor'");
  EXPECT_EQ(err(R"({"type": "linear", "factor": "2"})"),
            "op 'rope': attr 'scaling' key 'factor' must be a number, got \"2\"");
  EXPECT_EQ(
      err(R"({"rope_type": "yarn", "factor": 4})"),
      "op 'rope': attr 'scaling' (rope_type 'yarn') needs key 'original_max_position_embeddings'");
  EXPECT_EQ(
      err(R"({"rope_type": "llama3", "factor": 8, "high_freq_factor": 4, "original_max_position_embeddings": 8192})"),
      "op 'rope': attr 'scaling' (rope_type 'llama3') needs key 'low_freq_factor'");
  EXPECT_EQ(
      err(R"({"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 64, "truncate": 1})"),
      "op 'rope': attr 'scaling' key 'truncate' must be a boolean, got 1");
  EXPECT_EQ(err(R"({"rope_type": 3})"),
            "op 'rope': attr 'scaling' key 'rope_type' must be a string, got 3");
  EXPECT_EQ(err(R"({"rope_type": "default"})"), "no error");
  EXPECT_EQ(err(R"({"type": "linear", "factor": 2, "rope_type": "linear"})"), "no error");
}

TEST(Catalogue, DataErrorsAreInputErrors) {
  const Tensor table = make(kF32, {10, 2}, std::vector<double>(20, 1.0));
  EXPECT_EQ(error_of([&] {
              run("embedding", {make(DType::kI64, {3}, {1, 12, 3}), table});
            }),
            "op 'embedding': id 12 at position 1 is outside [0, 10)");
  EXPECT_EQ(error_of([&] {
              run("embedding", {make(DType::kI32, {2}, {0, -1}), table});
            }),
            "op 'embedding': id -1 at position 1 is outside [0, 10)");

  const Tensor q = make(kF32, {1, 1, 2}, {1, 0});
  const Tensor cache = Tensor::zeros(kF32, {4, 2, 1, 2});
  EXPECT_EQ(error_of([&] {
              run("paged_attention", {q, cache, cache, make(DType::kI32, {2}, {3, 9})});
            }),
            "op 'paged_attention': block_table entry 9 at position 1 is outside [0, 4)");
  // Entries past context_len are never read.
  EXPECT_EQ(error_of([&] {
              run("paged_attention", {q, cache, cache, make(DType::kI32, {2}, {3, 9})},
                  {{"context_len", 2}});
            }),
            "no error");

  const Tensor w = Tensor::zeros(kF32, {4, 3, 2});
  EXPECT_EQ(error_of([&] {
              run("moe_experts",
                  {Tensor::zeros(kF32, {2, 2}), Tensor::zeros(kF32, {2, 1}),
                   make(DType::kI32, {2, 1}, {0, 5}), w, w, Tensor::zeros(kF32, {4, 2, 3})});
            }),
            "op 'moe_experts': id 5 at position [1, 0] is outside [0, 4)");

  const double nan = std::nan("");
  EXPECT_EQ(error_of([&] {
              run("sample", {make(kF32, {1, 3}, {0, nan, 1})});
            }),
            "op 'sample': logit 1 of row 0 is NaN");
}

TEST(Catalogue, Costs) {
  const Cost mm = cost_of(problem("matmul"));
  EXPECT_EQ(mm.flops, 2.0 * 3 * 4 * 5);
  EXPECT_EQ(mm.bytes, 4.0 * (12 + 20 + 15));
  EXPECT_EQ(mm.reduction, 4);

  const Cost lin = cost_of(problem("linear"));  // with bias
  EXPECT_EQ(lin.flops, 2.0 * 3 * 4 * 5 + 3 * 5);
  EXPECT_EQ(lin.bytes, 4.0 * (12 + 20 + 5 + 15));
  EXPECT_EQ(lin.reduction, 4);
  EXPECT_EQ(cost_of({"linear", {{"T", 3}, {"K", 4}, {"N", 5}}, Json::object(), {}}).flops,
            2.0 * 3 * 4 * 5);

  const Cost att = cost_of(problem("attention"));  // T 3, S 5, Hq 4, Dh 8, Dv 6
  EXPECT_EQ(att.flops, 2.0 * 3 * 5 * 4 * (8 + 6) + 5.0 * 3 * 5 * 4);
  EXPECT_EQ(att.reduction, 5);
  EXPECT_EQ(att.bytes, 4.0 * (3 * 4 * 8 + 5 * 2 * 8 + 5 * 2 * 6 + 3 * 4 * 6));
  const Cost paged = cost_of(problem("paged_attention"));  // context_len 7
  EXPECT_EQ(paged.reduction, 7);
  EXPECT_EQ(paged.flops, 2.0 * 2 * 7 * 2 * 8 + 5.0 * 2 * 7 * 2);

  const Cost sm = cost_of(problem("softmax"));
  EXPECT_EQ(sm.reduction, 5);
  EXPECT_EQ(sm.flops, 5.0 * 10);

  const Cost add = cost_of(problem("add"));
  EXPECT_EQ(add.flops, 24);
  EXPECT_EQ(add.bytes, 4.0 * 24 * 3);
  EXPECT_EQ(add.reduction, 1);
  EXPECT_EQ(cost_of(problem("gelu")).flops, 8.0 * 6);  // tanh form
  EXPECT_EQ(cost_of({"gelu", {{"d0", 6}}, Json::object(), {}}).flops, 5.0 * 6);
  EXPECT_EQ(cost_of(problem("swiglu")).reduction, 1);

  const Cost moe = cost_of(problem("moe_experts"));  // T 3, D 4, F 6, k 2
  EXPECT_EQ(moe.reduction, 6);
  EXPECT_EQ(moe.flops, 3.0 * 2 * (6 * 6 * 4 + 5 * 6 + 2 * 4));

  const Cost pe = cost_of(problem("patch_embed"));  // 6 patches, D 5, C·P·P = 48, with b
  EXPECT_EQ(pe.reduction, 48);
  EXPECT_EQ(pe.flops, 2.0 * 30 * 48 + 30);

  // embedding reads the gathered rows, not the table.
  const Cost emb = cost_of(problem("embedding"));  // T 3, D 4, ids i64
  EXPECT_EQ(emb.bytes, 8.0 * 3 + 2 * 4.0 * 3 * 4);
  EXPECT_EQ(emb.flops, 0);

  EXPECT_EQ(cost_of(problem("rope")).flops, 3.0 * 3 * 2 * 4);  // rotary_dim 4
  EXPECT_EQ(cost_of(problem("moe_gate")).reduction, 8);

  for (const Problem& p : problems()) {
    const Cost c = cost_of(p);
    EXPECT_GE(c.flops, 0) << p.op;
    EXPECT_GT(c.bytes, 0) << p.op;
    EXPECT_GE(c.reduction, 1) << p.op;
  }
}

}  // namespace
}  // namespace h0::ops
