// The host side of the portable kernels (kernels/common.inc), shared by the opencl and cuda
// plugins. Both are built against backend/harness_backend.h alone, like a vendor's plugin;
// this folder is compiled into each of them (it links nothing of the harness).
//
// A plugin implements `Device` for its stack (buffers, copies, kernel launches by name, and
// optionally a vendor GEMM); device_ops.h turns a run_op call into launches on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "harness_backend.h"
#include "operands.h"

namespace h0p {

// One kernel argument: a pointer to its value and the value's size. A buffer argument's value
// is the device pointer (the plugin's handle: a cl_mem for OpenCL, an address for CUDA).
struct Arg {
  const void* value;
  size_t size;
};
// The argument for a device buffer; `handle` must outlive the launch call.
inline Arg buffer(void* const& handle) { return {&handle, sizeof(void*)}; }
inline Arg buffer(const void* const& handle) { return {&handle, sizeof(void*)}; }
inline Arg i32(const int& v) { return {&v, sizeof(int)}; }
inline Arg f32(const float& v) { return {&v, sizeof(float)}; }

// A launch: groups[d] work-groups of local[d] work-items in dimension d (0 and 1).
struct Grid {
  size_t groups[2];
  size_t local[2];
};
// `n` items in groups of `local` (1-D).
inline Grid grid_1d(int64_t n, size_t local = 256) {
  return {
      {static_cast<size_t>((n + static_cast<int64_t>(local) - 1) / static_cast<int64_t>(local)), 1},
      {local, 1}};
}

class Device : public OperandMemory {
 public:
  virtual ~Device() = default;
  // Whether the kernels can run on operands of this float dtype (f32, f16, bf16).
  virtual bool has_dtype(hb_dtype dtype) const = 0;
  // Runs kernel `name` built for storage dtype `dtype` over `grid`, `args` in the kernel's
  // parameter order. Asynchronous; throws OpError.
  virtual void launch(const char* name, hb_dtype dtype, const Grid& grid,
                      std::initializer_list<Arg> args) = 0;
  // Device memory; throws OpError(HB_OUT_OF_MEMORY).
  virtual void* alloc(size_t bytes) = 0;
  virtual void release(void* handle) = 0;
  // Blocking copies between host memory and (the start of) a device buffer; read() is
  // OperandMemory's.
  virtual void write(void* handle, const void* src, size_t bytes) = 0;
  // c[m, n] = a[m, k]·B (+ bias[n] if bias), B = b[k, n], or b[n, k]ᵀ when b_trans; all in
  // `dtype`, accumulated in f32. The default launches the portable tiled kernel; a plugin may
  // call its vendor BLAS instead.
  virtual void gemm(hb_dtype dtype, const void* a, const void* b, const void* bias, void* c, int m,
                    int n, int k, bool b_trans);
  // {"device", "driver", "runtime", "op_library", "compiler"} as JSON text (the plugin's
  // stack_info_json), set by the device when it opens.
  const std::string& stack_info() const { return stack_info_; }

 protected:
  std::string stack_info_;
};

// A device buffer owned for the length of an op call.
class Scratch {
 public:
  Scratch(Device& device, size_t bytes)
      : device_(device), handle_(device.alloc(bytes ? bytes : 4)) {}
  ~Scratch() { device_.release(handle_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* const& handle() const { return handle_; }

 private:
  Device& device_;
  void* handle_;
};

}  // namespace h0p
