// The catalogue ops on a portable Device: which (op, dtype) pairs run natively, and run_op.
// Semantics, operand order and attrs are the catalogue's (DESIGN.md); each op mirrors the cpu
// backend's kernel (f32 math and accumulation, one rounding into the output dtype).
#pragma once

#include "device.h"

namespace h0p {

// Nonzero when `op` has kernels here and the device computes `dtype` (f32, f16, bf16;
// scaled_linear f32 only). sample, quantize and dequantize have none: the harness falls back.
int32_t device_supports(const Device& device, const char* op, hb_dtype dtype);

// Runs one op; inputs and outputs hold device handles. Throws OpError (HB_UNSUPPORTED for an
// op or dtype without kernels, HB_INVALID_ARGUMENT for bad shapes, attrs or ids).
void run_device_op(Device& device, const char* op, const hb_tensor* inputs, int32_t n_inputs,
                   hb_tensor* outputs, int32_t n_outputs, const char* attrs_json);

}  // namespace h0p
