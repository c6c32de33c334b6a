// RoPE inverse frequencies with the HF `rope_scaling` variants, computed on the host in f64.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace h0p {

struct RopeFrequencies {
  std::vector<double> inv_freq;  // rd / 2 entries
  double attention_factor = 1;   // multiplies cos and sin (yarn)
};

// inv_freq[i] = 1 / theta^(2i / rd), modified by `scaling` (null, or the HF rope_scaling
// object: rope_type or type linear, llama3 or yarn) exactly as transformers'
// modeling_rope_utils, in f64. Returns "" or what is wrong with `scaling` (an unknown type is
// reported with the prefix "unsupported: ").
std::string rope_frequencies(double theta, int64_t rd, const nlohmann::json& scaling,
                             RopeFrequencies* out);

}  // namespace h0p
