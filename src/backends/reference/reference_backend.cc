#include "backends/reference/reference_backend.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "base/version.h"
#include "ops/op.h"

namespace {

struct ReferenceBackend {
  const hb_host_api* host = nullptr;
  std::string stack_info;
  std::string last_error;
};

ReferenceBackend g_state;

hb_status init(void* self, const hb_host_api* host, const char*) {
  auto* b = static_cast<ReferenceBackend*>(self);
  b->host = host;
  b->stack_info = nlohmann::json{{"device", "host"},
                                 {"driver", "none"},
                                 {"runtime", "reference"},
                                 {"op_library",
                                  std::string("h0 reference kernels ") + h0::base::kHarnessVersion},
                                 {"compiler", h0::base::kCompiler}}
                      .dump();
  return HB_OK;
}

const char* stack_info_json(void* self) {
  return static_cast<ReferenceBackend*>(self)->stack_info.c_str();
}

int32_t supports(void*, const char* op, hb_dtype dtype) {
  const h0::ops::OpDef* def = h0::ops::find_op(op);
  const bool float_dtype =
      dtype == HB_F64 || dtype == HB_F32 || dtype == HB_BF16 || dtype == HB_F16;
  return def != nullptr && def->reference != nullptr && float_dtype ? 1 : 0;
}

hb_status alloc(void*, size_t bytes, void** ptr) {
  *ptr = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  return *ptr != nullptr ? HB_OK : HB_OUT_OF_MEMORY;
}

void release(void*, void* ptr) { std::free(ptr); }

hb_status copy(void*, void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return HB_OK;
}

hb_status copy_at(void*, void* dst, size_t offset, const void* src, size_t bytes) {
  std::memcpy(static_cast<char*>(dst) + offset, src, bytes);
  return HB_OK;
}

hb_status run_op(void* self, const char* op, const hb_tensor* in, int32_t n_in, hb_tensor* out,
                 int32_t n_out, const char* attrs) {
  // Device memory is host memory: the host API's reference kernel runs in place.
  return static_cast<ReferenceBackend*>(self)->host->reference_op(op, in, n_in, out, n_out, attrs);
}

hb_status synchronize(void*) { return HB_OK; }

hb_status memory_info(void*, size_t*, size_t*) { return HB_UNSUPPORTED; }

const char* last_error(void* self) {
  return static_cast<ReferenceBackend*>(self)->last_error.c_str();
}

void shutdown(void*) {}

const hb_backend kBackend = {
    HB_ABI_VERSION, "reference", &g_state,  &init,    &stack_info_json, &supports,
    &alloc,         &release,    &copy,     &copy,    &run_op,          &synchronize,
    &memory_info,   &last_error, &shutdown, &copy_at,
};

}  // namespace

const hb_backend* h0_reference_backend_entry() { return &kBackend; }
