#include "model/exec/dump_file.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "io/safetensors_writer.h"

namespace h0::model {

void write_dump(const std::string& path, const std::vector<int64_t>& prompt,
                const ProbeRecorder& probes, const Generation& gen,
                const std::map<std::string, std::string>& metadata) {
  std::vector<io::NamedTensor> tensors;
  tensors.push_back(
      {"input_ids",
       tensor::Tensor::copy_of(tensor::DType::kI64, {int64_t(prompt.size())}, prompt.data())});
  nlohmann::json order = nlohmann::json::array();
  for (const auto& [name, value] : probes.probes()) {
    tensors.push_back({name, value});
    if (name != "logits") order.push_back(name);
  }
  if (probes.find("logits") == nullptr) tensors.push_back({"logits", gen.prompt_logits});
  if (!gen.ids.empty()) {
    const int64_t n = int64_t(gen.ids.size());
    std::vector<int64_t> ids;
    std::vector<float> logprobs;
    for (const TopK& t : gen.top5) {
      for (size_t i = 0; i < 5; ++i) {
        ids.push_back(i < t.ids.size() ? t.ids[i] : -1);
        logprobs.push_back(i < t.logprobs.size() ? float(t.logprobs[i]) : -INFINITY);
      }
    }
    tensors.push_back(
        {"greedy_ids", tensor::Tensor::copy_of(tensor::DType::kI64, {n}, gen.ids.data())});
    tensors.push_back(
        {"greedy_top5_ids", tensor::Tensor::copy_of(tensor::DType::kI64, {n, 5}, ids.data())});
    tensors.push_back({"greedy_top5_logprobs",
                       tensor::Tensor::copy_of(tensor::DType::kF32, {n, 5}, logprobs.data())});
  }
  std::map<std::string, std::string> meta = metadata;
  meta["probes"] = order.dump();
  io::write_safetensors(path, std::move(tensors), meta);
}

}  // namespace h0::model
