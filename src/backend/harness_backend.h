/* The day0 harness platform plugin ABI, version 2 (version 1 plus copy_to_device_at). A vendor
 * builds a shared library with their own toolchain, including only this header, and exports
 * hb_backend_entry. Built-in backends fill the same struct. The ABI only grows by appending fields
 * and bumping HB_ABI_VERSION; a plugin built for an older version keeps working. See
 * src/backends/faulty/ for an example. */
#ifndef HARNESS_BACKEND_H_
#define HARNESS_BACKEND_H_

#include <stddef.h>
#include <stdint.h>
#define HB_ABI_VERSION 2
#define HB_MAX_DIMS 8
typedef enum hb_dtype {
  HB_F64 = 0,
  HB_F32 = 1,
  HB_F16 = 2,
  HB_BF16 = 3,
  HB_F8_E4M3 = 4,
  HB_F8_E5M2 = 5,
  HB_I64 = 6,
  HB_I32 = 7,
  HB_I8 = 8,
  HB_U8 = 9,
  HB_BOOL = 10
} hb_dtype;
typedef enum hb_status {
  HB_OK = 0,
  HB_UNSUPPORTED = 1,
  HB_INVALID_ARGUMENT = 2,
  HB_OUT_OF_MEMORY = 3,
  HB_DEVICE_ERROR = 4
} hb_status;
/* Contiguous, row-major. data points into backend (device) memory, except in hb_host_api calls. */
typedef struct hb_tensor {
  void* data;
  hb_dtype dtype;
  int32_t ndim;
  int64_t shape[HB_MAX_DIMS];
} hb_tensor;
typedef struct hb_host_api {
  uint32_t abi_version;
  /* Runs the harness's reference kernel for `op` on host tensors (the plugin's fallback). */
  hb_status (*reference_op)(const char* op, const hb_tensor* inputs, int32_t n_inputs,
                            hb_tensor* outputs, int32_t n_outputs, const char* attrs_json);
  void (*log)(int32_t level, const char* message); /* 0 debug, 1 info, 2 warning, 3 error */
} hb_host_api;
typedef struct hb_backend {
  uint32_t abi_version;
  const char* name;
  void* self;
  hb_status (*init)(void* self, const hb_host_api* host, const char* options_json);
  /* The stack fingerprint: {"device":..,"driver":..,"runtime":..,"op_library":..,"compiler":..} */
  const char* (*stack_info_json)(void* self);
  int32_t (*supports)(void* self, const char* op, hb_dtype dtype); /* nonzero = yes */
  hb_status (*alloc)(void* self, size_t bytes, void** device_ptr);
  void (*free)(void* self, void* device_ptr);
  hb_status (*copy_to_device)(void* self, void* device_dst, const void* host_src, size_t bytes);
  hb_status (*copy_to_host)(void* self, void* host_dst, const void* device_src, size_t bytes);
  hb_status (*run_op)(void* self, const char* op, const hb_tensor* inputs, int32_t n_inputs,
                      hb_tensor* outputs, int32_t n_outputs, const char* attrs_json);
  hb_status (*synchronize)(void* self);
  hb_status (*memory_info)(void* self, size_t* free_bytes, size_t* total_bytes);
  const char* (*last_error)(void* self);
  void (*shutdown)(void* self);
  /* Version 2. Copies `bytes` from the host to `device_dst` starting `offset` bytes in (a
   * device_dst that alloc returned): the harness uploads a large weight in pieces, each as soon
   * as it is read, so the checkpoint's pages and the device copy are not both resident whole.
   * NULL (or a version 1 plugin): whole-tensor copies only. */
  hb_status (*copy_to_device_at)(void* self, void* device_dst, size_t offset, const void* host_src,
                                 size_t bytes);
} hb_backend;
#ifdef __cplusplus
extern "C"
#endif
    const hb_backend*
    hb_backend_entry(void);

#endif /* HARNESS_BACKEND_H_ */
