#include "opencl_context.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <vector>

#include "opencl_source.h"

namespace h0cl {
namespace {

using h0p::OpError;

void check(cl_int code, const char* what) {
  if (code != CL_SUCCESS)
    throw OpError(HB_DEVICE_ERROR, std::string("opencl: ") + what + ": " + cl_error_name(code));
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  return s.substr(0, s.find('\0'));
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  return s.substr(0, s.find('\0'));
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Whether `name` (the `index`-th candidate) matches a selector: empty, an index, or a
// case-insensitive name substring.
bool selected(const std::string& selector, size_t index, const std::string& name) {
  if (selector.empty()) return true;
  if (std::all_of(selector.begin(), selector.end(),
                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::stoul(selector) == index;
  return lower(name).find(lower(selector)) != std::string::npos;
}

struct Candidate {
  cl_platform_id platform;
  cl_device_id device;
  std::string platform_name, device_name;
};

// Every (platform, device) whose platform matches the platform selector, in order.
std::vector<Candidate> candidates(const std::string& platform_selector) {
  cl_uint n_platforms = 0;
  const cl_int rc = clGetPlatformIDs(0, nullptr, &n_platforms);
  if (rc != CL_SUCCESS || n_platforms == 0)
    throw OpError(HB_DEVICE_ERROR,
                  "opencl: no OpenCL platform (clGetPlatformIDs: " +
                      (rc != CL_SUCCESS ? cl_error_name(rc) : std::string("0 platforms")) +
                      "); is an ICD installed (e.g. pocl-opencl-icd)?");
  std::vector<cl_platform_id> platforms(n_platforms);
  check(clGetPlatformIDs(n_platforms, platforms.data(), nullptr), "clGetPlatformIDs");
  std::vector<Candidate> out;
  for (size_t p = 0; p < platforms.size(); ++p) {
    const std::string pname = platform_string(platforms[p], CL_PLATFORM_NAME);
    // A name part may come from the name, the vendor or the version ("PoCL" is only there).
    const std::string words = pname + " " + platform_string(platforms[p], CL_PLATFORM_VENDOR) +
                              " " + platform_string(platforms[p], CL_PLATFORM_VERSION);
    if (!selected(platform_selector, p, words)) continue;
    cl_uint n_devices = 0;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &n_devices) != CL_SUCCESS)
      continue;
    std::vector<cl_device_id> devices(n_devices);
    clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, n_devices, devices.data(), nullptr);
    for (cl_device_id d : devices)
      out.push_back({platforms[p], d, pname, device_string(d, CL_DEVICE_NAME)});
  }
  return out;
}

// FNV-1a of the kernel source: the op library's version in the stack fingerprint.
std::string source_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

ClContext::ClContext(const Selection& sel, Logger log) : log_(std::move(log)) {
  const std::vector<Candidate> all = candidates(sel.platform);
  const Candidate* chosen = nullptr;
  for (size_t i = 0; i < all.size() && chosen == nullptr; ++i) {
    if (selected(sel.device, i, all[i].device_name)) chosen = &all[i];
  }
  if (chosen == nullptr) {
    std::string known;
    for (size_t i = 0; i < all.size(); ++i)
      known += (i ? ", " : "") + std::to_string(i) + ": " + all[i].device_name + " (" +
               all[i].platform_name + ")";
    throw OpError(HB_INVALID_ARGUMENT, "opencl: no device matches platform '" + sel.platform +
                                           "', device '" + sel.device +
                                           "' (devices: " + (known.empty() ? "none" : known) + ")");
  }
  platform_ = chosen->platform;
  device_ = chosen->device;
  cl_int rc = CL_SUCCESS;
  context_ = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &rc);
  check(rc, "clCreateContext");
  queue_ = clCreateCommandQueue(context_, device_, 0, &rc);
  check(rc, "clCreateCommandQueue");
  cl_ulong mem = 0;
  clGetDeviceInfo(device_, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, nullptr);
  total_memory_ = static_cast<size_t>(mem);
  clGetDeviceInfo(device_, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_group_, &max_group_, nullptr);
  const std::string extensions = device_string(device_, CL_DEVICE_EXTENSIONS);
  fp16_ = sel.force_f16 || extensions.find("cl_khr_fp16") != std::string::npos;
  stack_info_ = nlohmann::json{
      {"device", chosen->device_name},
      {"driver", device_string(device_, CL_DRIVER_VERSION)},
      {"runtime", platform_string(platform_, CL_PLATFORM_VERSION)},
      {"op_library", "h0 portable kernels (OpenCL C) " + source_hash(h0_opencl_kernel_source())},
      {"compiler",
       device_string(device_, CL_DEVICE_OPENCL_C_VERSION) + " (" + chosen->platform_name +
           ")"}}.dump();
  log_(1, "opencl: " + chosen->device_name + " on " + chosen->platform_name +
              (fp16_ ? ", f16 kernels" : ", no f16 (cl_khr_fp16 absent)"));
}

ClContext::~ClContext() {
  for (auto& [key, k] : kernels_) clReleaseKernel(k);
  for (auto& [key, p] : programs_) clReleaseProgram(p.program);
  if (queue_ != nullptr) clReleaseCommandQueue(queue_);
  if (context_ != nullptr) clReleaseContext(context_);
}

bool ClContext::has_dtype(hb_dtype dtype) const {
  return dtype == HB_F32 || dtype == HB_BF16 || (dtype == HB_F16 && fp16_);
}

const BuiltProgram& ClContext::program(const std::string& source, const std::string& options) {
  auto [it, fresh] = programs_.try_emplace({options, source});
  if (!fresh) return it->second;
  const char* text = source.c_str();
  cl_int rc = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(context_, 1, &text, nullptr, &rc);
  if (rc != CL_SUCCESS) {
    programs_.erase(it);
    check(rc, "clCreateProgramWithSource");
  }
  const auto t0 = std::chrono::steady_clock::now();
  rc = clBuildProgram(p, 1, &device_, options.c_str(), nullptr, nullptr);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (rc != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(p, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string build_log(n, '\0');
    clGetProgramBuildInfo(p, device_, CL_PROGRAM_BUILD_LOG, n, build_log.data(), nullptr);
    clReleaseProgram(p);
    programs_.erase(it);
    log_(3, "opencl: program build failed (" + options + "):\n" + build_log);
    throw OpError(HB_DEVICE_ERROR, "opencl: program build failed (" + options +
                                       "): " + cl_error_name(rc) +
                                       "; build log: " + build_log.substr(0, 4000));
  }
  it->second = {p, ms};
  log_(1, "opencl: built the kernels with '" + options + "' in " +
              std::to_string(static_cast<int>(ms)) + " ms");
  return it->second;
}

cl_kernel ClContext::kernel(hb_dtype dtype, const char* name) {
  cl_program& p = program_of_dtype_[static_cast<size_t>(
      dtype)];  // the launch path skips the source-keyed cache
  if (p == nullptr) {
    const std::string options =
        "-cl-std=CL1.2 -DH0_DTYPE=" + std::to_string(static_cast<int>(dtype));
    p = program(h0_opencl_kernel_source(), options).program;
  }
  auto [it, fresh] = kernels_.try_emplace({p, name}, nullptr);
  if (fresh) {
    cl_int rc = CL_SUCCESS;
    it->second = clCreateKernel(p, name, &rc);
    if (rc != CL_SUCCESS) {
      kernels_.erase(it);
      check(rc, (std::string("clCreateKernel ") + name).c_str());
    }
  }
  return it->second;
}

void ClContext::launch(const char* name, hb_dtype dtype, const h0p::Grid& grid,
                       std::initializer_list<h0p::Arg> args) {
  if (grid.groups[0] == 0 || grid.groups[1] == 0) return;
  if (grid.local[0] * grid.local[1] > max_group_)
    throw OpError(HB_UNSUPPORTED, "opencl: " + std::string(name) + " needs work-groups of " +
                                      std::to_string(grid.local[0] * grid.local[1]) +
                                      " items; the device allows " + std::to_string(max_group_));
  const cl_kernel k = kernel(dtype, name);
  cl_uint i = 0;
  for (const h0p::Arg& a :
       args) {  // error messages are built only on failure (this is every launch)
    const cl_int rc = clSetKernelArg(k, i, a.size, a.value);
    if (rc != CL_SUCCESS)
      check(rc, (std::string("clSetKernelArg ") + name + " #" + std::to_string(i)).c_str());
    ++i;
  }
  const size_t global[2] = {grid.groups[0] * grid.local[0], grid.groups[1] * grid.local[1]};
  const cl_int rc =
      clEnqueueNDRangeKernel(queue_, k, 2, nullptr, global, grid.local, 0, nullptr, nullptr);
  if (rc != CL_SUCCESS) check(rc, (std::string("clEnqueueNDRangeKernel ") + name).c_str());
}

void* ClContext::alloc(size_t bytes) {
  cl_int rc = CL_SUCCESS;
  cl_mem m = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes == 0 ? 4 : bytes, nullptr, &rc);
  if (rc == CL_MEM_OBJECT_ALLOCATION_FAILURE || rc == CL_OUT_OF_HOST_MEMORY ||
      rc == CL_INVALID_BUFFER_SIZE)
    throw OpError(HB_OUT_OF_MEMORY, "opencl: cannot allocate " + std::to_string(bytes) +
                                        " bytes: " + cl_error_name(rc));
  check(rc, "clCreateBuffer");
  return m;
}

void ClContext::release(void* handle) {
  if (handle != nullptr) clReleaseMemObject(static_cast<cl_mem>(handle));
}

void ClContext::write(void* handle, const void* src, size_t bytes) {
  if (bytes == 0) return;
  check(clEnqueueWriteBuffer(queue_, static_cast<cl_mem>(handle), CL_TRUE, 0, bytes, src, 0,
                             nullptr, nullptr),
        "clEnqueueWriteBuffer");
}

void ClContext::read(void* dst, const void* handle, size_t bytes) {
  if (bytes == 0) return;
  check(clEnqueueReadBuffer(queue_, static_cast<cl_mem>(const_cast<void*>(handle)), CL_TRUE, 0,
                            bytes, dst, 0, nullptr, nullptr),
        "clEnqueueReadBuffer");
}

void ClContext::synchronize() { check(clFinish(queue_), "clFinish"); }

void ClContext::memory_info(size_t*, size_t*) {
  throw h0p::OpError(HB_UNSUPPORTED,
                     "opencl: free device memory is not reported by OpenCL (total " +
                         std::to_string(total_memory_) + " bytes)");
}

std::string cl_error_name(cl_int code) {
  static const std::map<cl_int, const char*> kNames = {
      {CL_DEVICE_NOT_FOUND, "CL_DEVICE_NOT_FOUND"},
      {CL_DEVICE_NOT_AVAILABLE, "CL_DEVICE_NOT_AVAILABLE"},
      {CL_COMPILER_NOT_AVAILABLE, "CL_COMPILER_NOT_AVAILABLE"},
      {CL_MEM_OBJECT_ALLOCATION_FAILURE, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {CL_OUT_OF_RESOURCES, "CL_OUT_OF_RESOURCES"},
      {CL_OUT_OF_HOST_MEMORY, "CL_OUT_OF_HOST_MEMORY"},
      {CL_BUILD_PROGRAM_FAILURE, "CL_BUILD_PROGRAM_FAILURE"},
      {CL_INVALID_VALUE, "CL_INVALID_VALUE"},
      {CL_INVALID_PLATFORM, "CL_INVALID_PLATFORM"},
      {CL_INVALID_DEVICE, "CL_INVALID_DEVICE"},
      {CL_INVALID_MEM_OBJECT, "CL_INVALID_MEM_OBJECT"},
      {CL_INVALID_BUILD_OPTIONS, "CL_INVALID_BUILD_OPTIONS"},
      {CL_INVALID_KERNEL_NAME, "CL_INVALID_KERNEL_NAME"},
      {CL_INVALID_ARG_INDEX, "CL_INVALID_ARG_INDEX"},
      {CL_INVALID_ARG_VALUE, "CL_INVALID_ARG_VALUE"},
      {CL_INVALID_ARG_SIZE, "CL_INVALID_ARG_SIZE"},
      {CL_INVALID_KERNEL_ARGS, "CL_INVALID_KERNEL_ARGS"},
      {CL_INVALID_WORK_GROUP_SIZE, "CL_INVALID_WORK_GROUP_SIZE"},
      {CL_INVALID_WORK_ITEM_SIZE, "CL_INVALID_WORK_ITEM_SIZE"},
      {CL_INVALID_BUFFER_SIZE, "CL_INVALID_BUFFER_SIZE"},
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
  };
  const auto it = kNames.find(code);
  return std::string(it != kNames.end() ? it->second : "OpenCL error") + " (" +
         std::to_string(code) + ")";
}

}  // namespace h0cl
