// Tensor: a dtype, a shape and contiguous row-major storage that is either owned (64-byte
// aligned heap memory) or a view into memory someone else keeps alive (an mmap'd safetensors
// file, zero-copy). Copying a Tensor shares its storage; clone() copies the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/check.h"
#include "tensor/dtype.h"

namespace h0::tensor {

using Shape = std::vector<int64_t>;

// Product of the dims (1 for a 0-d shape). Dims must be >= 0.
int64_t numel(const Shape& shape);
// "2x3x4"; "scalar" for a 0-d shape.
std::string shape_string(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;

  // Owned storage of numel(shape) elements, zero-filled.
  static Tensor zeros(DType dtype, Shape shape);
  // Owned storage whose contents are unspecified, for a buffer about to be overwritten whole.
  static Tensor empty(DType dtype, Shape shape);
  // A view of `data`, kept alive by `keepalive` (e.g. a shared_ptr<MappedFile>). Read-only
  // views (writable = false) refuse mutable_data().
  static Tensor view(DType dtype, Shape shape, const void* data,
                     std::shared_ptr<const void> keepalive, bool writable = false);
  // Owned copy of `n` elements at `data`, which must hold numel(shape) elements.
  static Tensor copy_of(DType dtype, Shape shape, const void* data);

  bool defined() const { return data_ != nullptr || numel_ == 0; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_.at(static_cast<size_t>(i)); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool writable() const { return writable_; }

  const void* data() const { return data_; }
  void* mutable_data() const {
    H0_CHECK(writable_) << "write to a read-only tensor view";
    return const_cast<void*>(data_);
  }
  // Typed access; the caller names the storage type of the dtype (float for f32, ...).
  template <typename T>
  const T* data_as() const {
    H0_CHECK(sizeof(T) == dtype_size(dtype_)) << "element size mismatch for " << dtype_name(dtype_);
    return static_cast<const T*>(data_);
  }
  template <typename T>
  T* mutable_data_as() const {
    H0_CHECK(sizeof(T) == dtype_size(dtype_)) << "element size mismatch for " << dtype_name(dtype_);
    return static_cast<T*>(mutable_data());
  }

  // A converted, owned copy (see convert.h for the rules). to(dtype()) is clone().
  Tensor to(DType dtype) const;
  // An owned copy of the bytes.
  Tensor clone() const;
  // The same storage seen with another shape of the same numel.
  Tensor reshape(Shape shape) const;
  // Rows [begin, end) of dim 0, sharing storage (zero-copy).
  Tensor slice_rows(int64_t begin, int64_t end) const;
  // [begin, end) of dimension `axis`, an owned contiguous copy (any axis).
  Tensor slice(int axis, int64_t begin, int64_t end) const;
  // Element i (row-major) converted to double; for tests and tools, not for hot loops.
  double at(int64_t i) const;

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  int64_t numel_ = 0;
  const void* data_ = nullptr;
  std::shared_ptr<const void> keepalive_;
  bool writable_ = false;
};

}  // namespace h0::tensor
