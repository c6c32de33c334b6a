// Qwen2.5-VL's vision tower in the executor (transformers'
// Qwen2_5_VisionTransformerPretrainedModel): the Conv3d patch embedding as one linear over the
// processor's flattened patches → the patches put in window order → blocks (RMSNorm, attention with
// the 2-D rope over (h, w), per window or over the whole image in fullatt_block_indexes, RMSNorm,
// SwiGLU) → the PatchMerger (RMSNorm, merge² rows as one, linear, GELU, linear) → the merged tokens
// put back in image order.
#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "base/error.h"
#include "model/exec/executor.h"
#include "model/exec/host_glue.h"
#include "model/vision/qwen_vision.h"

namespace h0::model {

using backend::DeviceTensor;

namespace {

// Per patch row of the processor's pixel_values [patches, K]: its sum and sum of squares (f64,
// then f32), the probe gen_qwen_vl.py records in place of the pixels themselves
// (the processor's host output: a wrong mean or std shows here first).
tensor::Tensor patch_stats(const tensor::Tensor& pixel_values) {
  const tensor::Tensor px = pixel_values.dtype() == tensor::DType::kF32
                                ? pixel_values
                                : pixel_values.to(tensor::DType::kF32);
  const int64_t rows = px.dim(0), k = px.numel() / std::max<int64_t>(rows, 1);
  tensor::Tensor out = tensor::Tensor::zeros(tensor::DType::kF32, {rows, 2});
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, squares = 0;
    for (int64_t j = 0; j < k; ++j) {
      const double v = px.data_as<float>()[r * k + j];
      sum += v;
      squares += v * v;
    }
    out.mutable_data_as<float>()[2 * r] = float(sum);
    out.mutable_data_as<float>()[2 * r + 1] = float(squares);
  }
  return out;
}

}  // namespace

tensor::Tensor Executor::qwen_image_features(const tensor::Tensor& pixel_values, const ImageGrid& g,
                                             ProbeRecorder* probes) {
  const Vision& v = *arch_.vision;
  const int64_t m = v.spatial_merge_size, mu = m * m, P = g.patches(), D = v.hidden_size;
  const int64_t K = v.num_channels * v.temporal_patch_size * v.patch_size * v.patch_size;
  if (g.t < 1 || g.h <= 0 || g.w <= 0 || g.h % m != 0 || g.w % m != 0) {
    throw InputError("image_grid_thw", std::to_string(g.t) + "x" + std::to_string(g.h) + "x" +
                                           std::to_string(g.w) + " is not a grid of whole " +
                                           std::to_string(m) + "x" + std::to_string(m) +
                                           " merge units");
  }
  if (pixel_values.shape() != tensor::Shape{P, K}) {
    throw InputError("pixel_values", "must be [" + std::to_string(P) + ", " + std::to_string(K) +
                                         "] (grid " + std::to_string(g.t) + "x" +
                                         std::to_string(g.h) + "x" + std::to_string(g.w) +
                                         "), got " + tensor::shape_string(pixel_values.shape()));
  }
  // Under pipeline parallelism the tower runs on the first stage, the only one that embeds.
  if (options_.sharding != nullptr && options_.sharding->pp_rank > 0) return tensor::Tensor();
  Step step;
  step.probes = probes;
  if (probes != nullptr && probes->wants("pixel_values.patch_stats"))
    probes->record("pixel_values.patch_stats", patch_stats(pixel_values));
  // Conv3d with kernel = stride = (temporal, patch, patch) over one patch each: x · W[D, K]ᵀ (the
  // weight flattened to [D, K] on load, model_weights.cc).
  DeviceTensor x = backend_.upload(glue::to_dtype(pixel_values, options_.dtype));
  x = linear(-1, TensorRole::kVisPatchEmbed, x, false);
  probe(step, "model.visual.patch_embed", x);

  const WindowOrder order = qwen_window_order(g, m, v.window_size / m / v.patch_size);
  const std::vector<int64_t> perm = qwen_patch_permutation(order, m);
  x = backend_.upload(glue::gather_rows(backend_.download(x), perm));
  const std::vector<int64_t> pos = qwen_patch_positions(g, m);
  std::vector<int64_t> pos_windowed(size_t(2 * P));
  for (int64_t i = 0; i < P; ++i) {
    pos_windowed[size_t(i)] = pos[size_t(perm[size_t(i)])];
    pos_windowed[size_t(P + i)] = pos[size_t(P + perm[size_t(i)])];
  }
  const DeviceTensor positions =
      backend_.upload(tensor::Tensor::copy_of(tensor::DType::kI64, {2, P}, pos_windowed.data()));
  // Full attention sees one frame at a time (cu_seqlens: h·w per t); windows stay inside a frame.
  const std::vector<int64_t> frames(size_t(g.t), g.h * g.w);
  for (int64_t l = 0; l < v.num_layers; ++l) {
    const bool full =
        std::find(v.fullatt_blocks.begin(), v.fullatt_blocks.end(), l) != v.fullatt_blocks.end();
    x = qwen_vision_block(l, std::move(x), positions, full ? frames : order.window_patches, step);
  }

  DeviceTensor h = ops_.run1(op_.vision_norm, {&x, &weights_->get(-1, TensorRole::kVisMergerNorm)});
  h.reshape({P / mu, mu * D});
  h = linear(-1, TensorRole::kVisMerger1, h);
  h = ops_.run1(op_.gelu, {&h});
  h = linear(-1, TensorRole::kVisMerger2, h);
  probe(step, "model.visual.merger", h);
  // Back to image order: merged row j is unit order.units[j].
  const tensor::Tensor merged = backend_.download(h);
  std::vector<int64_t> inverse(order.units.size());
  for (size_t j = 0; j < order.units.size(); ++j) inverse[size_t(order.units[j])] = int64_t(j);
  if (options_.self_test_fault == "qwen_window_not_inverted") {
    for (size_t j = 0; j < inverse.size(); ++j) inverse[j] = int64_t(j);
  }
  const DeviceTensor features = backend_.upload(glue::gather_rows(merged, inverse));
  probe(step, "model.visual", features);
  return to_host_f32(features);
}

DeviceTensor Executor::qwen_vision_block(int64_t l, DeviceTensor x, const DeviceTensor& positions,
                                         const std::vector<int64_t>& segments, Step& step) {
  const Vision& v = *arch_.vision;
  const std::string p = "model.visual.blocks." + std::to_string(l);
  const int64_t S = x.shape()[0], D = v.hidden_size, heads = v.num_heads, hd = D / heads;
  DeviceTensor h = ops_.run1(op_.vision_norm, {&x, &weights_->get(l, TensorRole::kVisNorm1)});
  probe(step, p + ".norm1", h);
  // qkv's outputs are q | k | v, each heads × hd.
  auto [q_host, kv_host] =
      glue::split_last(backend_.download(linear(l, TensorRole::kVisAttnQKV, h)), D);
  auto [k_host, v_host] = glue::split_last(kv_host, D);
  DeviceTensor q = backend_.upload(q_host.reshape({S, heads, hd})),
               k = backend_.upload(k_host.reshape({S, heads, hd}));
  q = ops_.run1(op_.vision_rope, {&q, &positions});
  k = ops_.run1(op_.vision_rope, {&k, &positions});
  DeviceTensor o;
  if (segments.size() == 1) {
    const DeviceTensor val = backend_.upload(v_host.reshape({S, heads, hd}));
    o = ops_.run1(op_.vision_attention, {&q, &k, &val});
  } else {  // one attention per window (or frame): rows [begin, begin + n)
    const tensor::Tensor qh = backend_.download(q), kh = backend_.download(k),
                         vh = v_host.reshape({S, heads, hd});
    tensor::Tensor out = tensor::Tensor::zeros(qh.dtype(), {S, heads, hd});
    int64_t begin = 0;
    for (int64_t n : segments) {
      const DeviceTensor qs = backend_.upload(qh.slice_rows(begin, begin + n).clone()),
                         ks = backend_.upload(kh.slice_rows(begin, begin + n).clone()),
                         vs = backend_.upload(vh.slice_rows(begin, begin + n).clone());
      const tensor::Tensor os = backend_.download(ops_.run1(op_.vision_attention, {&qs, &ks, &vs}));
      std::memcpy(
          static_cast<std::byte*>(out.mutable_data()) + size_t(begin) * (out.nbytes() / size_t(S)),
          os.data(), os.nbytes());
      begin += n;
    }
    H0_CHECK(begin == S) << "windows cover " << begin << " of " << S << " patches";
    o = backend_.upload(out);
  }
  o.reshape({S, D});
  o = linear(l, TensorRole::kVisAttnO, o);
  probe(step, p + ".attn", o);
  x = ops_.run1(op_.add, {&x, &o});
  h = ops_.run1(op_.vision_norm, {&x, &weights_->get(l, TensorRole::kVisNorm2)});
  probe(step, p + ".norm2", h);
  const DeviceTensor gate = linear(l, TensorRole::kVisFfnGate, h),
                     up = linear(l, TensorRole::kVisFfnUp, h);
  DeviceTensor mlp = ops_.run1(op_.swiglu, {&gate, &up});
  mlp = linear(l, TensorRole::kVisFfnDown, mlp);
  probe(step, p + ".mlp", mlp);
  x = ops_.run1(op_.add, {&x, &mlp});
  probe(step, p, x);
  return x;
}

}  // namespace h0::model
