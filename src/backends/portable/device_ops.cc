// The op table, operand checks and the attr helpers of the portable ops.
#include "device_ops.h"

#include <cstring>
#include <limits>

#include "op_call.h"

namespace h0p {
namespace {

struct OpEntry {
  const char* op;
  OpFn fn;
  int min_inputs, max_inputs, outputs;
  int dtype_operand;  // the input whose dtype is the call's dtype
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
};

const OpEntry* find_op(const char* op) {
  if (op == nullptr) return nullptr;
  for (const OpEntry& e : kOps) {
    if (std::strcmp(e.op, op) == 0) return &e;
  }
  return nullptr;
}

const char* dtype_name(hb_dtype d) {
  static const char* kNames[] = {"f64", "f32", "f16", "bf16", "f8_e4m3", "f8_e5m2",
                                 "i64", "i32", "i8",  "u8",   "bool"};
  const int i = static_cast<int>(d);
  return i >= 0 && i <= HB_BOOL ? kNames[i] : "(invalid dtype)";
}

size_t elem_size(hb_dtype d) {
  switch (d) {
    case HB_F64:
    case HB_I64:
      return 8;
    case HB_F32:
    case HB_I32:
      return 4;
    case HB_F16:
    case HB_BF16:
      return 2;
    case HB_F8_E4M3:
    case HB_F8_E5M2:
    case HB_I8:
    case HB_U8:
    case HB_BOOL:
      return 1;
  }
  return 0;
}

bool is_kernel_float(hb_dtype d) { return d == HB_F32 || d == HB_F16 || d == HB_BF16; }

// Counts, ranks, non-null data and the call's dtype.
void check_call(const OpEntry& e, const Call& call, const Device& dev) {
  const std::string op = e.op;
  if (call.n_in < e.min_inputs || call.n_in > e.max_inputs || (call.n_in > 0 && call.in == nullptr))
    throw OpError(HB_INVALID_ARGUMENT, op + ": takes " + std::to_string(e.min_inputs) + " to " +
                                           std::to_string(e.max_inputs) + " inputs, got " +
                                           std::to_string(call.n_in));
  if (call.n_out != e.outputs || call.out == nullptr)
    throw OpError(HB_INVALID_ARGUMENT, op + ": takes " + std::to_string(e.outputs) +
                                           " outputs, got " + std::to_string(call.n_out));
  for (int i = 0; i < call.n_in + call.n_out; ++i) {
    const hb_tensor& t = i < call.n_in ? call.in[i] : call.out[i - call.n_in];
    bool ok = t.ndim >= 0 && t.ndim <= HB_MAX_DIMS && elem_size(t.dtype) > 0;
    for (int d = 0; ok && d < t.ndim; ++d) ok = t.shape[d] >= 0;
    if (!ok || (t.data == nullptr && numel(t) > 0))
      throw OpError(HB_INVALID_ARGUMENT, op + ": operand " + std::to_string(i) +
                                             " has a bad rank, shape, dtype or no data");
  }
  const hb_dtype dtype = call.in[e.dtype_operand].dtype;
  if (!is_kernel_float(dtype) || !dev.has_dtype(dtype))
    throw OpError(HB_UNSUPPORTED, op + ": no kernels for " + dtype_name(dtype) + " on this device");
}

const Json* find_attr(const Json& a, const char* name) {
  if (!a.is_object()) return nullptr;
  const auto it = a.find(name);
  return it == a.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

int32_t device_supports(const Device& device, const char* op, hb_dtype dtype) {
  return find_op(op) != nullptr && is_kernel_float(dtype) && device.has_dtype(dtype) ? 1 : 0;
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
  const Call call{e->op, inputs, n_inputs, outputs, n_outputs, attrs, device};
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

// --- checks ---------------------------------------------------------------------------------

void require(const Call& call, bool ok, const std::string& message) {
  if (!ok) throw OpError(HB_INVALID_ARGUMENT, std::string(call.op) + ": " + message);
}

std::string describe(const hb_tensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.ndim && i < HB_MAX_DIMS; ++i)
    s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "] " + dtype_name(t.dtype);
}

int64_t numel(const hb_tensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim && i < HB_MAX_DIMS; ++i) n *= t.shape[i];
  return n;
}

void require_tensor(const Call& call, const hb_tensor& t, const char* name,
                    std::initializer_list<int64_t> dims, hb_dtype dtype) {
  bool ok = t.ndim == static_cast<int>(dims.size()) && t.dtype == dtype;
  int i = 0;
  for (int64_t d : dims) {
    ok = ok && (d < 0 || t.shape[i] == d);
    ++i;
  }
  if (!ok) {
    std::string want = "[";
    i = 0;
    for (int64_t d : dims)
      want += (i++ ? ", " : "") + (d < 0 ? std::string("*") : std::to_string(d));
    require(
        call, false,
        std::string(name) + " must be " + want + "] " + dtype_name(dtype) + ", got " + describe(t));
  }
  as_int(call, numel(t));
}

void require_like(const Call& call, const hb_tensor& t, const char* name, const hb_tensor& like) {
  bool ok = t.ndim == like.ndim && t.dtype == like.dtype;
  for (int i = 0; ok && i < t.ndim; ++i) ok = t.shape[i] == like.shape[i];
  if (!ok)
    require(call, false, std::string(name) + " must be " + describe(like) + ", got " + describe(t));
  as_int(call, numel(t));
}

void require_index(const Call& call, const hb_tensor& t, const char* name,
                   std::initializer_list<int64_t> dims) {
  if (t.dtype != HB_I32 && t.dtype != HB_I64)
    require(call, false, std::string(name) + " must be i32 or i64, got " + describe(t));
  require_tensor(call, t, name, dims, t.dtype);
}

int as_int(const Call& call, int64_t v) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw OpError(HB_UNSUPPORTED, std::string(call.op) + ": size " + std::to_string(v) +
                                      " exceeds the kernels' 32-bit indexing");
  return static_cast<int>(v);
}

PagedContext paged_context(const Call& call, const hb_tensor& cache, const hb_tensor& table,
                           int64_t t) {
  const int64_t nb = cache.shape[0], bsz = cache.shape[1];
  require(call, bsz > 0, "k_cache must have a positive block size, got " + describe(cache));
  require_tensor(call, table, "block_table", {-1}, HB_I32);
  const int64_t capacity = table.shape[0] * bsz;
  PagedContext p{};
  p.len = attr_null(call.attrs, "context_len") ? capacity : attr_i(call.attrs, "context_len", 0);
  require(call, p.len >= 0 && p.len <= capacity,
          "attr context_len must be in [0, " + std::to_string(capacity) +
              "] (block_table entries x block size), got " + std::to_string(p.len));
  p.q_offset = attr_null(call.attrs, "q_offset") ? p.len - t : attr_i(call.attrs, "q_offset", 0);
  p.causal = attr_b(call.attrs, "causal", true);
  p.bsz = as_int(call, bsz);
  const std::vector<int64_t> blocks = read_indices(call, table);
  for (int64_t i = 0; i * bsz < p.len; ++i) {
    require(call, blocks[i] >= 0 && blocks[i] < nb,
            "block_table[" + std::to_string(i) + "] = " + std::to_string(blocks[i]) +
                " is outside the cache's " + std::to_string(nb) + " blocks");
  }
  return p;
}

std::vector<int64_t> read_indices(const Call& call, const hb_tensor& t) {
  const size_t n = static_cast<size_t>(numel(t));
  std::vector<int64_t> out(n);
  if (n == 0) return out;
  if (t.dtype == HB_I64) {
    call.dev.read(out.data(), t.data, n * sizeof(int64_t));
  } else {
    std::vector<int32_t> narrow(n);
    call.dev.read(narrow.data(), t.data, n * sizeof(int32_t));
    for (size_t i = 0; i < n; ++i) out[i] = narrow[i];
  }
  return out;
}

// --- attrs ----------------------------------------------------------------------------------

double attr_f(const Json& a, const char* name, double fallback) {
  const Json* v = find_attr(a, name);
  return v != nullptr ? v->get<double>() : fallback;
}
int64_t attr_i(const Json& a, const char* name, int64_t fallback) {
  const Json* v = find_attr(a, name);
  return v != nullptr ? v->get<int64_t>() : fallback;
}
bool attr_b(const Json& a, const char* name, bool fallback) {
  const Json* v = find_attr(a, name);
  return v != nullptr ? v->get<bool>() : fallback;
}
std::string attr_s(const Json& a, const char* name, const std::string& fallback) {
  const Json* v = find_attr(a, name);
  return v != nullptr ? v->get<std::string>() : fallback;
}
bool attr_null(const Json& a, const char* name) { return find_attr(a, name) == nullptr; }

}  // namespace h0p
