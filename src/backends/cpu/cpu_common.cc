// f32 widening/rounding, the paged-cache gather and the sgemm wrapper shared by the cpu kernels;
// the operand checks are backends/portable/operands.cc.
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"
#include "tensor/convert.h"

namespace h0::backends::cpu {
namespace {

tensor::DType to_dtype(hb_dtype d) { return static_cast<tensor::DType>(d); }

constexpr size_t kConvertGrain = size_t{1} << 16;

class HostMemory : public h0p::OperandMemory {
 public:
  void read(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
};

}  // namespace

h0p::OperandMemory& host_memory() {
  static HostMemory memory;
  return memory;
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
