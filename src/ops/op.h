// The operator catalogue: one OpDef per operator of DESIGN.md's table, with exactly that
// operand order and those attrs. Names, operand order and attrs are part of the plugin ABI.
// Everything else that knows about a particular op (shape rules, costs, reference kernels,
// default input distributions) hangs off this table; nothing else in the harness switches on
// an op name.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/tensor.h"

namespace h0::ops {

using Json = nlohmann::json;
using tensor::DType;
using tensor::Shape;
using tensor::Tensor;

// What dtypes an operand may have.
enum class OperandKind {
  kFloat,   // the op's floating dtype; all kFloat operands of a call share it
  kIndex,   // integer ids or positions: i32 or i64
  kF32,     // always f32 (moe_gate weights, quantize scales)
  kI32,     // always i32 (moe_gate ids, block_table)
  kI64,     // always i64 (argmax, sample)
  kQuant,   // the quantized dtype named by attr `dtype`: i8, f8_e4m3 or f8_e5m2
  kU8,      // always u8 (dequantize_mxfp4's packed values and E8M0 scales)
  kStored,  // a weight as its checkpoint stores it: the float dtype named by attr `dtype`
            // (bf16, f16 or f32), not necessarily the op's (linear_widen's w)
};

struct OperandSpec {
  const char* name;
  OperandKind kind;
  bool optional = false;  // optional operands come last and are absent when not passed
};

enum class AttrType { kBool, kInt, kFloat, kString, kObject };

struct AttrSpec {
  const char* name;
  AttrType type;
  const char* default_json;  // JSON text of the default; nullptr = required
  const char* choices;       // kString: "neox|gptj"; nullptr = any
  const char* doc;
};

// An operand's dtype and shape. `present` is false for an absent optional operand.
struct TensorDesc {
  DType dtype = DType::kF32;
  Shape shape;
  bool present = true;
};

// Work of one call, for profiles and rooflines. `reduction` is the longest accumulation
// (K of a matmul, D of a norm, S of attention); tolerances scale with it.
struct Cost {
  double flops = 0;
  double bytes = 0;  // minimal traffic: every input read once, every output written once
  double reduction = 1;
};

// How results of an op are judged against the golden (see checks/op_tolerance.h).
enum class ToleranceClass {
  kExact,           // integer results: identical
  kElementwise,     // one rounding per element: the dtype preset
  kTranscendental,  // exp/cos/erf inside: a few ulps
  kReduction,       // long sums (matmul, norms, softmax, attention): scales with Cost::reduction
};

// Named problem sizes of a suite case, e.g. {T: 7, D: 4096}.
using Dims = std::map<std::string, int64_t>;

struct OpDef {
  const char* name;
  std::vector<OperandSpec> inputs;
  std::vector<OperandSpec> outputs;
  std::vector<AttrSpec> attrs;
  // The problem dims a suite's `shape: [...]` lists, in order (e.g. {"T", "D"}); a dim may
  // also be given by name in `dims: {...}`. Dims with a default may be left out.
  std::vector<const char*> dims;
  std::map<std::string, int64_t> dim_defaults;
  ToleranceClass tolerance;

  // The input descs of a problem. `dtype` is the float dtype, `index_dtype` the dtype of kIndex
  // operands, `with` the optional operands to include. Throws InputError on a missing dim.
  std::vector<TensorDesc> (*operands)(const Dims& dims, const Json& attrs, DType dtype,
                                      DType index_dtype, const std::set<std::string>& with);
  // Output descs from the input descs: one desc per declared input, absent optionals with
  // present = false; dtypes are already checked against the operand kinds (infer_outputs).
  // Throws InputError naming the operand whose shape does not fit.
  std::vector<TensorDesc> (*infer)(const std::vector<TensorDesc>& inputs, const Json& attrs);
  Cost (*cost)(const std::vector<TensorDesc>& inputs, const std::vector<TensorDesc>& outputs,
               const Json& attrs);
  // The plain reference kernel: host tensors, f64 accumulation, results rounded once to the
  // output dtype. inputs[i] is nullptr for an absent optional operand; outputs are allocated
  // with the inferred descs. Attrs are validated and defaulted.
  void (*reference)(const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                    const Json& attrs);
  // Default input distributions for a problem: {operand name: distribution}, see
  // checks/input_synth.h for the distribution language.
  Json (*default_inputs)(const Dims& dims, const Json& attrs);
  // An op whose output 0 is a top-k selection of ids by a float score (lightning_indexer): the
  // f64 score of every id listed in `ids` (its shape), NaN for -1 and for an id that may not be
  // selected. With it the op check accepts an id other than the golden's where the two scores
  // are a near-tie within the reduction tolerance — never an exact tie, whose order the op fixes.
  std::vector<double> (*selection_scores)(const std::vector<const Tensor*>& inputs,
                                          const Tensor& ids, const Json& attrs) = nullptr;
};

// The whole catalogue, in DESIGN.md's order.
const std::vector<const OpDef*>& all_ops();
// nullptr if there is no such op.
const OpDef* find_op(std::string_view name);
// Throws InputError("op 'x'", "unknown op (expected one of ...)").
const OpDef& require_op(std::string_view name);

// Checks attrs against the op's schema and fills in defaults. Throws InputError naming the op
// and the attr: unknown attr (listing the known ones), wrong type, value not among choices,
// missing required attr.
Json validate_attrs(const OpDef& op, const Json& attrs);

// Output descs for actual inputs, after checking the count and dtypes of the inputs against
// the operand specs. Throws InputError naming the op and the operand.
std::vector<TensorDesc> infer_outputs(const OpDef& op, const std::vector<TensorDesc>& inputs,
                                      const Json& attrs);

}  // namespace h0::ops
