// The `faulty` plugin: a complete platform plugin built against harness_backend.h alone, the
// example a vendor copies. It runs every op through the harness's host reference kernel
// (host->reference_op) in plain host memory, then injects one fault chosen by the options, so
// the harness can prove it catches what it claims to catch:
//
//   {"op": "rmsnorm", "fault": "scale", "magnitude": 0.01}   outputs * (1 + magnitude)
//   {"op": "softmax", "fault": "nan"}                          output element `index` (0) = NaN
//   {"op": "linear", "fault": "bf16_truncate"}                 f32 outputs truncated to bf16
//   precision
//   {"op": "rmsnorm", "fault": "amplify", "magnitude": 0.01}   outputs * (1 + magnitude * s), s
//       in [-1, 1] a hash of every input byte: the same inputs give the same outputs, inputs one
//       ULP apart outputs a percent apart (a kernel unstable under small input changes)
//   {"op": "*", "fault": "truncate"}   bf16 and f16 outputs computed in f32 and stored rounded
//       toward zero instead of to nearest even (a cast kernel that truncates): every element
//       within an ULP, all of them leaning toward zero
//   {"op": "rope", "fault": "slow", "factor": 1.3}             takes factor x as long
//   {"op": "attention", "fault": "crash"}                      abort()
//   {"op": "attention", "fault": "hang"}                       never returns
//   {"op": "scaled_linear", "fault": "wrong_block"}            block row r of the weight is
//       scaled by w_scale's row r + 1 (cyclically; a single block row: the next block column),
//       what an off-by-one block index in a block-quantized GEMM produces
//   {"op": "paged_attention", "fault": "drop_attr", "attr": "sliding_window"}   the kernel never
//       sees that attr (its default applies), as a plugin written before the attr existed
//   {"op": "paged_attention", "fault": "drop_inputs", "keep": 4}   the kernel sees only the first
//       `keep` inputs (the optional ones after them dropped: GPT-OSS's sinks, expert biases)
//   {"op": "gated_delta_rule", "fault": "set_attr", "attr": "l2norm_qk", "value": false}   the
//       kernel sees that attr with that value (JSON text): a kernel that hard-codes it (no L2 norm)
//   {"op": "causal_conv1d", "fault": "conv_state_lag"}   state_out holds the K - 1 inputs ending
//       one token early (an off-by-one in the saved window: the next call convolves a stale token)
//   {"op": "gated_delta_rule", "fault": "decay_after"}   each step decays the state after the
//       delta update instead of before it: S <- e^g (S + k (x) beta (v - S^T k)), o = S^T q
//   {"op": "lightning_indexer", "fault": "tie_high"}   equal scores go to the higher key id (a
//       top-k that does not keep its sort stable): the same scores, another selection at a tie
//   {"op": "lightning_indexer", "fault": "score_jitter", "magnitude": 1e-6}   each score is off by
//   a
//       relative error of up to `magnitude` (fixed per query and key): a kernel that rounds
//       otherwise (tiny magnitudes: near-ties picked the other way) or computes otherwise (large)
//   {"op": "rope", "fault": "scaling_lost_past", "at": 256}   rows at position >= `at` rotate
//       without the `scaling` attr (default `at`: the scaling's original_max_position_embeddings):
//       a kernel that switches to an unscaled table at the wrong place. Only long prompts show it
//   {"op": "paged_attention", "fault": "block_wrap", "blocks": 64}   block-table entry i >=
//       `blocks` reads entry i mod `blocks` (a table indexed by a field of log2(blocks) bits):
//       only a context past `blocks` pages shows it
//   {"op": "paged_attention", "fault": "window_off_by_one"}   a sliding_window attr > 0 is
//       taken as one more (the query at p sees p - window too): shows once a sequence is longer
//       than its window
//   {"op": "*", "fault": "prefill_drops_state"}   gated_delta_rule and causal_conv1d ignore their
//       incoming state (zeros) when given more than one token: a prefill path that starts every
//       chunk from nothing while decode carries the state. Only a chunked prefill shows it
// "op" may be "*" (every op); "call": N faults only the Nth call (0-based) of that op; "rank": R
// faults only the process a launcher started as rank R (OMPI_COMM_WORLD_RANK, PMI_RANK, RANK);
// {"fault": "none"} (the default) is a faithful backend. Several faults at once:
//   {"faults": [{"op": "rmsnorm", "fault": "scale"}, {"op": "softmax", "fault": "slow"}]}
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "harness_backend.h"

namespace {

struct Fault {
  std::string op = "*";
  std::string fault = "none";
  double magnitude = 1e-2;
  double factor = 1.3;
  long call = -1;     // -1: every call
  long index = 0;     // element set to NaN
  long calls = 0;     // calls of the targeted op so far
  std::string attr;   // drop_attr: the attr left out
  long keep = -1;     // drop_inputs: the inputs kept
  std::string value;  // set_attr: the attr's value, JSON text
  long at = -1;       // scaling_lost_past: the first unscaled position (-1: the scaling's own)
  long blocks = 64;   // block_wrap: the table's entries before it wraps
};

struct Faulty {
  const hb_host_api* host = nullptr;
  std::vector<Fault> faults;
  std::string last_error;
};

Faulty g_faulty;

// Reads "key": value from a flat JSON object (enough for our options; a real plugin would use
// its favourite JSON library). Returns false if the key is absent.
// Where the JSON value starting at `p` ends: past a string's closing quote, an object's or
// list's matching bracket (strings inside skipped), else at the next , } ] or space. nullptr if
// it does not end.
const char* value_end(const char* p) {
  if (*p == '"') {
    for (const char* e = p + 1; *e != '\0'; ++e) {
      if (*e == '\\' && e[1] != '\0')
        ++e;
      else if (*e == '"')
        return e + 1;
    }
    return nullptr;
  }
  if (*p == '{' || *p == '[') {
    int depth = 0;
    bool in_string = false;
    for (const char* e = p; *e != '\0'; ++e) {
      if (in_string) {
        if (*e == '\\' && e[1] != '\0')
          ++e;
        else if (*e == '"')
          in_string = false;
      } else if (*e == '"') {
        in_string = true;
      } else if (*e == '{' || *e == '[') {
        ++depth;
      } else if ((*e == '}' || *e == ']') && --depth == 0) {
        return e + 1;
      }
    }
    return nullptr;
  }
  const char* e = p;
  while (*e != '\0' && *e != ',' && *e != '}' && *e != ']' && *e != ' ') ++e;
  return e;
}

bool json_value(const char* json, const char* key, std::string* out) {
  const std::string needle = std::string("\"") + key + "\"";
  const char* p = strstr(json, needle.c_str());
  if (p == nullptr) return false;
  p += needle.size();
  while (*p == ' ' || *p == ':') ++p;
  const char* end = value_end(p);
  if (end == nullptr) return false;
  if (*p == '"') {
    out->assign(p + 1, end - 1);  // a string's text, unquoted
  } else {
    out->assign(p, end);  // a number, bool, null, object or list as JSON text
  }
  return true;
}

// bf16 and f16 <-> f32, enough for the faults (round-to-nearest-even on the way back).
float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
float f16_to_f32(uint16_t h) {
  const int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -24);
  if (exp == 31) return mant ? NAN : sign * INFINITY;
  return sign * std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
}
uint16_t f32_to_f16(float f) {
  // Simple and exact enough for a fault injector: via the nearest representable by ldexp.
  if (std::isnan(f)) return 0x7E00;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (a >= 65520.0f) return sign | 0x7C00;
  if (a < std::ldexp(1.0f, -14))
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  int e;
  const float m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const uint32_t q = static_cast<uint32_t>(std::nearbyint(std::ldexp(m, 11)));  // 11 bits
  const uint32_t bits = (static_cast<uint32_t>(e + 14) << 10) + (q - 0x400);  // carry lands in exp
  return sign | static_cast<uint16_t>(bits);
}

int64_t numel(const hb_tensor& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

// Applies `fn` to every element of a float tensor as f64, writing the result back.
template <typename Fn>
void map_floats(hb_tensor& t, Fn fn) {
  const int64_t n = numel(t);
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case HB_F64: {
        double* p = static_cast<double*>(t.data) + i;
        *p = fn(*p, i);
        break;
      }
      case HB_F32: {
        float* p = static_cast<float*>(t.data) + i;
        *p = static_cast<float>(fn(*p, i));
        break;
      }
      case HB_BF16: {
        uint16_t* p = static_cast<uint16_t*>(t.data) + i;
        *p = f32_to_bf16(static_cast<float>(fn(bf16_to_f32(*p), i)));
        break;
      }
      case HB_F16: {
        uint16_t* p = static_cast<uint16_t*>(t.data) + i;
        *p = f32_to_f16(static_cast<float>(fn(f16_to_f32(*p), i)));
        break;
      }
      default:
        return;  // integer outputs (ids) are left alone
    }
  }
}

void inject(const Fault& o, hb_tensor* outputs, int32_t n_outputs) {
  for (int32_t k = 0; k < n_outputs; ++k) {
    hb_tensor& t = outputs[k];
    if (o.fault == "scale") {
      map_floats(t, [&](double v, int64_t) { return v * (1.0 + o.magnitude); });
    } else if (o.fault == "nan") {
      map_floats(t, [&](double v, int64_t i) { return i == o.index ? NAN : v; });
    } else if (o.fault == "bf16_truncate") {
      // What a kernel that stores f32 results through a truncating bf16 path would produce.
      map_floats(t, [](double v, int64_t) {
        float f32 = static_cast<float>(v);
        uint32_t u;
        memcpy(&u, &f32, 4);
        u &= 0xFFFF0000u;
        memcpy(&f32, &u, 4);
        return static_cast<double>(f32);
      });
    }
  }
}

// The f32 value `f` as bf16 or f16 rounded toward zero.
uint16_t truncated(float f, hb_dtype dtype) {
  if (dtype == HB_BF16) {
    if (std::isnan(f)) return f32_to_bf16(f);
    uint32_t u;
    memcpy(&u, &f, 4);
    return static_cast<uint16_t>(u >> 16);
  }
  uint16_t h = f32_to_f16(f);  // nearest; one step back where that went up in magnitude
  if (std::isnan(f)) return h;
  if ((h & 0x7FFF) == 0x7C00 && std::isfinite(f)) return (h & 0x8000) | 0x7BFF;
  if ((h & 0x7FFF) != 0 && std::fabs(f16_to_f32(h)) > std::fabs(f)) --h;
  return h;
}

// The op on f32 copies of its bf16/f16 inputs, its bf16/f16 outputs stored truncated. False
// (and nothing written) when the op has no such output or will not run so (an out_dtype attr).
bool run_truncated(const hb_host_api* host, const char* op, const hb_tensor* in, int32_t n_in,
                   hb_tensor* out, int32_t n_out, const char* attrs) {
  const auto narrow = [](hb_dtype d) { return d == HB_BF16 || d == HB_F16; };
  if (attrs != nullptr && strstr(attrs, "\"out_dtype\"") != nullptr) return false;  // dequantize
  bool any = false;
  for (int32_t k = 0; k < n_out; ++k) any = any || narrow(out[k].dtype);
  if (!any) return false;
  std::vector<std::vector<float>> buffers;
  buffers.reserve(static_cast<size_t>(n_in + n_out));
  std::vector<hb_tensor> wide_in(in, in + n_in), wide_out(out, out + n_out);
  for (hb_tensor& t : wide_in) {
    if (!narrow(t.dtype)) continue;
    std::vector<float>& b = buffers.emplace_back(static_cast<size_t>(numel(t)));
    const uint16_t* src = static_cast<const uint16_t*>(t.data);
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = t.dtype == HB_BF16 ? bf16_to_f32(src[i]) : f16_to_f32(src[i]);
    t.data = b.data();
    t.dtype = HB_F32;
  }
  for (hb_tensor& t : wide_out) {
    if (!narrow(t.dtype)) continue;
    t.data = buffers.emplace_back(static_cast<size_t>(numel(t))).data();
    t.dtype = HB_F32;
  }
  if (host->reference_op(op, wide_in.data(), n_in, wide_out.data(), n_out, attrs) != HB_OK)
    return false;
  for (int32_t k = 0; k < n_out; ++k) {
    if (!narrow(out[k].dtype)) continue;  // written in place
    const float* src = static_cast<const float*>(wide_out[k].data);
    uint16_t* dst = static_cast<uint16_t*>(out[k].data);
    const int64_t n = numel(out[k]);
    for (int64_t i = 0; i < n; ++i) dst[i] = truncated(src[i], out[k].dtype);
  }
  return true;
}

// scaled_linear's w_scale (input 2, f32 [rows, cols]) with every block row replaced by the next
// one, cyclically (a single block row: every block column by the next). `storage` keeps the
// shifted copy alive for the call.
void shift_scale_blocks(hb_tensor* scale, std::vector<float>* storage) {
  if (scale->dtype != HB_F32 || scale->ndim != 2) return;
  const int64_t rows = scale->shape[0], cols = scale->shape[1];
  const float* src = static_cast<const float*>(scale->data);
  storage->assign(src, src + rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      (*storage)[r * cols + c] =
          rows > 1 ? src[((r + 1) % rows) * cols + c] : src[r * cols + (c + 1) % cols];
    }
  }
  scale->data = storage->data();
}

// `attrs` (a flat JSON object, as the harness writes it: no spaces) without "key": value.
std::string without_attr(const std::string& attrs, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const size_t at = attrs.find(needle);
  if (at == std::string::npos) return attrs;
  const char* value_at = attrs.c_str() + at + needle.size();
  const char* value_stop = value_end(value_at);
  size_t end = value_stop == nullptr ? attrs.size() : size_t(value_stop - attrs.c_str());
  if (end < attrs.size() && attrs[end] == ',') return attrs.substr(0, at) + attrs.substr(end + 1);
  size_t begin = at;  // the last key: drop the comma before it
  if (begin > 0 && attrs[begin - 1] == ',') --begin;
  return attrs.substr(0, begin) + attrs.substr(end);
}

// Element i of a float tensor as f64 (0 for other dtypes).
double float_at(const hb_tensor& t, int64_t i) {
  switch (t.dtype) {
    case HB_F64:
      return static_cast<const double*>(t.data)[i];
    case HB_F32:
      return static_cast<const float*>(t.data)[i];
    case HB_BF16:
      return bf16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    case HB_F16:
      return f16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    default:
      return 0;
  }
}

// `attrs` with "key": value (JSON text) in place of whatever it had.
std::string with_attr(const std::string& attrs, const std::string& key, const std::string& value) {
  std::string rest = without_attr(attrs, key);
  const size_t close = rest.rfind('}');
  if (close == std::string::npos) return "{\"" + key + "\":" + value + "}";
  const bool empty = rest.find_first_not_of(" {", 0) == close;
  return rest.substr(0, close) + (empty ? "" : ",") + "\"" + key + "\":" + value + "}";
}

// causal_conv1d's state_out (outputs[1], [C, K-1]) as the window ending one token early:
// column i = input T - 2 + i of state ++ x (inputs[2] [C, K-1], inputs[0] [T, C]).
void lag_conv_state(const hb_tensor* in, hb_tensor* out) {
  const hb_tensor &x = in[0], &state = in[2];
  const int64_t t = x.shape[0], c = x.shape[1], k1 = state.shape[1];
  auto xp = [&](int64_t i, int64_t ch) {
    return i < k1 ? float_at(state, ch * k1 + i) : float_at(x, (i - k1) * c + ch);
  };
  map_floats(out[1], [&](double, int64_t e) { return xp(t - 1 + e % k1, e / k1); });
}

// gated_delta_rule with the decay after the update (see the top of the file), written over the
// reference's outputs. Attrs are read from the flat JSON the harness passes.
void delta_decay_after(const hb_tensor* in, hb_tensor* out, const std::string& attrs) {
  const hb_tensor &q = in[0], &k = in[1], &v = in[2], &g = in[3], &beta = in[4], &state = in[5];
  const int64_t t = q.shape[0], hk = q.shape[1], dk = q.shape[2], hv = v.shape[1], dv = v.shape[2];
  std::string val;
  const bool l2 = !(json_value(attrs.c_str(), "l2norm_qk", &val) && val == "false");
  double eps = 1e-6, scale = 1.0 / std::sqrt(double(dk));
  if (json_value(attrs.c_str(), "l2norm_eps", &val) && val != "null") eps = atof(val.c_str());
  if (json_value(attrs.c_str(), "scale", &val) && val != "null") scale = atof(val.c_str());
  std::vector<double> s(static_cast<size_t>(hv * dk * dv)), o(static_cast<size_t>(t * hv * dv));
  for (size_t i = 0; i < s.size(); ++i) s[i] = float_at(state, int64_t(i));
  std::vector<double> qr(static_cast<size_t>(dk)), kr(static_cast<size_t>(dk)),
      delta(static_cast<size_t>(dv));
  for (int64_t h = 0; h < hv; ++h) {
    double* sh = &s[static_cast<size_t>(h * dk * dv)];
    const int64_t kh = h / (hv / hk);
    for (int64_t r = 0; r < t; ++r) {
      double nq = 0, nk = 0;
      for (int64_t i = 0; i < dk; ++i) {
        qr[i] = float_at(q, (r * hk + kh) * dk + i), kr[i] = float_at(k, (r * hk + kh) * dk + i);
        nq += qr[i] * qr[i], nk += kr[i] * kr[i];
      }
      for (int64_t i = 0; i < dk; ++i) {
        if (l2) qr[i] /= std::sqrt(nq + eps), kr[i] /= std::sqrt(nk + eps);
        qr[i] *= scale;
      }
      const double b = float_at(beta, r * hv + h), decay = std::exp(float_at(g, r * hv + h));
      for (int64_t j = 0; j < dv; ++j) {
        double kv = 0;
        for (int64_t i = 0; i < dk; ++i) kv += sh[i * dv + j] * kr[i];
        delta[j] = b * (float_at(v, (r * hv + h) * dv + j) - kv);
      }
      for (int64_t i = 0; i < dk; ++i) {
        for (int64_t j = 0; j < dv; ++j)
          sh[i * dv + j] = decay * (sh[i * dv + j] + kr[i] * delta[j]);
      }
      for (int64_t j = 0; j < dv; ++j) {
        double acc = 0;
        for (int64_t i = 0; i < dk; ++i) acc += sh[i * dv + j] * qr[i];
        o[static_cast<size_t>((r * hv + h) * dv + j)] = acc;
      }
    }
  }
  map_floats(out[0], [&](double, int64_t e) { return o[static_cast<size_t>(e)]; });
  map_floats(out[1], [&](double, int64_t e) { return s[static_cast<size_t>(e)]; });
}

// An attr of the flat JSON the harness passes as a number; `fallback` when absent or null.
double attr_number(const std::string& attrs, const char* key, double fallback) {
  std::string val;
  if (!json_value(attrs.c_str(), key, &val) || val == "null") return fallback;
  return atof(val.c_str());
}

// lightning_indexer's selection (the op's scores, see src/ops/sparse_attention_ops.cc), over the
// reference's indices (outputs[0], [T, topk] i32): with ties to the higher key id (`ties_high`)
// and each score times 1 + jitter·u, u in [-1, 1) fixed by the query and the key.
void indexer_reselect(const hb_tensor* in, hb_tensor* out, const std::string& attrs, bool ties_high,
                      double jitter) {
  const hb_tensor &q = in[0], &k = in[1], &w = in[2], &table = in[3];
  const int64_t t = q.shape[0], h = q.shape[1], d = q.shape[2], b = k.shape[1],
                topk = out[0].shape[1];
  const int64_t len =
      static_cast<int64_t>(attr_number(attrs, "context_len", double(table.shape[0] * b)));
  const int64_t q_offset = static_cast<int64_t>(attr_number(attrs, "q_offset", double(len - t)));
  const double scale = attr_number(attrs, "scale", 1.0 / std::sqrt(double(d)));
  std::string val;
  const bool causal = !(json_value(attrs.c_str(), "causal", &val) && val == "false");
  const auto* blocks = static_cast<const int32_t*>(table.data);
  auto* idx = static_cast<int32_t*>(out[0].data);
  for (int64_t r = 0; r < t; ++r) {
    int64_t visible = causal ? q_offset + r + 1 : len;
    visible = visible < 0 ? 0 : (visible > len ? len : visible);
    std::vector<double> score(static_cast<size_t>(visible), 0.0);
    std::vector<int32_t> keys(static_cast<size_t>(visible));
    for (int64_t j = 0; j < visible; ++j) {
      const int64_t slot = blocks[j / b] * b + j % b;
      for (int64_t head = 0; head < h; ++head) {
        double dot = 0;
        for (int64_t i = 0; i < d; ++i)
          dot += float_at(q, (r * h + head) * d + i) * float_at(k, slot * d + i);
        score[j] += float_at(w, r * h + head) * std::max(0.0, scale * dot);
      }
      if (jitter != 0) {
        const uint64_t u = (static_cast<uint64_t>(r) * 0x9E3779B97F4A7C15ull) ^
                           (static_cast<uint64_t>(j) * 0xC2B2AE3D27D4EB4Full);
        score[j] *= 1.0 + jitter * (double((u ^ (u >> 29)) % 2000001) / 1000000.0 - 1.0);
      }
      keys[j] = static_cast<int32_t>(j);
    }
    std::stable_sort(keys.begin(), keys.end(), [&](int32_t x, int32_t y) {
      return score[x] > score[y] || (ties_high && score[x] == score[y] && x > y);
    });
    for (int64_t i = 0; i < topk; ++i)
      idx[r * topk + i] = i < visible ? keys[static_cast<size_t>(i)] : -1;
  }
}

size_t dtype_bytes(hb_dtype d) {
  return d == HB_F64 || d == HB_I64    ? 8
         : d == HB_F32 || d == HB_I32  ? 4
         : d == HB_BF16 || d == HB_F16 ? 2
                                       : 1;
}

// block_wrap: the block table (i32) with entry i >= blocks replaced by entry i mod blocks.
void wrap_block_table(hb_tensor* table, long blocks, std::vector<int32_t>* storage) {
  const int64_t n = numel(*table);
  const auto* src = static_cast<const int32_t*>(table->data);
  storage->assign(src, src + n);
  for (int64_t i = blocks; i < n; ++i) (*storage)[size_t(i)] = src[i % blocks];
  table->data = storage->data();
}

// prefill_drops_state: the input seen as zeros.
void zero_input(hb_tensor* t, std::vector<unsigned char>* storage) {
  storage->assign(size_t(numel(*t)) * dtype_bytes(t->dtype), 0);
  t->data = storage->data();
}

// scaling_lost_past: rope's rows at position >= at recomputed without the `scaling` attr.
void rope_unscaled_past(const hb_host_api* host, const hb_tensor* in, int32_t n_in, hb_tensor* out,
                        const std::string& attrs, long at) {
  std::string val;
  if (at < 0) {
    if (!json_value(attrs.c_str(), "original_max_position_embeddings", &val)) return;
    at = atol(val.c_str());
  }
  const hb_tensor& pos = in[1];
  if (pos.ndim != 1 || (pos.dtype != HB_I32 && pos.dtype != HB_I64)) return;  // M-RoPE: as is
  hb_tensor plain = out[0];
  std::vector<unsigned char> bytes(size_t(numel(out[0])) * dtype_bytes(out[0].dtype));
  plain.data = bytes.data();
  if (host->reference_op("rope", in, n_in, &plain, 1, without_attr(attrs, "scaling").c_str()) !=
      HB_OK)
    return;
  const int64_t t = pos.shape[0];
  const size_t row = bytes.size() / size_t(t > 0 ? t : 1);
  for (int64_t r = 0; r < t; ++r) {
    const int64_t p = pos.dtype == HB_I32 ? static_cast<const int32_t*>(pos.data)[r]
                                          : static_cast<const int64_t*>(pos.data)[r];
    if (p >= at)
      memcpy(static_cast<unsigned char*>(out[0].data) + size_t(r) * row,
             bytes.data() + size_t(r) * row, row);
  }
}

// Reads one fault's keys from the flat JSON object text `json`.
Fault parse_fault(const std::string& json) {
  Fault f;
  std::string v;
  if (json_value(json.c_str(), "op", &v)) f.op = v;
  if (json_value(json.c_str(), "fault", &v)) f.fault = v;
  if (json_value(json.c_str(), "magnitude", &v)) f.magnitude = atof(v.c_str());
  if (json_value(json.c_str(), "factor", &v)) f.factor = atof(v.c_str());
  if (json_value(json.c_str(), "call", &v)) f.call = atol(v.c_str());
  if (json_value(json.c_str(), "index", &v)) f.index = atol(v.c_str());
  if (json_value(json.c_str(), "attr", &v)) f.attr = v;
  if (json_value(json.c_str(), "keep", &v)) f.keep = atol(v.c_str());
  if (json_value(json.c_str(), "value", &v)) f.value = v;
  if (json_value(json.c_str(), "at", &v)) f.at = atol(v.c_str());
  if (json_value(json.c_str(), "blocks", &v)) f.blocks = atol(v.c_str());
  if (json_value(json.c_str(), "rank", &v)) {
    long mine = 0;  // this process's rank as its launcher numbered it; 0 when none did
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK"}) {
      if (const char* r = getenv(name)) {
        mine = atol(r);
        break;
      }
    }
    if (atol(v.c_str()) != mine) f.fault = "none";  // another rank's fault
  }
  return f;
}

hb_status init(void* self, const hb_host_api* host, const char* options_json) {
  Faulty& f = *static_cast<Faulty*>(self);
  f.host = host;
  f.faults.clear();
  const std::string json = options_json != nullptr ? options_json : "{}";
  const size_t list = json.find("\"faults\"");
  if (list == std::string::npos) {
    f.faults.push_back(parse_fault(json));
  } else {
    // Each {...} inside the list is one fault (no nesting in a fault's keys).
    for (size_t open = json.find('{', list); open != std::string::npos;
         open = json.find('{', open + 1)) {
      const size_t close = json.find('}', open);
      if (close == std::string::npos) break;
      f.faults.push_back(parse_fault(json.substr(open, close - open + 1)));
      open = close;
    }
  }
  static const char* kFaults[] = {"none",
                                  "scale",
                                  "nan",
                                  "bf16_truncate",
                                  "slow",
                                  "crash",
                                  "hang",
                                  "wrong_block",
                                  "drop_attr",
                                  "drop_inputs",
                                  "set_attr",
                                  "conv_state_lag",
                                  "decay_after",
                                  "tie_high",
                                  "score_jitter",
                                  "truncate",
                                  "amplify",
                                  "scaling_lost_past",
                                  "block_wrap",
                                  "prefill_drops_state",
                                  "window_off_by_one"};
  for (const Fault& fault : f.faults) {
    bool known = false;
    for (const char* k : kFaults) known = known || fault.fault == k;
    if (!known) {
      f.last_error =
          "unknown fault '" + fault.fault +
          "' (none, scale, nan, bf16_truncate, slow, crash, hang, wrong_block, "
          "drop_attr, drop_inputs, "
          "set_attr, conv_state_lag, decay_after, tie_high, score_jitter, truncate, amplify, "
          "scaling_lost_past, block_wrap, prefill_drops_state, window_off_by_one)";
      return HB_INVALID_ARGUMENT;
    }
    if (fault.fault == "drop_attr" && fault.attr.empty()) {
      f.last_error = "fault drop_attr needs \"attr\": the attr to leave out";
      return HB_INVALID_ARGUMENT;
    }
    if (fault.fault == "set_attr" && (fault.attr.empty() || fault.value.empty())) {
      f.last_error =
          "fault set_attr needs \"attr\" and \"value\": the attr and the value the kernel sees";
      return HB_INVALID_ARGUMENT;
    }
    if (fault.fault == "drop_inputs" && fault.keep < 0) {
      f.last_error = "fault drop_inputs needs \"keep\": how many inputs the kernel sees (>= 0)";
      return HB_INVALID_ARGUMENT;
    }
    const std::string msg = "faulty: op " + fault.op + ", fault " + fault.fault;
    host->log(1, msg.c_str());
  }
  return HB_OK;
}

const char* stack_info_json(void*) {
  // fault_injector: the dashboard says its failures are the ones it was asked to inject.
  return R"({"device":"host","driver":"none","runtime":"faulty plugin","op_library":"h0 host reference + fault injection","fault_injector":true,"compiler":")" __VERSION__
         R"("})";
}

// Every op but linear_widen, as a plugin written before that op was catalogued: the harness then
// converts a bf16 checkpoint's weights on load and runs `linear` (faults aimed at linear hit every
// projection), and an op check of linear_widen runs decomposed over this plugin's linear.
int32_t supports(void*, const char* op, hb_dtype dtype) {
  if (strcmp(op, "linear_widen") == 0) return 0;
  return dtype == HB_F64 || dtype == HB_F32 || dtype == HB_BF16 || dtype == HB_F16;
}

hb_status alloc(void*, size_t bytes, void** ptr) {
  *ptr = malloc(bytes == 0 ? 1 : bytes);
  return *ptr != nullptr ? HB_OK : HB_OUT_OF_MEMORY;
}

void release(void*, void* ptr) { free(ptr); }

hb_status copy(void*, void* dst, const void* src, size_t bytes) {
  memcpy(dst, src, bytes);
  return HB_OK;
}

hb_status copy_at(void*, void* dst, size_t offset, const void* src, size_t bytes) {
  memcpy(static_cast<char*>(dst) + offset, src, bytes);
  return HB_OK;
}

// The faults that apply to this call of `op` (each counts the calls of its own op).
std::vector<const Fault*> active_faults(Faulty& f, const char* op) {
  std::vector<const Fault*> active;
  for (Fault& fault : f.faults) {
    if (fault.op != "*" && fault.op != op) continue;
    if (fault.fault != "none" && (fault.call < 0 || fault.calls == fault.call))
      active.push_back(&fault);
    ++fault.calls;
  }
  return active;
}

// What the kernel is called with: the inputs (some pointing into the buffers here, which hold
// altered copies), their count and the attrs.
struct KernelCall {
  std::vector<hb_tensor> inputs;
  int32_t n_in = 0;
  std::string attrs;
  std::vector<float> shifted;
  std::vector<int32_t> wrapped;
  std::vector<unsigned char> zeros;
};

// Applies the faults that alter what the kernel sees: its inputs, their count, its attrs.
void fault_inputs(const std::vector<const Fault*>& active, const char* op, KernelCall* c) {
  std::vector<hb_tensor>& inputs = c->inputs;
  int32_t& n_in = c->n_in;  // drop_inputs lowers it for the faults after it too
  for (const Fault* fault : active) {
    if (fault->fault == "wrong_block" && n_in >= 3) shift_scale_blocks(&inputs[2], &c->shifted);
    if (fault->fault == "block_wrap" && strcmp(op, "paged_attention") == 0 && n_in >= 4 &&
        inputs[3].dtype == HB_I32 && fault->blocks > 0)
      wrap_block_table(&inputs[3], fault->blocks, &c->wrapped);
    if (fault->fault == "prefill_drops_state" && n_in >= 1 && inputs[0].shape[0] > 1) {
      const int state = strcmp(op, "gated_delta_rule") == 0 && n_in == 6 ? 5
                        : strcmp(op, "causal_conv1d") == 0 && n_in >= 3  ? 2
                                                                         : -1;
      if (state >= 0) zero_input(&inputs[size_t(state)], &c->zeros);
    }
    if (fault->fault == "drop_attr") c->attrs = without_attr(c->attrs, fault->attr);
    if (fault->fault == "set_attr") c->attrs = with_attr(c->attrs, fault->attr, fault->value);
    if (fault->fault == "window_off_by_one") {
      std::string window;
      if (json_value(c->attrs.c_str(), "sliding_window", &window) && atol(window.c_str()) > 0)
        c->attrs = with_attr(c->attrs, "sliding_window", std::to_string(atol(window.c_str()) + 1));
    }
    if (fault->fault == "drop_inputs" && fault->keep < n_in) n_in = int32_t(fault->keep);
  }
}

// amplify: a scale fault whose magnitude leans by a hash of the inputs' bytes (FNV-1a) into
// [-1, 1] of the fault's, so that a small input change moves the outputs far.
void amplify(const Fault& fault, const hb_tensor* inputs, int32_t n_in, hb_tensor* out,
             int32_t n_out) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the inputs' bytes
  for (int32_t k = 0; k < n_in; ++k) {
    size_t bytes = static_cast<size_t>(numel(inputs[k]));
    bytes *= inputs[k].dtype == HB_F64 || inputs[k].dtype == HB_I64    ? 8
             : inputs[k].dtype == HB_F32 || inputs[k].dtype == HB_I32  ? 4
             : inputs[k].dtype == HB_BF16 || inputs[k].dtype == HB_F16 ? 2
                                                                       : 1;
    const unsigned char* b = static_cast<const unsigned char*>(inputs[k].data);
    for (size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  const double lean = double(h % 2001) / 1000.0 - 1.0;
  Fault scaled = fault;
  scaled.fault = "scale";
  scaled.magnitude = fault.magnitude * lean;
  inject(scaled, out, n_out);
}

// Applies the faults that act after the kernel ran: a slower call (`took` stretched from
// `start`), or outputs altered.
void fault_outputs(const hb_host_api* host, const std::vector<const Fault*>& active, const char* op,
                   const KernelCall& c, hb_tensor* out, int32_t n_out,
                   std::chrono::steady_clock::time_point start,
                   std::chrono::steady_clock::duration took) {
  const hb_tensor* inputs = c.inputs.data();
  const int32_t n_in = c.n_in;
  for (const Fault* fault : active) {
    if (fault->fault == "slow") {
      const auto until = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     took * fault->factor);
      while (std::chrono::steady_clock::now() < until) {
      }
    } else if (fault->fault == "conv_state_lag") {
      if (strcmp(op, "causal_conv1d") == 0 && n_in >= 3 && n_out == 2) lag_conv_state(inputs, out);
    } else if (fault->fault == "decay_after") {
      if (strcmp(op, "gated_delta_rule") == 0 && n_in == 6 && n_out == 2)
        delta_decay_after(inputs, out, c.attrs);
    } else if (fault->fault == "amplify") {
      amplify(*fault, inputs, n_in, out, n_out);
    } else if (fault->fault == "scaling_lost_past") {
      if (strcmp(op, "rope") == 0 && n_in >= 2 && n_out == 1)
        rope_unscaled_past(host, inputs, n_in, out, c.attrs, fault->at);
    } else if (fault->fault == "block_wrap" || fault->fault == "prefill_drops_state" ||
               fault->fault == "window_off_by_one") {
      // applied to the inputs (fault_inputs)
    } else if (fault->fault == "tie_high") {
      if (strcmp(op, "lightning_indexer") == 0 && n_in == 4 && n_out == 1)
        indexer_reselect(inputs, out, c.attrs, true, 0);
    } else if (fault->fault == "score_jitter") {
      if (strcmp(op, "lightning_indexer") == 0 && n_in == 4 && n_out == 1) {
        indexer_reselect(inputs, out, c.attrs, false, fault->magnitude);
      }
    } else {
      inject(*fault, out, n_out);
    }
  }
}

hb_status run_op(void* self, const char* op, const hb_tensor* in, int32_t n_in, hb_tensor* out,
                 int32_t n_out, const char* attrs) {
  Faulty& f = *static_cast<Faulty*>(self);
  const std::vector<const Fault*> active = active_faults(f, op);
  for (const Fault* fault : active) {
    if (fault->fault == "crash") abort();
    if (fault->fault == "hang") {
      for (;;) pause();
    }
  }
  KernelCall c;
  c.inputs.assign(in, in + n_in);
  c.n_in = n_in;
  c.attrs = attrs != nullptr ? attrs : "{}";
  fault_inputs(active, op, &c);
  const auto start = std::chrono::steady_clock::now();
  bool truncate = false;
  for (const Fault* fault : active) truncate = truncate || fault->fault == "truncate";
  const hb_status s =
      truncate && run_truncated(f.host, op, c.inputs.data(), c.n_in, out, n_out, c.attrs.c_str())
          ? HB_OK
          : f.host->reference_op(op, c.inputs.data(), c.n_in, out, n_out, c.attrs.c_str());
  if (s != HB_OK) {
    f.last_error = std::string("reference_op failed for ") + op;
    return s;
  }
  const auto took = std::chrono::steady_clock::now() - start;
  fault_outputs(f.host, active, op, c, out, n_out, start, took);
  return HB_OK;
}

hb_status synchronize(void*) { return HB_OK; }
hb_status memory_info(void*, size_t*, size_t*) { return HB_UNSUPPORTED; }
const char* last_error(void* self) { return static_cast<Faulty*>(self)->last_error.c_str(); }
void shutdown(void*) {}

const hb_backend kBackend = {
    HB_ABI_VERSION, "faulty",    &g_faulty, &init,    &stack_info_json, &supports,
    &alloc,         &release,    &copy,     &copy,    &run_op,          &synchronize,
    &memory_info,   &last_error, &shutdown, &copy_at,
};

}  // namespace

// The one symbol a plugin exports (everything else is hidden: -fvisibility=hidden).
extern "C" __attribute__((visibility("default"))) const hb_backend* hb_backend_entry(void) {
  return &kBackend;
}
