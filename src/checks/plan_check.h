// `kind: plan` — a model's memory plan on the platform's devices must fit (or must not), with at
// least the expected KV capacity. Runs on the host; no device is touched.
//
//   - id: llama-3.1-70b/tp8
//     kind: plan
//     model: tests/data/configs/llama-3.1-70b.json   # config.json or model dir (cwd, else repo
//     root) plan: {tp: 8, pp: 1, ep: 1}                   # dp defaults to ep/tp when ep > tp
//     weight_dtype: bf16                           # bf16 f16 f32 fp8 int8 int4
//     kv_dtype: bf16                               # or fp8
//     device_memory: 80GiB                         # default: the platform's device_memory
//     utilization: 0.9
//     max_model_len: 8192                          # default min(max_position_embeddings, 8192)
//     concurrency: 16
//     max_batch_tokens: 8192
//     block_size: 16
//     reserve: 1GiB
//     mtp: false                                   # load MTP layers too
//     expect: {fits: true, kv_tokens_min: 100000, kv_bytes_per_token: 327680}
// Metrics: weights_bytes_max_rank, kv_bytes_per_token (the model's), kv_bytes_per_token_rank_max,
// kv_tokens (per replica, min over ranks), required_tokens, headroom (bytes, min over ranks).
#pragma once

#include <string>

#include "checks/check.h"
#include "model/config/architecture.h"
#include "plan/parallel_plan.h"

namespace h0::checks {

CheckKind plan_check_kind();

// The case's `plan: {tp, pp, ep, dp}` (or another field of that form, e.g. `mesh`) (dp defaulted as
// `harness plan` does, the note in *dp_note), checked against the model. Fails at the YAML node of
// the dimension at fault.
plan::ParallelPlan parse_parallel_plan(const suite::Case& c, const model::Architecture& arch,
                                       std::string* dp_note, const char* field = "plan");

}  // namespace h0::checks
