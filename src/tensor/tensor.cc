#include "tensor/tensor.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "tensor/convert.h"

namespace h0::tensor {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kHugePage = size_t(2) << 20;

// Buffers of 4 MiB and more are aligned to 2 MiB and asked to use transparent huge pages: first
// touch then faults once per 2 MiB instead of once per 4 KiB (a 1 GiB load: 512 faults, not
// 262,144).
std::shared_ptr<void> allocate(size_t bytes) {
  const size_t align = bytes >= 2 * kHugePage ? kHugePage : kAlignment;
  size_t rounded = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded);
  H0_CHECK(p != nullptr) << "out of host memory allocating " << bytes << " bytes";
  if (align == kHugePage) ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint; failure is harmless
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

}  // namespace

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    H0_CHECK(d >= 0) << "negative dim in " << shape_string(shape);
    n *= d;
  }
  return n;
}

std::string shape_string(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(shape[i]);
  }
  return out;
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = h0::tensor::numel(shape);
  t.shape_ = std::move(shape);
  auto storage = allocate(t.nbytes());
  t.data_ = storage.get();
  t.keepalive_ = std::move(storage);
  t.writable_ = true;
  return t;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t = empty(dtype, std::move(shape));
  if (t.nbytes() > 0) std::memset(t.mutable_data(), 0, t.nbytes());
  return t;
}

Tensor Tensor::view(DType dtype, Shape shape, const void* data,
                    std::shared_ptr<const void> keepalive, bool writable) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = h0::tensor::numel(shape);
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.keepalive_ = std::move(keepalive);
  t.writable_ = writable;
  return t;
}

Tensor Tensor::copy_of(DType dtype, Shape shape, const void* data) {
  Tensor t = empty(dtype, std::move(shape));
  if (t.nbytes() > 0) std::memcpy(t.mutable_data(), data, t.nbytes());
  return t;
}

Tensor Tensor::to(DType dtype) const {
  Tensor out = empty(dtype, shape_);
  convert(data_, dtype_, out.mutable_data(), dtype, static_cast<size_t>(numel_));
  return out;
}

Tensor Tensor::clone() const { return copy_of(dtype_, shape_, data_); }

Tensor Tensor::reshape(Shape shape) const {
  H0_CHECK(h0::tensor::numel(shape) == numel_)
      << "reshape " << shape_string(shape_) << " -> " << shape_string(shape);
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::slice(int axis, int64_t begin, int64_t end) const {
  H0_CHECK(axis >= 0 && axis < ndim() && 0 <= begin && begin <= end && end <= shape_[size_t(axis)])
      << "[" << begin << ", " << end << ") of axis " << axis << " of " << shape_string(shape_);
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape_[size_t(i)];
  for (int i = axis + 1; i < ndim(); ++i) inner *= shape_[size_t(i)];
  Shape shape = shape_;
  shape[size_t(axis)] = end - begin;
  Tensor out = empty(dtype_, shape);
  const size_t e = dtype_size(dtype_), run = size_t((end - begin) * inner) * e;
  const auto* src = static_cast<const std::byte*>(data_);
  auto* dst = static_cast<std::byte*>(out.mutable_data());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + size_t(o) * run, src + size_t((o * shape_[size_t(axis)] + begin) * inner) * e,
                run);
  }
  return out;
}

Tensor Tensor::slice_rows(int64_t begin, int64_t end) const {
  H0_CHECK(ndim() >= 1 && 0 <= begin && begin <= end && end <= shape_[0])
      << "rows [" << begin << ", " << end << ") of " << shape_string(shape_);
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.numel_ = h0::tensor::numel(t.shape_);
  const size_t row_bytes = shape_[0] == 0 ? 0 : nbytes() / static_cast<size_t>(shape_[0]);
  t.data_ = static_cast<const std::byte*>(data_) + static_cast<size_t>(begin) * row_bytes;
  return t;
}

double Tensor::at(int64_t i) const {
  H0_CHECK(0 <= i && i < numel_) << "index " << i << " of " << numel_;
  double out = 0;
  convert(static_cast<const std::byte*>(data_) + static_cast<size_t>(i) * dtype_size(dtype_),
          dtype_, &out, DType::kF64, 1);
  return out;
}

}  // namespace h0::tensor
