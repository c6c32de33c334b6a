// An msprobe (mindstudio-probe, Ascend's accuracy tool) dump directory read as probes, so that
// `harness compare-dumps` and `kind: dump` compare an engine's dump with dump_hf.py's golden
// without a hand-written name map. msprobe writes, per rank and step, a dump.json whose `data`
// maps "Module.<module path>.<Class>.forward.<call>" (level L0; "<framework API>.<call>" at L1)
// to the call's input_args / input_kwargs / output: per tensor its dtype, shape, Max, Min, Mean,
// Norm and, for task "tensor", data_name — a file under dump_tensor_data/ (.pt written by
// torch.save, or .npy). A module entry becomes the probe "<module path>" (HF's module name,
// as dump_hf.py names its probes) holding the first tensor of the call's output, for the first
// call (the prefill); "lm_head" is also the probe "logits".
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace h0::io {

struct TensorStats {
  double max = 0, min = 0, mean = 0, norm = 0;
};

struct MsprobeProbe {
  std::string name;   // "model.layers.0.self_attn"
  std::string entry;  // "Module.model.layers.0.self_attn.LlamaAttention.forward.0"
  tensor::Shape shape;
  std::optional<TensorStats> stats;  // when dump.json records them
  std::string tensor_file;           // task "tensor": the output tensor's file ("" when none)
  // The tensor from tensor_file, read now (a dump can be far larger than memory: read one at a
  // time). InputError naming the file when it is not a tensor file this harness reads.
  tensor::Tensor load() const;
};

struct MsprobeDump {
  std::string dump_json;                // the file read
  std::string task;                     // "tensor", "statistics", ...
  std::vector<MsprobeProbe> probes;     // in dump.json's order (the order of execution)
  std::map<std::string, size_t> index;  // probe name -> position in `probes`
  // nullptr if absent. O(log n).
  const MsprobeProbe* find(const std::string& name) const;
};

// Whether `dir` is (or holds, under step*/rank*/) an msprobe dump: a dump.json with a `data` map.
bool is_msprobe_dump(const std::string& dir);
// Reads the dump's dump.json (the first rank of the first step when `dir` is the dump's root);
// tensors stay in their files until loaded. Throws InputError naming the file and the place: a
// malformed dump.json, a data_name whose file is missing.
MsprobeDump read_msprobe_dump(const std::string& dir);

// Max, min, mean and L2 norm of a float tensor, accumulated in f64 (msprobe's statistics).
TensorStats stats_of(const tensor::Tensor& t);

}  // namespace h0::io
