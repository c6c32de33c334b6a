// The op table of the portable ops and run_op: the call-level checks, then the op.
#include "device_ops.h"

#include <cstring>

#include "op_call.h"

namespace h0p {
namespace {

struct OpEntry {
  const char* op;
  OpFn fn;
  int min_inputs, max_inputs, outputs;
  int dtype_operand;      // the input whose dtype is the call's dtype; -1: output 0's
  bool f32_only = false;  // kernels for f32 calls only (the harness decomposes the others)
};

// The ops with kernels, as the catalogue names them. Absent: sample, quantize, dequantize.
constexpr OpEntry kOps[] = {
    {"matmul", matmul_op, 2, 2, 1, 0},
    {"linear", linear_op, 2, 3, 1, 0},
    {"embedding", embedding_op, 2, 2, 1, 1},
    {"add", add_op, 2, 2, 1, 0},
    {"mul", mul_op, 2, 2, 1, 0},
    {"rmsnorm", rmsnorm_op, 2, 2, 1, 0},
    {"layernorm", layernorm_op, 3, 3, 1, 0},
    {"rope", rope_op, 2, 2, 1, 0},
    {"softmax", softmax_op, 1, 1, 1, 0},
    {"silu", silu_op, 1, 1, 1, 0},
    {"sigmoid", sigmoid_op, 1, 1, 1, 0},
    {"gelu", gelu_op, 1, 1, 1, 0},
    {"swiglu", swiglu_op, 2, 2, 1, 0},
    {"attention", attention_op, 3, 3, 1, 0},
    {"paged_attention", paged_attention_op, 4, 5, 1, 0},
    {"moe_gate", moe_gate_op, 1, 2, 2, 0},
    {"moe_experts", moe_experts_op, 6, 9, 1, 0},
    {"patch_embed", patch_embed_op, 2, 3, 1, 0},
    {"argmax", argmax_op, 1, 1, 1, 0},
    {"rmsnorm_gated", rmsnorm_gated_op, 3, 3, 1, 0},
    {"gdn_gating", gdn_gating_op, 4, 4, 2, 0},
    {"causal_conv1d", causal_conv1d_op, 3, 4, 2, 0},
    {"gated_delta_rule", gated_delta_rule_op, 6, 6, 2, 0},
    {"lightning_indexer", lightning_indexer_op, 4, 4, 1, 0},
    {"sparse_attention", sparse_attention_op, 5, 5, 1, 0},
    {"scaled_linear", scaled_linear_op, 3, 4, 1, 0, true},
    {"dequantize_mxfp4", dequantize_mxfp4_op, 2, 2, 1, -1},
};

const OpEntry* find_op(const char* op) {
  if (op == nullptr) return nullptr;
  for (const OpEntry& e : kOps) {
    if (std::strcmp(e.op, op) == 0) return &e;
  }
  return nullptr;
}

// Whether `e` has kernels for calls in `dtype` on `dev`.
bool runs(const OpEntry& e, const Device& dev, hb_dtype dtype) {
  return is_float(dtype) && dev.has_dtype(dtype) && (!e.f32_only || dtype == HB_F32);
}

// The counts, the operands and the call's dtype.
void check_call(const OpEntry& e, const Call& call, const Device& dev) {
  require_operands(call, e.min_inputs, e.max_inputs, e.outputs);
  const hb_dtype dtype = e.dtype_operand < 0 ? call.out[0].dtype : call.in[e.dtype_operand].dtype;
  if (!runs(e, dev, dtype))
    unsupported(call, std::string("no kernels for ") + dtype_name(dtype) + " on this device");
}

}  // namespace

int32_t device_supports(const Device& device, const char* op, hb_dtype dtype) {
  const OpEntry* e = find_op(op);
  return e != nullptr && runs(*e, device, dtype) ? 1 : 0;
}

void run_device_op(Device& device, const char* op, const hb_tensor* inputs, int32_t n_inputs,
                   hb_tensor* outputs, int32_t n_outputs, const char* attrs_json) {
  const OpEntry* e = find_op(op);
  if (e == nullptr)
    throw OpError(HB_UNSUPPORTED, std::string("no kernels for op '") + (op ? op : "(null)") + "'");
  Json attrs;
  try {
    attrs = attrs_json == nullptr || *attrs_json == '\0' ? Json::object() : Json::parse(attrs_json);
  } catch (const Json::exception& ex) {
    throw OpError(HB_INVALID_ARGUMENT, std::string(op) + ": attrs are not JSON: " + ex.what());
  }
  if (attrs.is_null()) attrs = Json::object();
  const Call call{{e->op, inputs, n_inputs, outputs, n_outputs, attrs, device, true}, device};
  check_call(*e, call, device);
  try {
    e->fn(call);
  } catch (const Json::exception& ex) {
    throw OpError(HB_INVALID_ARGUMENT, std::string(op) + ": bad attrs: " + ex.what());
  }
}

void Device::gemm(hb_dtype dtype, const void* a, const void* b, const void* bias, void* c, int m,
                  int n, int k, bool b_trans) {
  constexpr size_t kTile = 16;  // TS in kernels/gemm.inc
  const Grid grid{
      {(static_cast<size_t>(n) + kTile - 1) / kTile, (static_cast<size_t>(m) + kTile - 1) / kTile},
      {kTile, kTile}};
  const int trans = b_trans ? 1 : 0, has_bias = bias != nullptr ? 1 : 0;
  launch("gemm_tiled", dtype, grid,
         {buffer(a), buffer(b), buffer(bias), buffer(c), i32(m), i32(n), i32(k), i32(trans),
          i32(has_bias)});
}

}  // namespace h0p
