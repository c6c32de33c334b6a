// rope: rotary position embedding, as HF transformers applies it.
//   rope(x[T,H,Dh], positions[T]) = y[T,H,Dh]; the first rd = rotary_dim dims rotate, the rest
//   pass through. inv_freq[i] = 1 / theta^(2i/rd), i in [0, rd/2), then adjusted by `scaling`
//   (the HF rope_scaling object; its type is `rope_type` or legacy `type`):
//     linear: inv_freq / factor
//     llama3: HF _compute_llama3_parameters (factor, low_freq_factor, high_freq_factor,
//             original_max_position_embeddings)
//     yarn:   HF _compute_yarn_parameters (factor, original_max_position_embeddings required;
//             beta_fast 32, beta_slow 1, truncate true, mscale, mscale_all_dim,
//             attention_factor); the attention factor multiplies cos and sin
//     default: none (as null)
//   angle = positions[t] · inv_freq[i]; each pair rotates by it:
//     neox (HF rotate_half): (x[i], x[i + rd/2]); gptj (interleaved): (x[2i], x[2i+1]);
//     (a, b) -> (a·cos − b·sin, b·cos + a·sin).
//   mrope (Qwen2-VL's multimodal RoPE; null = none): {section: [s_0, ..., s_{n-1}], layout};
//   positions are then [n, T] (one row per axis: t, h, w) and pair i turns by the position of
//   its axis a(i), sum(section) = rd/2:
//     chunked (Qwen2-VL, Qwen2.5-VL apply_multimodal_rotary_pos_emb): the pairs in consecutive
//       sections, a(i) = the section i falls in; inv_freq over all rd as above;
//     interleaved (Qwen3-VL apply_interleaved_mrope, 3 axes): a(i) = 1 if i % 3 == 1 and
//       i < 3·s_1, 2 if i % 3 == 2 and i < 3·s_2, else 0;
//     per_axis (the Qwen2-VL vision tower's 2D RoPE): chunked, but each section is a rope of its
//       own: the k-th pair of section a has inv_freq 1 / theta^(k / s_a) (scaling must be null).
// All in f64; 3 flops per rotated element (cos and sin are per (t, i), not counted).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "base/yarn_range.h"
#include "ops/op_list.h"
#include "ops/op_util.h"

namespace h0::ops {
namespace {

using util::desc;

struct RopeFrequencies {
  std::vector<double> inv_freq;  // rd / 2 entries
  double attention_factor = 1;   // multiplies cos and sin (yarn)
};

// Number `key` of the scaling object; nullopt if absent or null, which is an InputError naming
// the key if `required`.
std::optional<double> scaling_number(const Json& s, const std::string& type, const char* key,
                                     bool required) {
  const OpDef& op = rope_op();
  if (!s.contains(key) || s.at(key).is_null()) {
    if (required) {
      util::fail(op, "attr 'scaling' (rope_type '" + type + "') needs key '" + key + "'");
    }
    return std::nullopt;
  }
  if (!s.at(key).is_number()) {
    util::fail(op, "attr 'scaling' key '" + std::string(key) + "' must be a number, got " +
                       s.at(key).dump());
  }
  return s.at(key).get<double>();
}

// HF get_mscale: 0.1·m·ln(s) + 1 for s > 1, else 1.
double yarn_mscale(double scale, double mscale = 1) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// inv_freq[i] = 1/theta^(2i/rd) adjusted by attr `scaling`. Throws InputError for an unknown
// rope_type or a missing key.
RopeFrequencies rope_frequencies(const Json& attrs, int64_t rd) {
  const OpDef& op = rope_op();
  const double theta = util::attr_f(attrs, "theta");
  if (!(theta > 0)) {
    util::fail(op, "attr 'theta' must be positive, got " + attrs.at("theta").dump());
  }
  RopeFrequencies f;
  for (int64_t i = 0; i < rd / 2; ++i) {
    f.inv_freq.push_back(1.0 /
                         std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rd)));
  }
  const Json& s = attrs.at("scaling");
  if (s.is_null()) return f;
  const char* type_key = s.contains("rope_type") ? "rope_type" : "type";
  if (!s.contains(type_key)) {
    util::fail(op, "attr 'scaling' needs key 'rope_type' (or legacy 'type')");
  }
  if (!s.at(type_key).is_string()) {
    util::fail(op, std::string("attr 'scaling' key '") + type_key + "' must be a string, got " +
                       s.at(type_key).dump());
  }
  const std::string type = s.at(type_key).get<std::string>();
  if (type == "default") return f;
  if (type == "linear") {
    const double factor = *scaling_number(s, type, "factor", true);
    for (double& v : f.inv_freq) v /= factor;
    return f;
  }
  if (type == "llama3") {
    const double factor = *scaling_number(s, type, "factor", true);
    const double low_ff = *scaling_number(s, type, "low_freq_factor", true);
    const double high_ff = *scaling_number(s, type, "high_freq_factor", true);
    const double orig = *scaling_number(s, type, "original_max_position_embeddings", true);
    const double low_wl = orig / low_ff, high_wl = orig / high_ff;
    for (double& v : f.inv_freq) {
      const double wavelen = 2 * std::numbers::pi / v;
      const double inv_l = wavelen > low_wl ? v / factor : v;
      const double smooth = (orig / wavelen - low_ff) / (high_ff - low_ff);
      const double smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l;
      const bool medium = !(wavelen < high_wl) && !(wavelen > low_wl);
      v = medium ? smoothed : inv_l;
    }
    return f;
  }
  if (type == "yarn") {
    const double factor = *scaling_number(s, type, "factor", true);
    const double orig = *scaling_number(s, type, "original_max_position_embeddings", true);
    const double beta_fast = scaling_number(s, type, "beta_fast", false).value_or(32);
    const double beta_slow = scaling_number(s, type, "beta_slow", false).value_or(1);
    const auto mscale = scaling_number(s, type, "mscale", false);
    const auto mscale_all_dim = scaling_number(s, type, "mscale_all_dim", false);
    bool truncate = true;
    if (s.contains("truncate") && !s.at("truncate").is_null()) {
      if (!s.at("truncate").is_boolean()) {
        util::fail(
            op, "attr 'scaling' key 'truncate' must be a boolean, got " + s.at("truncate").dump());
      }
      truncate = s.at("truncate").get<bool>();
    }
    const auto [low, high] =
        yarn_correction_range(static_cast<double>(rd), orig, theta, beta_fast, beta_slow, truncate);
    for (size_t i = 0; i < f.inv_freq.size(); ++i) {
      const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
      const double extrapolation_factor = 1 - ramp;
      const double extrap = f.inv_freq[i], interp = extrap / factor;
      f.inv_freq[i] = interp * (1 - extrapolation_factor) + extrap * extrapolation_factor;
    }
    if (const auto af = scaling_number(s, type, "attention_factor", false)) {
      f.attention_factor = *af;
    } else if (mscale && *mscale != 0 && mscale_all_dim && *mscale_all_dim != 0) {
      f.attention_factor = yarn_mscale(factor, *mscale) / yarn_mscale(factor, *mscale_all_dim);
    } else {
      f.attention_factor = yarn_mscale(factor);
    }
    return f;
  }
  util::fail(op, "attr 'scaling' has unknown rope_type '" + type +
                     "' (expected default, linear, llama3 or yarn)");
}

// The rotary dim: attr rotary_dim or Dh; even and in [2, Dh].
int64_t rotary_dim(const Json& attrs, int64_t head_dim) {
  const int64_t rd = util::attr_i_or(attrs, "rotary_dim", head_dim);
  if (rd < 2 || rd > head_dim || rd % 2 != 0) {
    util::fail(rope_op(), "attr 'rotary_dim' must be even and in [2, Dh = " +
                              std::to_string(head_dim) + "], got " + std::to_string(rd));
  }
  return rd;
}

// Attr `mrope`, checked: per rotated pair its axis (the row of positions) and, for per_axis, its
// own inverse frequency. Empty axes: no mrope (positions [T]).
struct Mrope {
  std::vector<int64_t> axis;
  std::vector<double> inv_freq;  // per_axis only
};

Mrope read_mrope(const Json& attrs, int64_t rd) {
  const OpDef& op = rope_op();
  Mrope m;
  if (!attrs.contains("mrope") || attrs.at("mrope").is_null()) return m;
  const Json& o = attrs.at("mrope");
  if (!o.contains("section") || !o.at("section").is_array() || o.at("section").empty()) {
    util::fail(op, "attr 'mrope' needs key 'section', a non-empty list of pair counts");
  }
  std::vector<int64_t> section;
  int64_t pairs = 0;
  for (const Json& v : o.at("section")) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0) {
      util::fail(op, "attr 'mrope' key 'section' holds " + v.dump() + ", not a pair count");
    }
    section.push_back(v.get<int64_t>());
    pairs += section.back();
  }
  if (pairs != rd / 2) {
    util::fail(op, "attr 'mrope' sections sum to " + std::to_string(pairs) +
                       " pairs, not rd / 2 = " + std::to_string(rd / 2));
  }
  const std::string layout =
      o.contains("layout") && o.at("layout").is_string() ? o.at("layout").get<std::string>() : "";
  if (layout != "chunked" && layout != "interleaved" && layout != "per_axis") {
    util::fail(op, "attr 'mrope' key 'layout' must be chunked, interleaved or per_axis");
  }
  if (layout == "interleaved") {
    if (section.size() != 3)
      util::fail(op, "attr 'mrope' layout interleaved needs 3 sections (t, h, w)");
    for (int64_t i = 0; i < rd / 2; ++i) {
      m.axis.push_back(i % 3 == 1 && i < 3 * section[1]   ? 1
                       : i % 3 == 2 && i < 3 * section[2] ? 2
                                                          : 0);
    }
    return m;
  }
  if (layout == "per_axis" && !attrs.at("scaling").is_null()) {
    util::fail(op, "attr 'mrope' layout per_axis takes no 'scaling'");
  }
  const double theta = util::attr_f(attrs, "theta");
  for (size_t a = 0; a < section.size(); ++a) {
    for (int64_t k = 0; k < section[a]; ++k) {
      m.axis.push_back(static_cast<int64_t>(a));
      if (layout == "per_axis")
        m.inv_freq.push_back(
            std::pow(theta, -static_cast<double>(k) / static_cast<double>(section[a])));
    }
  }
  return m;
}

// The number of position rows attr `mrope` asks for (1 without it).
int64_t position_axes(const Json& attrs) {
  if (!attrs.contains("mrope") || !attrs.at("mrope").is_object() ||
      !attrs.at("mrope").contains("section") || !attrs.at("mrope").at("section").is_array()) {
    return 1;
  }
  return std::max<int64_t>(1, static_cast<int64_t>(attrs.at("mrope").at("section").size()));
}

// x is (T, H, Dh); positions is (T), or (n, T) with attr mrope.
void rope_reference(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                    const Json& attrs) {
  const int64_t t = in[0]->dim(0), h = in[0]->dim(1), dh = in[0]->dim(2);
  const int64_t rd = rotary_dim(attrs, dh), half = rd / 2;
  RopeFrequencies f = rope_frequencies(attrs, rd);
  const Mrope m = read_mrope(attrs, rd);
  if (!m.inv_freq.empty()) f.inv_freq = m.inv_freq;
  const bool neox = util::attr_s(attrs, "style") == "neox";
  const auto x = util::to_f64(*in[0]);
  const auto pos = util::to_f64(*in[1]);
  std::vector<double> y = x;  // dims >= rd pass through
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      const int64_t axis = m.axis.empty() ? 0 : m.axis[static_cast<size_t>(i)];
      const double angle =
          pos[static_cast<size_t>(axis * t + r)] * f.inv_freq[static_cast<size_t>(i)];
      const double c = std::cos(angle) * f.attention_factor,
                   s = std::sin(angle) * f.attention_factor;
      const int64_t ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
      for (int64_t head = 0; head < h; ++head) {
        const size_t base = static_cast<size_t>((r * h + head) * dh);
        const double a = x[base + static_cast<size_t>(ia)], b = x[base + static_cast<size_t>(ib)];
        y[base + static_cast<size_t>(ia)] = a * c - b * s;
        y[base + static_cast<size_t>(ib)] = b * c + a * s;
      }
    }
  }
  util::from_f64(y, out[0]);
}

}  // namespace

const OpDef& rope_op() {
  static const OpDef op = {
      .name = "rope",
      .inputs = {{"x", OperandKind::kFloat}, {"positions", OperandKind::kIndex}},
      .outputs = {{"y", OperandKind::kFloat}},
      .attrs = {{"theta", AttrType::kFloat, "10000", nullptr, "base of the inverse frequencies"},
                {"style", AttrType::kString, "\"neox\"", "neox|gptj",
                 "neox: rotate halves (HF rotate_half); gptj: interleaved pairs"},
                {"rotary_dim", AttrType::kInt, "null", nullptr,
                 "leading dims that rotate; null = Dh"},
                {"scaling", AttrType::kObject, "null", nullptr,
                 "HF rope_scaling object (linear, llama3, yarn); null = none"},
                {"mrope", AttrType::kObject, "null", nullptr,
                 "multimodal RoPE {section: [pairs per axis], layout: chunked|interleaved|"
                 "per_axis}: positions [axes, T]; null = none"}},
      .dims = {"T", "H", "Dh"},
      .dim_defaults = {},
      .tolerance = ToleranceClass::kTranscendental,
      .operands =
          [](const Dims& dims, const Json& attrs, DType dtype, DType index_dtype,
             const std::set<std::string>&) {
            const OpDef& self = rope_op();
            const int64_t t = util::dim(self, dims, "T"), h = util::dim(self, dims, "H"),
                          dh = util::dim(self, dims, "Dh");
            const int64_t axes = position_axes(attrs);
            return std::vector<TensorDesc>{
                desc(dtype, {t, h, dh}),
                axes > 1 ? desc(index_dtype, {axes, t}) : desc(index_dtype, {t})};
          },
      .infer =
          [](const std::vector<TensorDesc>& in, const Json& attrs) {
            const OpDef& self = rope_op();
            const TensorDesc &x = in[0], &pos = in[1];
            util::require_shape(self, x.shape.size() == 3, "x", x, "[T, H, Dh]");
            const int64_t rd = rotary_dim(attrs, x.shape[2]);
            rope_frequencies(attrs, rd);  // validates theta and scaling
            const Mrope m = read_mrope(attrs, rd);
            if (m.axis.empty()) {
              util::require_shape(self, pos.shape == Shape{x.shape[0]}, "positions", pos,
                                  "[T] = [" + std::to_string(x.shape[0]) + "]");
            } else {
              const int64_t axes = position_axes(attrs);
              util::require_shape(
                  self, pos.shape == Shape{axes, x.shape[0]}, "positions", pos,
                  "[axes, T] = [" + std::to_string(axes) + ", " + std::to_string(x.shape[0]) + "]");
            }
            return std::vector<TensorDesc>{desc(x.dtype, x.shape)};
          },
      .cost =
          [](const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
             const Json& attrs) {
            const Shape& x = in[0].shape;
            const double rd = static_cast<double>(util::attr_i_or(attrs, "rotary_dim", x[2]));
            return Cost{3 * static_cast<double>(x[0] * x[1]) * rd,
                        util::bytes_of(in) + util::bytes_of(out), 1};
          },
      .reference = [](const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out,
                      const Json& a) { rope_reference(in, out, a); },
      .default_inputs =
          [](const Dims&, const Json&) {
            return Json{{"x", {{"normal", {{"mean", 0}, {"std", 1}}}}},
                        {"positions", {{"arange", {{"start", 0}, {"step", 1}}}}}};
          },
  };
  return op;
}

}  // namespace h0::ops
