// `kind: op` — one operator on the platform under test, against a golden.
//
//   - id: rmsnorm
//     kind: op
//     op: rmsnorm
//     attrs: {eps: 1.0e-6}
//     matrix: {dtype: [f32, bf16], shape: [[1, 64], [7, 4096]]}   # shape lists the op's dims
//     dims: {T: 7, D: 4096}                  # or by name
//     with: [bias]                           # optional operands to pass
//     index_dtype: i32                       # ids and positions (default i64)
//     inputs: {seed: 7, x: {normal: {std: 100}}}   # per-operand distributions (input_synth.h)
//     golden: golden/ops/rmsnorm.safetensors # or `reference` (the host reference kernel)
//     tolerance: {preset: auto, cosine_min: 0.9999}
//     warmup: 1, repeats: 5                  # profile: first call + steady-state repetitions
//     dynamic_shapes: [[1, 4096], [512, 4096]]   # first-call vs steady time per shape
//     fallback: decompose                    # none | decompose | host, when the op is unsupported
//     timeout: 60s
//     perf_threshold: 0.10                   # `harness diff` flags this check's timing past 10%
// Golden files hold `<case id>/<output name>` tensors and, in their metadata,
// `inputs:<case id>` = sha256 of the inputs they were made from (golden/tools/gen_ops.py).
#pragma once

#include "checks/check.h"

namespace h0::checks {

CheckKind op_check_kind();

}  // namespace h0::checks
