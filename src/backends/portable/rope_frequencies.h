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

// Attr `mrope` (null, or {section: [pairs per axis], layout: chunked|interleaved|per_axis}, as
// ops/rope_op.cc defines it): per rotated pair the row of positions that turns it into `axis`
// (left empty for null: positions [T]), `axes` the number of rows; per_axis also replaces
// out->inv_freq by each section's own frequencies. Call after rope_frequencies. Returns "" or
// what is wrong with `mrope`.
std::string rope_mrope(const nlohmann::json& mrope, double theta, int64_t rd, bool scaled,
                       RopeFrequencies* out, std::vector<int64_t>* axis, int64_t* axes);

}  // namespace h0p
