// HF modeling_rope_utils' _compute_linear/llama3/yarn_parameters in f64 (the same numbers the
// cpu backend and the reference use).
#include "rope_frequencies.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "../../base/yarn_range.h"  // header-only: no link to the harness library

namespace h0p {
namespace {

using Json = nlohmann::json;

// A required number of the scaling object; "" or the error.
std::string number(const Json& s, const char* key, double* out) {
  const auto it = s.find(key);
  if (it == s.end() || !it->is_number())
    return std::string("attr scaling needs a number '") + key + "', got " + s.dump();
  *out = it->get<double>();
  return "";
}

// A key that may be absent or null (Python's `.get(key)`).
double optional_number(const Json& s, const char* key, double fallback) {
  const auto it = s.find(key);
  return it != s.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string apply_llama3(const Json& s, std::vector<double>& inv_freq) {
  double factor, low_ff, high_ff, old_len;
  for (auto [key, out] : {std::pair{"factor", &factor},
                          {"low_freq_factor", &low_ff},
                          {"high_freq_factor", &high_ff},
                          {"original_max_position_embeddings", &old_len}}) {
    if (std::string e = number(s, key, out); !e.empty()) return e;
  }
  const double low_wavelen = old_len / low_ff, high_wavelen = old_len / high_ff;
  for (double& f : inv_freq) {
    const double wavelen = 2 * std::numbers::pi / f;
    if (wavelen > low_wavelen) {
      f = f / factor;
    } else if (!(wavelen < high_wavelen)) {
      const double smooth = (old_len / wavelen - low_ff) / (high_ff - low_ff);
      f = (1 - smooth) * f / factor + smooth * f;
    }
  }
  return "";
}

double yarn_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

std::string apply_yarn(const Json& s, double theta, int64_t rd, RopeFrequencies* f) {
  double factor, orig_len;
  if (std::string e = number(s, "factor", &factor); !e.empty()) return e;
  if (std::string e = number(s, "original_max_position_embeddings", &orig_len); !e.empty())
    return e;
  const double mscale = optional_number(s, "mscale", 0),
               mscale_all = optional_number(s, "mscale_all_dim", 0);
  if (s.contains("attention_factor") && s["attention_factor"].is_number()) {
    f->attention_factor = s["attention_factor"].get<double>();
  } else if (mscale != 0 && mscale_all != 0) {
    f->attention_factor = yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all);
  } else {
    f->attention_factor = yarn_mscale(factor, 1);
  }
  double beta_fast = optional_number(s, "beta_fast", 32),
         beta_slow = optional_number(s, "beta_slow", 1);
  if (beta_fast == 0) beta_fast = 32;
  if (beta_slow == 0) beta_slow = 1;
  const bool truncate =
      !s.contains("truncate") || !s["truncate"].is_boolean() || s["truncate"].get<bool>();
  const auto [low, high] = h0::yarn_correction_range(static_cast<double>(rd), orig_len, theta,
                                                     beta_fast, beta_slow, truncate);
  for (size_t i = 0; i < f->inv_freq.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1 - ramp;  // weight of the unscaled frequency
    const double base = f->inv_freq[i];
    f->inv_freq[i] = base / factor * (1 - extrapolation) + base * extrapolation;
  }
  return "";
}

}  // namespace

std::string rope_frequencies(double theta, int64_t rd, const Json& scaling, RopeFrequencies* f) {
  f->inv_freq.resize(static_cast<size_t>(rd / 2));
  for (int64_t i = 0; i < rd / 2; ++i)
    f->inv_freq[static_cast<size_t>(i)] =
        1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rd));
  if (scaling.is_null()) return "";
  if (!scaling.is_object()) return "attr scaling must be an object or null, got " + scaling.dump();
  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    if (scaling.contains(key) && scaling[key].is_string()) {
      type = scaling[key].get<std::string>();
      break;
    }
  }
  if (type == "default") return "";
  if (type == "linear") {
    double factor;
    if (std::string e = number(scaling, "factor", &factor); !e.empty()) return e;
    for (double& v : f->inv_freq) v /= factor;
    return "";
  }
  if (type == "llama3") return apply_llama3(scaling, f->inv_freq);
  if (type == "yarn") return apply_yarn(scaling, theta, rd, f);
  return "unsupported: rope scaling type '" + type + "' (supported: linear, llama3, yarn)";
}

std::string rope_mrope(const Json& mrope, double theta, int64_t rd, bool scaled, RopeFrequencies* f,
                       std::vector<int64_t>* axis, int64_t* axes) {
  axis->clear();
  *axes = 1;
  if (mrope.is_null()) return "";
  if (!mrope.is_object() || !mrope.contains("section") || !mrope["section"].is_array() ||
      mrope["section"].empty()) {
    return "attr mrope needs key section, a non-empty list of pair counts";
  }
  std::vector<int64_t> section;
  int64_t pairs = 0;
  for (const Json& v : mrope["section"]) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      return "attr mrope section holds " + v.dump() + ", not a pair count";
    section.push_back(v.get<int64_t>());
    pairs += section.back();
  }
  if (pairs != rd / 2)
    return "attr mrope sections sum to " + std::to_string(pairs) +
           " pairs, not rd / 2 = " + std::to_string(rd / 2);
  const std::string layout = mrope.contains("layout") && mrope["layout"].is_string()
                                 ? mrope["layout"].get<std::string>()
                                 : "";
  *axes = static_cast<int64_t>(section.size());
  if (layout == "interleaved") {  // Qwen3-VL: t, h, w by pair index mod 3 within 3·section
    if (section.size() != 3) return "attr mrope layout interleaved needs 3 sections (t, h, w)";
    for (int64_t i = 0; i < rd / 2; ++i)
      axis->push_back(i % 3 == 1 && i < 3 * section[1]   ? 1
                      : i % 3 == 2 && i < 3 * section[2] ? 2
                                                         : 0);
    return "";
  }
  if (layout != "chunked" && layout != "per_axis")
    return "attr mrope layout must be chunked, interleaved or per_axis, got '" + layout + "'";
  if (layout == "per_axis" && scaled) return "attr mrope layout per_axis takes no scaling";
  for (size_t a = 0; a < section.size(); ++a) {
    for (int64_t k = 0; k < section[a]; ++k) {
      if (layout == "per_axis") {
        f->inv_freq[axis->size()] =
            std::pow(theta, -static_cast<double>(k) / static_cast<double>(section[a]));
      }
      axis->push_back(static_cast<int64_t>(a));
    }
  }
  return "";
}

}  // namespace h0p
