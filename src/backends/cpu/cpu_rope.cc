// rope(x[T,H,Dh], positions[T]) -> y[T,H,Dh]: rotary position embedding.
// inv_freq[i] = 1 / theta^(2i / rd), i < rd/2 (rd = rotary_dim), modified by the HF
// `rope_scaling` object (linear, llama3, yarn) exactly as transformers' modeling_rope_utils,
// but in f64. Angles position · inv_freq[i] and their cos/sin are evaluated in f64 (an f32
// angle is off by ~position · 2^-24 rad, visible beyond a few thousand positions), scaled by
// the attention factor (yarn) and rounded to f32; the rotation itself is f32.
//   neox: pairs (x[i], x[i + rd/2])      gptj: pairs (x[2i], x[2i + 1])
//   y_a = x_a cos − x_b sin,  y_b = x_b cos + x_a sin;  dims >= rd pass through.
// With attr mrope positions are [axes, T] and pair i turns by its axis' row (rope_mrope).
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "base/parallel.h"

namespace h0::backends::cpu {

void rope_kernel(const Operands& call) {
  const h0p::Rope r = h0p::rope_operands(call);
  const hb_tensor &x = call.in[0], &positions = call.in[1];
  const int64_t t = r.t, h = r.h, dh = r.dh, rd = r.rd;
  const bool neox = r.neox;
  const std::vector<int64_t>& axis = r.axis;
  const h0p::RopeFrequencies& freqs = r.freqs;

  const int64_t half = rd / 2, row = h * dh;
  base::parallel_for(static_cast<size_t>(t), row_grain(row), [&](size_t, size_t b, size_t e) {
    std::vector<float> in(static_cast<size_t>(row)), out(static_cast<size_t>(row));
    std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    for (size_t tok = b; tok < e; ++tok) {
      for (int64_t i = 0; i < half; ++i) {
        const int64_t a = axis.empty() ? 0 : axis[static_cast<size_t>(i)];
        const double pos =
            static_cast<double>(index_at(positions, a * t + static_cast<int64_t>(tok)));
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
