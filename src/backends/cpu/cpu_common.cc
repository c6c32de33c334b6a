// Operand checks, f32 widening/rounding and the sgemm wrapper shared by the cpu kernels.
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"
#include "tensor/convert.h"
#include "tensor/dtype.h"

namespace h0::backends::cpu {
namespace {

tensor::DType to_dtype(hb_dtype d) { return static_cast<tensor::DType>(d); }

bool valid_dtype(hb_dtype d) {
  return static_cast<int>(d) >= 0 && static_cast<int>(d) < tensor::kNumDTypes;
}

const char* dtype_str(hb_dtype d) {
  return valid_dtype(d) ? tensor::dtype_name(to_dtype(d)) : "(invalid dtype)";
}

std::string dims_str(std::initializer_list<int64_t> dims) {
  std::string s = "[";
  for (auto it = dims.begin(); it != dims.end(); ++it) {
    s += (it == dims.begin() ? "" : ", ") + (*it < 0 ? std::string("*") : std::to_string(*it));
  }
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

constexpr size_t kConvertGrain = size_t{1} << 16;

}  // namespace

void require(const OpCall& call, bool ok, const std::string& message) {
  if (!ok) throw KernelError(HB_INVALID_ARGUMENT, std::string(call.op) + ": " + message);
}

void unsupported(const OpCall& call, const std::string& message) {
  throw KernelError(HB_UNSUPPORTED, std::string(call.op) + ": " + message);
}

std::string describe(const hb_tensor& t) {
  std::string s = "[";
  for (int i = 0; i < t.ndim && i < HB_MAX_DIMS; ++i)
    s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "] " + dtype_str(t.dtype);
}

int64_t numel(const hb_tensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

size_t elem_size(hb_dtype dtype) {
  return valid_dtype(dtype) ? tensor::dtype_size(to_dtype(dtype)) : 0;
}

bool is_float(hb_dtype dtype) { return dtype == HB_F32 || dtype == HB_BF16 || dtype == HB_F16; }

void require_tensor(const OpCall& call, const hb_tensor& t, const char* name,
                    std::initializer_list<int64_t> dims, hb_dtype dtype) {
  if (!shape_matches(t, dims) || t.dtype != dtype)
    require(call, false,
            std::string(name) + " must be " + dims_str(dims) + " " + dtype_str(dtype) + ", got " +
                describe(t));
}

void require_like(const OpCall& call, const hb_tensor& t, const char* name, const hb_tensor& like) {
  bool same = t.ndim == like.ndim && t.dtype == like.dtype;
  for (int i = 0; same && i < t.ndim; ++i) same = t.shape[i] == like.shape[i];
  if (!same)
    require(call, false, std::string(name) + " must be " + describe(like) + ", got " + describe(t));
}

void require_index(const OpCall& call, const hb_tensor& t, const char* name,
                   std::initializer_list<int64_t> dims) {
  if (!shape_matches(t, dims) || (t.dtype != HB_I32 && t.dtype != HB_I64))
    require(call, false,
            std::string(name) + " must be " + dims_str(dims) + " i32 or i64, got " + describe(t));
}

void load_f32(const hb_tensor& t, size_t first, size_t n, float* dst) {
  const auto* src = static_cast<const std::byte*>(t.data) + first * elem_size(t.dtype);
  tensor::convert(src, to_dtype(t.dtype), dst, tensor::DType::kF32, n);
}

void store_f32(const float* src, const hb_tensor& t, size_t first, size_t n) {
  auto* dst = static_cast<std::byte*>(t.data) + first * elem_size(t.dtype);
  tensor::convert(src, tensor::DType::kF32, dst, to_dtype(t.dtype), n);
}

F32View::F32View(const hb_tensor& t) : data_(static_cast<const float*>(t.data)) {
  if (t.dtype == HB_F32) return;
  const size_t n = static_cast<size_t>(numel(t));
  owned_.resize(n);
  base::parallel_for(n, kConvertGrain,
                     [&](size_t, size_t b, size_t e) { load_f32(t, b, e - b, owned_.data() + b); });
  data_ = owned_.data();
}

void store_all(const std::vector<float>& src, const hb_tensor& t) {
  base::parallel_for(src.size(), kConvertGrain,
                     [&](size_t, size_t b, size_t e) { store_f32(src.data() + b, t, b, e - b); });
}

namespace {
const Json* attr_value(const Json& a, const char* name) {
  if (!a.is_object()) return nullptr;
  auto it = a.find(name);
  return it == a.end() || it->is_null() ? nullptr : &*it;
}
}  // namespace

double attr_f(const Json& a, const char* name, double fallback) {
  const Json* v = attr_value(a, name);
  return v != nullptr ? v->get<double>() : fallback;
}

int64_t attr_i(const Json& a, const char* name, int64_t fallback) {
  const Json* v = attr_value(a, name);
  return v != nullptr ? v->get<int64_t>() : fallback;
}

bool attr_b(const Json& a, const char* name, bool fallback) {
  const Json* v = attr_value(a, name);
  return v != nullptr ? v->get<bool>() : fallback;
}

std::string attr_s(const Json& a, const char* name, const std::string& fallback) {
  const Json* v = attr_value(a, name);
  return v != nullptr ? v->get<std::string>() : fallback;
}

bool attr_null(const Json& a, const char* name) { return attr_value(a, name) == nullptr; }

std::vector<float> gather_paged(const hb_tensor& cache, const hb_tensor& table, int64_t len,
                                int64_t width) {
  const int64_t bsz = cache.shape[1];
  const auto* blocks = static_cast<const int32_t*>(table.data);
  std::vector<float> dst(size_t(len * width));
  base::parallel_for(size_t(len), row_grain(width), [&](size_t, size_t b, size_t e) {
    for (size_t j = b; j < e; ++j) {
      const int64_t slot = blocks[j / size_t(bsz)] * bsz + int64_t(j) % bsz;
      load_f32(cache, size_t(slot * width), size_t(width), dst.data() + j * size_t(width));
    }
  });
  return dst;
}

size_t row_grain(int64_t row_elements) {
  return static_cast<size_t>(
      std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, row_elements)));
}

void sgemm(int64_t m, int64_t n, int64_t k, const float* a, const float* b, bool b_transposed,
           float* c, bool accumulate) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate) std::fill(c, c + m * n, 0.0f);
    return;
  }
  // Small products run on this thread: waking OpenBLAS's threads costs more than they save,
  // and their spinning afterwards takes the cores from the next kernel (2-core machines).
  const bool small = double(m) * double(n) * double(k) < 1e6;
  const int threads = small ? openblas_get_num_threads() : 1;
  if (small && threads > 1) openblas_set_num_threads(1);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a,
              static_cast<blasint>(k), b, static_cast<blasint>(b_transposed ? k : n),
              accumulate ? 1.0f : 0.0f, c, static_cast<blasint>(n));
  if (small && threads > 1) openblas_set_num_threads(threads);
}

}  // namespace h0::backends::cpu
