// The probe dump format shared with golden/tools/dump_hf.py: one safetensors file per prompt
// holding `input_ids` [T] i64, every probe by HF module name (f32, [T, ...]), `logits` [T, V],
// and when generated `greedy_ids` [N] i64, `greedy_top5_ids` [N, 5] i64 and
// `greedy_top5_logprobs` [N, 5] f32; metadata `probes` lists the probe names in execution order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/exec/generation.h"
#include "model/exec/probes.h"

namespace h0::model {

// Writes `path`. `probes` must hold the prefill's probes and `logits`.
void write_dump(const std::string& path, const std::vector<int64_t>& prompt,
                const ProbeRecorder& probes, const Generation& gen,
                const std::map<std::string, std::string>& metadata);

}  // namespace h0::model
