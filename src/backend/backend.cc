#include "backend/backend.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/registry.h"
#include "base/check.h"
#include "base/error.h"

namespace h0::backend {

const char* status_name(hb_status status) {
  switch (status) {
    case HB_OK:
      return "ok";
    case HB_UNSUPPORTED:
      return "unsupported";
    case HB_INVALID_ARGUMENT:
      return "invalid argument";
    case HB_OUT_OF_MEMORY:
      return "out of memory";
    case HB_DEVICE_ERROR:
      return "device error";
  }
  return "unknown status";
}

hb_tensor make_hb_tensor(void* data, tensor::DType dtype, const tensor::Shape& shape) {
  H0_CHECK(shape.size() <= HB_MAX_DIMS) << "tensor of rank " << shape.size();
  hb_tensor t{};
  t.data = data;
  t.dtype = static_cast<hb_dtype>(dtype);
  t.ndim = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
  return t;
}

tensor::Tensor view_of(const hb_tensor& t, bool writable) {
  tensor::Shape shape(t.shape, t.shape + t.ndim);
  return tensor::Tensor::view(static_cast<tensor::DType>(t.dtype), std::move(shape), t.data,
                              nullptr, writable);
}

DeviceTensor::DeviceTensor(DeviceTensor&& other) noexcept { *this = std::move(other); }

DeviceTensor& DeviceTensor::operator=(DeviceTensor&& other) noexcept {
  if (this != &other) {
    if (owner_ != nullptr && desc_.data != nullptr) owner_->release(desc_.data);
    owner_ = other.owner_;
    desc_ = other.desc_;
    bytes_ = other.bytes_;
    other.owner_ = nullptr;
    other.desc_.data = nullptr;
  }
  return *this;
}

void DeviceTensor::reshape(const tensor::Shape& shape) {
  H0_CHECK(tensor::numel(shape) == tensor::numel(this->shape()) && shape.size() <= HB_MAX_DIMS)
      << "reshape " << tensor::shape_string(this->shape()) << " to " << tensor::shape_string(shape);
  desc_.ndim = int32_t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) desc_.shape[i] = shape[i];
}

DeviceTensor::~DeviceTensor() {
  if (owner_ != nullptr && desc_.data != nullptr) owner_->release(desc_.data);
}

std::unique_ptr<Backend> Backend::open(const BackendSpec& spec) {
  if (!spec.lib.empty()) return from_entry(load_plugin(spec.lib), spec.options, spec.lib);
  const BuiltinBackend* builtin = find_builtin(spec.name);
  if (builtin == nullptr) {
    std::string known;
    for (const auto& b : builtin_backends())
      known += (known.empty() ? "" : ", ") + std::string(b.name);
    throw InputError("backend '" + spec.name + "'",
                     "no such built-in backend (expected one of " + known + ", or {lib: path.so})");
  }
  return from_entry(builtin->entry(), spec.options, "built-in");
}

std::unique_ptr<Backend> Backend::from_entry(const hb_backend* entry, const nlohmann::json& options,
                                             const std::string& origin) {
  if (entry == nullptr) throw InputError(origin, "hb_backend_entry() returned null");
  if (entry->abi_version == 0 || entry->abi_version > HB_ABI_VERSION) {
    throw InputError(origin, "backend ABI version " + std::to_string(entry->abi_version) +
                                 " is not supported by this harness (ABI " +
                                 std::to_string(HB_ABI_VERSION) + ")");
  }
  std::unique_ptr<Backend> b(new Backend(entry, origin));
  b->name_ = entry->name != nullptr ? entry->name : "unnamed";
  const std::string text = options.is_null() ? "{}" : options.dump();
  const hb_status s = entry->init(entry->self, host_api(), text.c_str());
  if (s != HB_OK) b->fail(s, "init");
  return b;
}

Backend::~Backend() {
  if (entry_->shutdown != nullptr) entry_->shutdown(entry_->self);
}

void Backend::fail(hb_status status, const std::string& what) const {
  const char* detail = entry_->last_error != nullptr ? entry_->last_error(entry_->self) : nullptr;
  std::string message = "backend '" + name_ + "': " + what + " failed: " + status_name(status);
  if (detail != nullptr && *detail != '\0') {
    message += ": " + std::string(detail);
  } else if (const std::string host = take_host_error(); !host.empty()) {
    message += ": " + host;
  }
  throw BackendError(status, message);
}

nlohmann::json Backend::stack_info() const {
  const char* text =
      entry_->stack_info_json != nullptr ? entry_->stack_info_json(entry_->self) : nullptr;
  if (text == nullptr) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return {{"raw", text}};
  }
}

bool Backend::supports(std::string_view op, tensor::DType dtype) const {
  const std::string name(op);
  return entry_->supports(entry_->self, name.c_str(), static_cast<hb_dtype>(dtype)) != 0;
}

DeviceTensor Backend::allocate(tensor::DType dtype, const tensor::Shape& shape) {
  const size_t bytes = static_cast<size_t>(tensor::numel(shape)) * tensor::dtype_size(dtype);
  void* ptr = nullptr;
  // Zero-byte tensors still get a distinct buffer, so every DeviceTensor has a valid pointer.
  const hb_status s = entry_->alloc(entry_->self, bytes == 0 ? 1 : bytes, &ptr);
  if (s != HB_OK) fail(s, "alloc of " + std::to_string(bytes) + " bytes");
  DeviceTensor t;
  t.owner_ = this;
  t.desc_ = make_hb_tensor(ptr, dtype, shape);
  t.bytes_ = bytes;
  return t;
}

void Backend::release(void* device_ptr) { entry_->free(entry_->self, device_ptr); }

DeviceTensor Backend::upload(const tensor::Tensor& host) {
  DeviceTensor t = allocate(host.dtype(), host.shape());
  upload_into(host, &t);
  return t;
}

DeviceTensor Backend::upload_in_pieces(
    const tensor::Tensor& host, size_t piece,
    const std::function<void(size_t offset, size_t bytes)>& copied) {
  if (entry_->abi_version < 2 || entry_->copy_to_device_at == nullptr || piece == 0 ||
      host.nbytes() <= piece) {
    DeviceTensor t = upload(host);
    copied(0, host.nbytes());
    return t;
  }
  DeviceTensor t = allocate(host.dtype(), host.shape());
  const auto* src = static_cast<const std::byte*>(host.data());
  for (size_t offset = 0; offset < host.nbytes(); offset += piece) {
    const size_t bytes = std::min(piece, host.nbytes() - offset);
    const hb_status s =
        entry_->copy_to_device_at(entry_->self, t.desc_.data, offset, src + offset, bytes);
    if (s != HB_OK) fail(s, "copy_to_device_at");
    copied(offset, bytes);
  }
  return t;
}

void Backend::upload_into(const tensor::Tensor& host, DeviceTensor* device) {
  H0_CHECK(host.nbytes() == device->nbytes()) << host.nbytes() << " vs " << device->nbytes();
  if (device->nbytes() == 0) return;
  const hb_status s =
      entry_->copy_to_device(entry_->self, device->desc_.data, host.data(), device->nbytes());
  if (s != HB_OK) fail(s, "copy_to_device");
}

void Backend::download(const DeviceTensor& device, tensor::Tensor* host) {
  H0_CHECK(host->nbytes() == device.nbytes()) << host->nbytes() << " vs " << device.nbytes();
  if (device.nbytes() == 0) return;
  const hb_status s =
      entry_->copy_to_host(entry_->self, host->mutable_data(), device.desc().data, device.nbytes());
  if (s != HB_OK) fail(s, "copy_to_host");
}

tensor::Tensor Backend::download(const DeviceTensor& device) {
  tensor::Tensor host = tensor::Tensor::zeros(device.dtype(), device.shape());
  download(device, &host);
  return host;
}

void Backend::run_op(std::string_view op, const std::vector<const DeviceTensor*>& inputs,
                     const std::vector<DeviceTensor*>& outputs, const std::string& attrs_json) {
  std::vector<hb_tensor> in, out;
  in.reserve(inputs.size());
  out.reserve(outputs.size());
  for (const DeviceTensor* t : inputs) in.push_back(t->desc());
  for (DeviceTensor* t : outputs) out.push_back(t->desc());
  const std::string name(op);
  const hb_status s =
      entry_->run_op(entry_->self, name.c_str(), in.data(), static_cast<int32_t>(in.size()),
                     out.data(), static_cast<int32_t>(out.size()), attrs_json.c_str());
  if (s != HB_OK) fail(s, "run_op '" + name + "'");
}

void Backend::synchronize() {
  if (entry_->synchronize == nullptr) return;
  const hb_status s = entry_->synchronize(entry_->self);
  if (s != HB_OK) fail(s, "synchronize");
}

bool Backend::memory_info(size_t* free_bytes, size_t* total_bytes) const {
  return entry_->memory_info != nullptr &&
         entry_->memory_info(entry_->self, free_bytes, total_bytes) == HB_OK;
}

}  // namespace h0::backend
