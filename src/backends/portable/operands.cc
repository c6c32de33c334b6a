#include "operands.h"

#include <cmath>
#include <limits>

namespace h0p {
namespace {

std::string dims_str(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  for (auto it = dims.begin(); it != dims.end(); ++it)
    s += (it == dims.begin() ? "" : ", ") + (*it < 0 ? std::string("*") : std::to_string(*it));
  return s + "]";
}

bool shape_matches(const hb_tensor& t, std::initializer_list<int64_t> dims) {
  if (t.ndim != static_cast<int32_t>(dims.size())) return false;
  int i = 0;
  for (int64_t d : dims) {
    if (d >= 0 && t.shape[i] != d) return false;
    ++i;
  }
  return true;
}

void require_indexable(const Operands& call, const hb_tensor& t) {
  if (call.int32_indexing) as_int(call, numel(t));
}

const Json* find_attr(const Json& a, const char* name) {
  if (!a.is_object()) return nullptr;
  const auto it = a.find(name);
  return it == a.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

void require_operands(const Operands& call, int min_inputs, int max_inputs, int outputs) {
  require(
      call,
      call.n_in >= min_inputs && call.n_in <= max_inputs && (call.n_in == 0 || call.in != nullptr),
      "takes " + std::to_string(min_inputs) +
          (max_inputs > min_inputs ? " to " + std::to_string(max_inputs) : "") + " inputs, got " +
          std::to_string(call.n_in));
  require(call, call.n_out == outputs && call.out != nullptr,
          "takes " + std::to_string(outputs) + " outputs, got " + std::to_string(call.n_out));
  for (int i = 0; i < call.n_in + call.n_out; ++i) {
    const hb_tensor& t = i < call.n_in ? call.in[i] : call.out[i - call.n_in];
    const std::string name =
        i < call.n_in ? "input " + std::to_string(i) : "output " + std::to_string(i - call.n_in);
    bool ok = t.ndim >= 0 && t.ndim <= HB_MAX_DIMS && elem_size(t.dtype) > 0;
    for (int d = 0; ok && d < t.ndim; ++d) ok = t.shape[d] >= 0;
    require(call, ok, name + " has a bad rank, shape or dtype");
    require(call, t.data != nullptr || numel(t) == 0, name + " has no data");
  }
}

void require(const Operands& call, bool ok, const std::string& message) {
  if (!ok) throw OpError(HB_INVALID_ARGUMENT, std::string(call.op) + ": " + message);
}

void unsupported(const Operands& call, const std::string& message) {
  throw OpError(HB_UNSUPPORTED, std::string(call.op) + ": " + message);
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

bool is_float(hb_dtype d) { return d == HB_F32 || d == HB_BF16 || d == HB_F16; }

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

int as_int(const Operands& call, int64_t v) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    unsupported(call, "size " + std::to_string(v) + " exceeds the kernels' 32-bit indexing");
  return static_cast<int>(v);
}

void require_tensor(const Operands& call, const hb_tensor& t, const char* name,
                    std::initializer_list<int64_t> dims, hb_dtype dtype) {
  if (!shape_matches(t, dims) || t.dtype != dtype)
    require(call, false,
            std::string(name) + " must be " + dims_str(dims) + " " + dtype_name(dtype) + ", got " +
                describe(t));
  require_indexable(call, t);
}

void require_like(const Operands& call, const hb_tensor& t, const char* name,
                  const hb_tensor& like) {
  bool same = t.ndim == like.ndim && t.dtype == like.dtype;
  for (int i = 0; same && i < t.ndim; ++i) same = t.shape[i] == like.shape[i];
  if (!same)
    require(call, false, std::string(name) + " must be " + describe(like) + ", got " + describe(t));
  require_indexable(call, t);
}

void require_index(const Operands& call, const hb_tensor& t, const char* name,
                   std::initializer_list<int64_t> dims) {
  if (!shape_matches(t, dims) || (t.dtype != HB_I32 && t.dtype != HB_I64))
    require(call, false,
            std::string(name) + " must be " + dims_str(dims) + " i32 or i64, got " + describe(t));
  require_indexable(call, t);
}

std::vector<int64_t> read_indices(const Operands& call, const hb_tensor& t) {
  if (t.dtype != HB_I32 && t.dtype != HB_I64)
    require(call, false, "index operand must be i32 or i64, got " + describe(t));
  const size_t n = static_cast<size_t>(numel(t));
  std::vector<int64_t> out(n);
  if (n == 0) return out;
  if (t.dtype == HB_I64) {
    call.memory.read(out.data(), t.data, n * sizeof(int64_t));
  } else {
    std::vector<int32_t> narrow(n);
    call.memory.read(narrow.data(), t.data, n * sizeof(int32_t));
    for (size_t i = 0; i < n; ++i) out[i] = narrow[i];
  }
  return out;
}

void require_in_range(const Operands& call, const hb_tensor& t, const char* name,
                      const std::vector<int64_t>& values, int64_t lo, int64_t hi,
                      const std::string& range) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] >= lo && values[i] < hi) continue;
    std::string at;  // the element's position in t, row-major
    int64_t rest = static_cast<int64_t>(i);
    for (int d = t.ndim - 1; d >= 0; --d) {
      const int64_t extent = t.shape[d] > 0 ? t.shape[d] : 1;
      at = std::to_string(rest % extent) + (at.empty() ? "" : ", ") + at;
      rest /= extent;
    }
    require(
        call, false,
        std::string(name) + "[" + at + "] = " + std::to_string(values[i]) + " is outside " + range);
  }
}

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

std::string attr_either(const Operands& call, const char* name, const std::string& fallback,
                        const std::string& a, const std::string& b) {
  const std::string v = attr_s(call.attrs, name, fallback);
  require(call, v == a || v == b,
          "attr " + std::string(name) + " must be " + a + " or " + b + ", got '" + v + "'");
  return v;
}

float scale_attr(const Operands& call, int64_t d) {
  return static_cast<float>(attr_null(call.attrs, "scale") ? 1.0 / std::sqrt(static_cast<double>(d))
                                                           : attr_f(call.attrs, "scale", 1.0));
}

}  // namespace h0p
