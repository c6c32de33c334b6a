// The plugin ABI's functions over one h0p::Device class, for the device plugins built on the
// portable kernels (opencl, cuda): the ABI table, last_error, option parsing up to a JSON object,
// "not initialized" guards and exceptions turned into statuses. A plugin supplies its name and
// how to open its device from the options; DeviceT derives from h0p::Device (whose stack_info()
// it fills when it opens) and has synchronize() and memory_info(free, total) (throwing
// OpError(HB_UNSUPPORTED) when it cannot tell).
#pragma once

#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "device_ops.h"
#include "harness_backend.h"

namespace h0p {

template <typename DeviceT>
class DevicePlugin {
 public:
  // Opens the device from the options object (its keys are the plugin's to check).
  using Open = std::unique_ptr<DeviceT> (*)(const nlohmann::json& options, const hb_host_api* host);

  // The ABI table of the plugin `name` ("cuda": the prefix of its messages).
  static const hb_backend* entry(const char* name, Open open) {
    state().name = name;
    state().open = open;
    static const hb_backend table = {
        HB_ABI_VERSION, name,        &state(),   &init,    &stack_info_json, &supports,
        &alloc,         &free,       &to_device, &to_host, &run_op,          &synchronize,
        &memory_info,   &last_error, &shutdown,  nullptr};  // copy_to_device_at: whole copies only
    return &table;
  }

 private:
  struct State {
    const char* name = "";
    Open open = nullptr;
    const hb_host_api* host = nullptr;
    std::unique_ptr<DeviceT> dev;
    std::string last_error;
    std::string stack_info = R"j({"device":"(not initialized)"})j";
  };
  static State& state() {
    static State s;
    return s;
  }
  static std::string prefix() { return std::string(state().name) + ": "; }

  static hb_status fail(hb_status status, const std::string& message) {
    state().last_error = message;
    return status;
  }

  // Runs fn, turning an OpError (or anything thrown) into a status and last_error.
  template <typename Fn>
  static hb_status guarded(Fn fn) {
    state().last_error.clear();
    try {
      fn();
      return HB_OK;
    } catch (const OpError& e) {
      return fail(e.status(), e.what());
    } catch (const std::bad_alloc&) {
      return fail(HB_OUT_OF_MEMORY, prefix() + "out of host memory");
    } catch (const std::exception& e) {
      return fail(HB_DEVICE_ERROR, prefix() + e.what());
    }
  }

  // Every call after init needs init to have succeeded.
  static hb_status not_ready() {
    return fail(HB_DEVICE_ERROR, prefix() + "the backend is not initialized");
  }

  static nlohmann::json options_object(const char* options_json) {
    nlohmann::json options;
    try {
      options = options_json == nullptr || *options_json == '\0'
                    ? nlohmann::json::object()
                    : nlohmann::json::parse(options_json);
    } catch (const nlohmann::json::exception& e) {
      throw OpError(HB_INVALID_ARGUMENT, prefix() + "options are not JSON: " + e.what());
    }
    if (options.is_null()) options = nlohmann::json::object();
    if (!options.is_object())
      throw OpError(HB_INVALID_ARGUMENT,
                    prefix() + "options must be an object, got " + options.dump());
    return options;
  }

  static hb_status init(void*, const hb_host_api* host, const char* options_json) {
    state().host = host;
    return guarded([&] {
      const nlohmann::json options = options_object(options_json);
      state().dev.reset();
      state().dev = state().open(options, host);
      state().stack_info = state().dev->stack_info();
    });
  }

  static const char* stack_info_json(void*) { return state().stack_info.c_str(); }

  static int32_t supports(void*, const char* op, hb_dtype dtype) {
    return state().dev ? device_supports(*state().dev, op, dtype) : 0;
  }

  static hb_status alloc(void*, size_t bytes, void** device_ptr) {
    if (!state().dev) return not_ready();
    if (device_ptr == nullptr) return fail(HB_INVALID_ARGUMENT, "alloc: device_ptr is null");
    return guarded([&] { *device_ptr = state().dev->alloc(bytes); });
  }

  static void free(void*, void* device_ptr) {
    if (state().dev) state().dev->release(device_ptr);
  }

  static hb_status to_device(void*, void* dst, const void* src, size_t bytes) {
    if (!state().dev) return not_ready();
    return guarded([&] { state().dev->write(dst, src, bytes); });
  }

  static hb_status to_host(void*, void* dst, const void* src, size_t bytes) {
    if (!state().dev) return not_ready();
    return guarded([&] { state().dev->read(dst, src, bytes); });
  }

  static hb_status run_op(void*, const char* op, const hb_tensor* inputs, int32_t n_inputs,
                          hb_tensor* outputs, int32_t n_outputs, const char* attrs_json) {
    if (!state().dev) return not_ready();
    return guarded(
        [&] { run_device_op(*state().dev, op, inputs, n_inputs, outputs, n_outputs, attrs_json); });
  }

  static hb_status synchronize(void*) {
    if (!state().dev) return not_ready();
    return guarded([] { state().dev->synchronize(); });
  }

  static hb_status memory_info(void*, size_t* free_bytes, size_t* total_bytes) {
    if (!state().dev) return not_ready();
    return guarded([&] { state().dev->memory_info(free_bytes, total_bytes); });
  }

  static const char* last_error(void*) { return state().last_error.c_str(); }

  static void shutdown(void*) { state().dev.reset(); }
};

}  // namespace h0p
