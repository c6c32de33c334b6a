// The harness's side of the plugin ABI: a Backend wraps one hb_backend (built in or loaded
// from a vendor's shared library) and gives it RAII device buffers, typed uploads and
// downloads, and errors with the backend's own words. Nothing here special-cases a backend.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "backend/harness_backend.h"
#include "tensor/tensor.h"

namespace h0::backend {

// What a platform config names: a built-in backend or a plugin library, and its options.
struct BackendSpec {
  std::string name;  // built-in: "reference", "cpu"; empty when `lib` is set
  std::string lib;   // path of a plugin .so exporting hb_backend_entry
  nlohmann::json options = nlohmann::json::object();
};

// The platform under test failed (an hb_status other than OK): tier 3 of the error model.
// Checks turn it into an `error` result carrying `what()`; it never ends a run.
class BackendError : public std::runtime_error {
 public:
  BackendError(hb_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  hb_status status() const { return status_; }

 private:
  hb_status status_;
};

class Backend;

// A tensor in backend memory. Owns its buffer; freed through the backend that made it.
class DeviceTensor {
 public:
  DeviceTensor() = default;
  DeviceTensor(DeviceTensor&&) noexcept;
  DeviceTensor& operator=(DeviceTensor&&) noexcept;
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;
  ~DeviceTensor();

  const hb_tensor& desc() const { return desc_; }
  tensor::DType dtype() const { return static_cast<tensor::DType>(desc_.dtype); }
  tensor::Shape shape() const { return tensor::Shape(desc_.shape, desc_.shape + desc_.ndim); }
  size_t nbytes() const { return bytes_; }
  // Reinterprets the buffer with another shape of the same element count (a view change, no
  // copy): e.g. linear's [T, H*Dh] as attention's [T, H, Dh].
  void reshape(const tensor::Shape& shape);

 private:
  friend class Backend;
  Backend* owner_ = nullptr;
  hb_tensor desc_{};
  size_t bytes_ = 0;
};

class Backend {
 public:
  // Opens and initializes a backend. Throws InputError for a bad spec (unknown built-in,
  // library that will not load, missing entry point, ABI mismatch) and BackendError if init
  // fails.
  static std::unique_ptr<Backend> open(const BackendSpec& spec);
  // Wraps an hb_backend directly (tests).
  static std::unique_ptr<Backend> from_entry(const hb_backend* entry, const nlohmann::json& options,
                                             const std::string& origin);
  ~Backend();

  const std::string& name() const { return name_; }
  const std::string& origin() const { return origin_; }  // "built-in" or the library path
  // The backend's stack fingerprint (stack_info_json), parsed; {"raw": text} if not JSON.
  nlohmann::json stack_info() const;
  bool supports(std::string_view op, tensor::DType dtype) const;

  DeviceTensor allocate(tensor::DType dtype, const tensor::Shape& shape);
  DeviceTensor upload(const tensor::Tensor& host);
  // upload in pieces of about `piece` bytes when the backend copies at an offset (ABI 2's
  // copy_to_device_at), calling copied(offset, bytes) after each piece (the caller drops those
  // bytes of its source); one copy and one call otherwise.
  DeviceTensor upload_in_pieces(const tensor::Tensor& host, size_t piece,
                                const std::function<void(size_t offset, size_t bytes)>& copied);
  // Copies a host tensor into an existing device tensor of the same size.
  void upload_into(const tensor::Tensor& host, DeviceTensor* device);
  void download(const DeviceTensor& device, tensor::Tensor* host);
  tensor::Tensor download(const DeviceTensor& device);

  // Runs one op natively (no fallback here; see fallback.h). `attrs_json` must already be
  // validated. Throws BackendError with last_error() on failure.
  void run_op(std::string_view op, const std::vector<const DeviceTensor*>& inputs,
              const std::vector<DeviceTensor*>& outputs, const std::string& attrs_json);
  void synchronize();
  // Free and total device memory in bytes, if the backend reports them.
  bool memory_info(size_t* free_bytes, size_t* total_bytes) const;

 private:
  friend class DeviceTensor;
  Backend(const hb_backend* entry, std::string origin)
      : entry_(entry), origin_(std::move(origin)) {}
  [[noreturn]] void fail(hb_status status, const std::string& what) const;
  void release(void* device_ptr);

  const hb_backend* entry_;
  std::string origin_;
  std::string name_;
};

// The host API every backend receives at init: reference_op runs the catalogue's reference
// kernel on host tensors; log forwards to the harness log (stderr, HARNESS_LOG_LEVEL).
const hb_host_api* host_api();
// The last error a backend reported through the host API on this thread (then cleared).
std::string take_host_error();

// hb_tensor <-> Tensor helpers. The view does not own memory.
hb_tensor make_hb_tensor(void* data, tensor::DType dtype, const tensor::Shape& shape);
tensor::Tensor view_of(const hb_tensor& t, bool writable);

const char* status_name(hb_status status);

}  // namespace h0::backend
