// rope(x[T,H,Dh], positions[T]) -> y[T,H,Dh]: rotary position embedding.
// inv_freq[i] = 1 / theta^(2i / rd), i < rd/2 (rd = rotary_dim), modified by the HF
// `rope_scaling` object (linear, llama3, yarn) exactly as transformers' modeling_rope_utils,
// but in f64. Angles position · inv_freq[i] and their cos/sin are evaluated in f64 (an f32
// angle is off by ~position · 2^-24 rad, visible beyond a few thousand positions), scaled by
// the attention factor (yarn) and rounded to f32; the rotation itself is f32.
//   neox: pairs (x[i], x[i + rd/2])      gptj: pairs (x[2i], x[2i + 1])
//   y_a = x_a cos − x_b sin,  y_b = x_b cos + x_a sin;  dims >= rd pass through.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"

namespace h0::backends::cpu {
namespace {

struct RopeFrequencies {
  std::vector<double> inv_freq;  // rd / 2 entries
  double attention_factor = 1;   // multiplies cos and sin
};

double scaling_number(const OpCall& call, const Json& s, const char* key) {
  const auto it = s.find(key);
  require(call, it != s.end() && it->is_number(),
          std::string("attr scaling needs a number '") + key + "', got " + s.dump());
  return it->get<double>();
}

// A key that may be absent or null (Python's `.get(key)`); falsy values read as `fallback`
// where HF writes `.get(key) or default`.
double optional_number(const Json& s, const char* key, double fallback) {
  const auto it = s.find(key);
  return it != s.end() && it->is_number() ? it->get<double>() : fallback;
}

// HF _compute_llama3_parameters.
void apply_llama3(const OpCall& call, const Json& s, std::vector<double>& inv_freq) {
  const double factor = scaling_number(call, s, "factor");
  const double low_ff = scaling_number(call, s, "low_freq_factor");
  const double high_ff = scaling_number(call, s, "high_freq_factor");
  const double old_len = scaling_number(call, s, "original_max_position_embeddings");
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
}

double yarn_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// HF _compute_yarn_parameters, with original_max_position_embeddings from the scaling object.
void apply_yarn(const OpCall& call, const Json& s, double theta, int64_t rd, RopeFrequencies& f) {
  const double factor = scaling_number(call, s, "factor");
  const double orig_len = scaling_number(call, s, "original_max_position_embeddings");
  const double mscale = optional_number(s, "mscale", 0),
               mscale_all = optional_number(s, "mscale_all_dim", 0);
  if (s.contains("attention_factor") && s["attention_factor"].is_number()) {
    f.attention_factor = s["attention_factor"].get<double>();
  } else if (mscale != 0 && mscale_all != 0) {
    f.attention_factor = yarn_mscale(factor, mscale) / yarn_mscale(factor, mscale_all);
  } else {
    f.attention_factor = yarn_mscale(factor, 1);
  }
  double beta_fast = optional_number(s, "beta_fast", 32),
         beta_slow = optional_number(s, "beta_slow", 1);
  if (beta_fast == 0) beta_fast = 32;
  if (beta_slow == 0) beta_slow = 1;
  const bool truncate =
      !s.contains("truncate") || !s["truncate"].is_boolean() || s["truncate"].get<bool>();
  const double dim = static_cast<double>(rd);
  auto correction_dim = [&](double rotations) {
    return dim * std::log(orig_len / (rotations * 2 * std::numbers::pi)) / (2 * std::log(theta));
  };
  double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, dim - 1);
  if (low == high) high += 0.001;  // HF: prevent a singular ramp
  for (size_t i = 0; i < f.inv_freq.size(); ++i) {
    const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1 - ramp;  // weight of the unscaled frequency
    const double base = f.inv_freq[i];
    f.inv_freq[i] = base / factor * (1 - extrapolation) + base * extrapolation;
  }
}

RopeFrequencies rope_frequencies(const OpCall& call, double theta, int64_t rd,
                                 const Json& scaling) {
  RopeFrequencies f;
  f.inv_freq.resize(static_cast<size_t>(rd / 2));
  for (int64_t i = 0; i < rd / 2; ++i) {
    f.inv_freq[static_cast<size_t>(i)] =
        1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rd));
  }
  if (scaling.is_null()) return f;
  require(call, scaling.is_object(),
          "attr scaling must be an object or null, got " + scaling.dump());
  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    if (scaling.contains(key) && scaling[key].is_string()) {
      type = scaling[key].get<std::string>();
      break;
    }
  }
  if (type == "default") return f;
  if (type == "linear") {
    const double factor = scaling_number(call, scaling, "factor");
    for (double& v : f.inv_freq) v /= factor;
  } else if (type == "llama3") {
    apply_llama3(call, scaling, f.inv_freq);
  } else if (type == "yarn") {
    apply_yarn(call, scaling, theta, rd, f);
  } else {
    unsupported(call, "rope scaling type '" + type + "' (supported: linear, llama3, yarn)");
  }
  return f;
}

}  // namespace

void rope_kernel(const OpCall& call) {
  const hb_tensor &x = call.in[0], &positions = call.in[1];
  require_tensor(call, x, "x", {-1, -1, -1}, x.dtype);
  const int64_t t = x.shape[0], h = x.shape[1], dh = x.shape[2];
  require_index(call, positions, "positions", {t});
  require_like(call, call.out[0], "y", x);
  const int64_t rd =
      attr_null(call.attrs, "rotary_dim") ? dh : attr_i(call.attrs, "rotary_dim", dh);
  require(call, rd > 0 && rd <= dh && rd % 2 == 0,
          "attr rotary_dim must be even and in (0, Dh = " + std::to_string(dh) + "], got " +
              std::to_string(rd));
  const std::string style = attr_s(call.attrs, "style", "neox");
  require(call, style == "neox" || style == "gptj",
          "attr style must be neox or gptj, got '" + style + "'");
  const bool neox = style == "neox";
  const double theta = attr_f(call.attrs, "theta", 10000.0);
  require(call, theta > 0, "attr theta must be positive");
  const Json scaling =
      call.attrs.is_object() && call.attrs.contains("scaling") ? call.attrs["scaling"] : Json();
  const RopeFrequencies freqs = rope_frequencies(call, theta, rd, scaling);

  const int64_t half = rd / 2, row = h * dh;
  base::parallel_for(static_cast<size_t>(t), row_grain(row), [&](size_t, size_t b, size_t e) {
    std::vector<float> in(static_cast<size_t>(row)), out(static_cast<size_t>(row));
    std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    for (size_t tok = b; tok < e; ++tok) {
      const double pos = static_cast<double>(index_at(positions, static_cast<int64_t>(tok)));
      for (int64_t i = 0; i < half; ++i) {
        const double angle = pos * freqs.inv_freq[static_cast<size_t>(i)];
        cs[static_cast<size_t>(i)] = static_cast<float>(std::cos(angle) * freqs.attention_factor);
        sn[static_cast<size_t>(i)] = static_cast<float>(std::sin(angle) * freqs.attention_factor);
      }
      const size_t first = tok * static_cast<size_t>(row);
      load_f32(x, first, static_cast<size_t>(row), in.data());
      for (int64_t hd = 0; hd < h; ++hd) {
        const float* xr = in.data() + hd * dh;
        float* yr = out.data() + hd * dh;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t a = neox ? i : 2 * i, bb = neox ? i + half : 2 * i + 1;
          const float c = cs[static_cast<size_t>(i)], s = sn[static_cast<size_t>(i)];
          yr[a] = xr[a] * c - xr[bb] * s;
          yr[bb] = xr[bb] * c + xr[a] * s;
        }
        std::copy(xr + rd, xr + dh, yr + rd);
      }
      store_f32(out.data(), call.out[0], first, static_cast<size_t>(row));
    }
  });
}

}  // namespace h0::backends::cpu
