// The OpenCL side of the opencl plugin: platform and device selection, the in-order queue,
// device buffers (a cl_mem is the plugin's device pointer), and the program cache. Implements
// h0p::Device, so the portable ops (../portable) launch their kernels through it.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "../portable/device.h"

namespace h0cl {

// What init's options select: {"platform": 0 | "name part", "device": 0 | "name part",
// "f16": true (storage-only f16 kernels even without cl_khr_fp16)}. Absent = the first. A
// platform name part matches its name, vendor or version string.
struct Selection {
  std::string platform, device;  // an index ("0") or a case-insensitive name substring
  bool force_f16 = false;
};

// One built program: the source, the options it was built with, how long the build took.
struct BuiltProgram {
  cl_program program = nullptr;
  double build_ms = 0;
};

class ClContext : public h0p::Device {
 public:
  using Logger = std::function<void(int level, const std::string& message)>;

  // Opens the selected device. Throws h0p::OpError(HB_INVALID_ARGUMENT) when nothing matches
  // (the message lists what exists) and HB_DEVICE_ERROR when OpenCL fails.
  ClContext(const Selection& selection, Logger log);
  ~ClContext() override;

  bool has_dtype(hb_dtype dtype) const override;  // f32, bf16; f16 with cl_khr_fp16
  void launch(const char* name, hb_dtype dtype, const h0p::Grid& grid,
              std::initializer_list<h0p::Arg> args) override;
  // clCreateBuffer (HB_OUT_OF_MEMORY when it cannot) / clReleaseMemObject; blocking enqueued
  // writes and reads on the context's queue.
  void* alloc(size_t bytes) override;
  void release(void* handle) override;
  void write(void* handle, const void* src, size_t bytes) override;
  void read(void* dst, const void* handle, size_t bytes) override;
  void synchronize();  // clFinish
  // OpenCL reports the device's global memory size but not what is free: throws
  // OpError(HB_UNSUPPORTED) naming the total.
  void memory_info(size_t* free_bytes, size_t* total_bytes);
  size_t total_memory() const { return total_memory_; }

  // The program for (source, options), built on first use and cached for the process; a
  // failed build throws OpError(HB_DEVICE_ERROR) with the build log (also logged in full).
  const BuiltProgram& program(const std::string& source, const std::string& options);

 private:
  cl_kernel kernel(hb_dtype dtype, const char* name);

  Logger log_;
  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  bool fp16_ = false;
  size_t total_memory_ = 0, max_group_ = 0;
  std::map<std::pair<std::string, std::string>, BuiltProgram> programs_;  // (options, source)
  cl_program program_of_dtype_[HB_BOOL + 1] = {};  // kernel()'s shortcut into programs_
  std::map<std::pair<cl_program, std::string>, cl_kernel> kernels_;
};

// "CL_OUT_OF_RESOURCES (-5)".
std::string cl_error_name(cl_int code);

}  // namespace h0cl
