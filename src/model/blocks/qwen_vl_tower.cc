// Qwen2.5-VL's vision tower (transformers' Qwen2_5_VisionTransformerPretrainedModel): the Conv3d
// patch embedding as one linear over the processor's flattened patches → the patches put in
// window order → blocks (RMSNorm, attention with the 2-D rope over (h, w), per window or over the
// whole image in fullatt_block_indexes, RMSNorm, SwiGLU) → the PatchMerger (RMSNorm, merge² rows
// as one, linear, GELU, linear) → the merged tokens put back in image order. Its processor is
// Qwen2VLImageProcessor's (vision/image.h: smart_resize, rescale, normalize, patchify); the index
// arithmetic is vision/qwen_vision.h. Config: Vision (tower "qwen2_5_vl"), families/qwen2_5_vl.cc.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "base/error.h"
#include "model/config/tower.h"
#include "model/exec/host_glue.h"
#include "model/exec/tower_run.h"
#include "model/vision/image.h"
#include "model/vision/qwen_vision.h"
#include "model/weights/inventory_builder.h"

namespace h0::model {
namespace {

using backend::DeviceTensor;

constexpr int64_t kMaxPixels = 28 * 28 * 1280;  // Qwen2VLImageProcessor's class default

// The largest image: the processor's max_pixels where the plan was given it, else the default.
int64_t pixels_or_default(int64_t max_image_pixels) {
  return max_image_pixels > 0 ? max_image_pixels : kMaxPixels;
}

class QwenImages : public ImageProcessor {
 public:
  explicit QwenImages(QwenVlProcessor p) : p_(p) {}
  TowerPixels pixels(const Image& image) const override {
    QwenVlPixels px = qwen_vl_pixels(image, p_);
    const ImageGrid g{px.grid_t, px.grid_h, px.grid_w};
    return {std::move(px.pixel_values), g, g.tokens(p_.merge_size)};
  }

 private:
  QwenVlProcessor p_;
};

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

// Attention over `segments` (consecutive row counts: the windows, or the frames of a
// full-attention block): one attention per segment.
DeviceTensor windowed_attention(TowerRun& run, const DeviceTensor& q, const DeviceTensor& k,
                                const tensor::Tensor& v_host,
                                const std::vector<int64_t>& segments) {
  const BoundOp& attention = run.model_ops().vision_attention;
  const tensor::Shape shape = q.shape();
  const int64_t S = shape[0];
  if (segments.size() == 1) {
    const DeviceTensor val = run.backend().upload(v_host.reshape(shape));
    return run.run1(attention, {&q, &k, &val});
  }
  const tensor::Tensor qh = run.backend().download(q), kh = run.backend().download(k),
                       vh = v_host.reshape(shape);
  tensor::Tensor out = tensor::Tensor::zeros(qh.dtype(), shape);
  int64_t begin = 0;
  for (int64_t n : segments) {  // rows [begin, begin + n)
    const DeviceTensor qs = run.backend().upload(qh.slice_rows(begin, begin + n).clone()),
                       ks = run.backend().upload(kh.slice_rows(begin, begin + n).clone()),
                       vs = run.backend().upload(vh.slice_rows(begin, begin + n).clone());
    const tensor::Tensor os = run.backend().download(run.run1(attention, {&qs, &ks, &vs}));
    std::memcpy(
        static_cast<std::byte*>(out.mutable_data()) + size_t(begin) * (out.nbytes() / size_t(S)),
        os.data(), os.nbytes());
    begin += n;
  }
  H0_CHECK(begin == S) << "windows cover " << begin << " of " << S << " patches";
  return run.backend().upload(out);
}

// Vision block `l` over the patches in window order.
DeviceTensor vision_block(TowerRun& run, int64_t l, DeviceTensor x, const DeviceTensor& positions,
                          const std::vector<int64_t>& segments) {
  const Vision& v = *run.arch().vision;
  const ModelOps& op = run.model_ops();
  const std::string p = "model.visual.blocks." + std::to_string(l);
  const int64_t S = x.shape()[0], D = v.hidden_size, heads = v.num_heads, hd = D / heads;
  DeviceTensor h = run.run1(op.vision_norm, {&x, &run.weight(l, TensorRole::kVisNorm1)});
  run.probe(p + ".norm1", h);
  // qkv's outputs are q | k | v, each heads × hd.
  auto [q_host, kv_host] =
      glue::split_last(run.backend().download(run.linear(l, TensorRole::kVisAttnQKV, h)), D);
  auto [k_host, v_host] = glue::split_last(kv_host, D);
  DeviceTensor q = run.backend().upload(q_host.reshape({S, heads, hd})),
               k = run.backend().upload(k_host.reshape({S, heads, hd}));
  q = run.run1(op.vision_rope, {&q, &positions});
  k = run.run1(op.vision_rope, {&k, &positions});
  DeviceTensor o = windowed_attention(run, q, k, v_host, segments);
  o.reshape({S, D});
  o = run.linear(l, TensorRole::kVisAttnO, o);
  run.probe(p + ".attn", o);
  x = run.run1(op.add, {&x, &o});
  h = run.run1(op.vision_norm, {&x, &run.weight(l, TensorRole::kVisNorm2)});
  run.probe(p + ".norm2", h);
  const DeviceTensor gate = run.linear(l, TensorRole::kVisFfnGate, h),
                     up = run.linear(l, TensorRole::kVisFfnUp, h);
  DeviceTensor mlp = run.run1(op.swiglu, {&gate, &up});
  mlp = run.linear(l, TensorRole::kVisFfnDown, mlp);
  run.probe(p + ".mlp", mlp);
  x = run.run1(op.add, {&x, &mlp});
  run.probe(p, x);
  return x;
}

// Throws InputError unless `px` is `g`'s patches.
void check_pixels(const Vision& v, const tensor::Tensor& px, const ImageGrid& g) {
  const int64_t m = v.spatial_merge_size, P = g.patches();
  const int64_t K = v.num_channels * v.temporal_patch_size * v.patch_size * v.patch_size;
  if (g.t < 1 || g.h <= 0 || g.w <= 0 || g.h % m != 0 || g.w % m != 0) {
    throw InputError("image_grid_thw", std::to_string(g.t) + "x" + std::to_string(g.h) + "x" +
                                           std::to_string(g.w) + " is not a grid of whole " +
                                           std::to_string(m) + "x" + std::to_string(m) +
                                           " merge units");
  }
  if (px.shape() != tensor::Shape{P, K}) {
    throw InputError("pixel_values", "must be [" + std::to_string(P) + ", " + std::to_string(K) +
                                         "] (grid " + std::to_string(g.t) + "x" +
                                         std::to_string(g.h) + "x" + std::to_string(g.w) +
                                         "), got " + tensor::shape_string(px.shape()));
  }
}

class QwenVlTower : public Tower {
 public:
  const char* name() const override { return "qwen2_5_vl"; }

  // Conv3d patch embedding (no bias), RMSNorm blocks, the merger.
  void weights(const Architecture& arch, InventoryBuilder& b) const override {
    const Vision& v = *arch.vision;
    const int64_t D = v.hidden_size, merged = D * v.spatial_merge_size * v.spatial_merge_size;
    const auto linear = [&](TensorRole role, int64_t out, int64_t in, int64_t layer) {
      b.vision_weight(role, TensorPiece::kWeight, {out, in}, layer);
      b.vision_weight(role, TensorPiece::kBias, {out}, layer);
    };
    b.vision_weight(TensorRole::kVisPatchEmbed, TensorPiece::kWeight,
                    {D, v.num_channels, v.temporal_patch_size, v.patch_size, v.patch_size});
    for (int64_t i = 0; i < v.num_layers; ++i) {
      b.vision_weight(TensorRole::kVisNorm1, TensorPiece::kWeight, {D}, i);
      b.vision_weight(TensorRole::kVisNorm2, TensorPiece::kWeight, {D}, i);
      linear(TensorRole::kVisAttnQKV, 3 * D, D, i);
      linear(TensorRole::kVisAttnO, D, D, i);
      linear(TensorRole::kVisFfnGate, v.intermediate_size, D, i);
      linear(TensorRole::kVisFfnUp, v.intermediate_size, D, i);
      linear(TensorRole::kVisFfnDown, D, v.intermediate_size, i);
    }
    b.vision_weight(TensorRole::kVisMergerNorm, TensorPiece::kWeight, {D});
    linear(TensorRole::kVisMerger1, merged, merged, -1);
    linear(TensorRole::kVisMerger2, v.out_hidden_size, merged, -1);
  }

  void bind(const Architecture& arch, ModelOps* o) const override {
    const Vision& v = *arch.vision;
    const int64_t hd = v.hidden_size / v.num_heads;
    if (v.hidden_act != "silu") {
      throw InputError("config.json: vision_config.hidden_act",
                       "'" + v.hidden_act + "': the tower's MLP runs swiglu (silu)");
    }
    o->vision_norm = bind_op("rmsnorm", {{"eps", v.layer_norm_eps}});
    o->vision_rope =
        bind_op("rope", {{"theta", v.rope_theta},
                         {"style", "neox"},
                         {"mrope", {{"section", {hd / 4, hd / 4}}, {"layout", "per_axis"}}}});
    o->vision_attention =
        bind_op("attention", {{"causal", false}, {"scale", 1.0 / std::sqrt(double(hd))}});
    o->swiglu = bind_op("swiglu");
    o->gelu = bind_op("gelu", {{"approximate", "none"}});
  }

  std::unique_ptr<ImageProcessor> processor(const std::string& model_dir) const override {
    return std::make_unique<QwenImages>(load_qwen_vl_processor(model_dir));
  }

  tensor::Tensor features(Executor& ex, const ImageProcessor&, const TowerPixels& px,
                          ProbeRecorder* probes) const override;

  int64_t image_tokens(const Architecture&, const nlohmann::json&) const override {
    return 0;  // each image's own: its grid
  }

  int64_t max_image_pixels(const std::string& model_dir) const override {
    return qwen_vl_max_pixels(model_dir);
  }

  int64_t activation_bytes(const Architecture& arch, int64_t max_image_pixels,
                           int64_t c) const override {
    const Vision& v = *arch.vision;
    const int64_t mu = v.spatial_merge_size * v.spatial_merge_size;
    const int64_t P = pixels_or_default(max_image_pixels) / (v.patch_size * v.patch_size);
    const int64_t K = v.num_channels * v.temporal_patch_size * v.patch_size * v.patch_size,
                  Dv = v.hidden_size;
    const int64_t merger = P * Dv * c + (P / mu) * (mu * Dv + arch.text.hidden_size) * c;
    const int64_t peak = std::max({4 * P * Dv * c, 3 * P * v.intermediate_size * c, merger});
    return P * K * 4 + 2 * P * Dv * c + peak;
  }

  void plan_notes(const Architecture& arch, int64_t max_image_pixels,
                  std::vector<std::string>* notes) const override {
    const int64_t pixels = pixels_or_default(max_image_pixels);
    notes->push_back(
        "vision tower on stage 0 sized for an image of " + std::to_string(pixels) + " pixels (" +
        std::to_string(pixels / (arch.vision->patch_size * arch.vision->patch_size)) + " patches" +
        (max_image_pixels > 0
             ? ", the processor's max_pixels)"
             : ": the processor class default; harness plan --max-image-pixels sets it)"));
  }
};

tensor::Tensor QwenVlTower::features(Executor& ex, const ImageProcessor&, const TowerPixels& px,
                                     ProbeRecorder* probes) const {
  TowerRun run(ex, probes);
  const Vision& v = *run.arch().vision;
  const ImageGrid& g = px.grid;
  check_pixels(v, px.pixels, g);
  if (!run.embeds()) return tensor::Tensor();  // under pipeline parallelism: the first stage's
  const ModelOps& op = run.model_ops();
  const int64_t m = v.spatial_merge_size, mu = m * m, P = g.patches(), D = v.hidden_size;
  if (probes != nullptr && probes->wants("pixel_values.patch_stats"))
    probes->record("pixel_values.patch_stats", patch_stats(px.pixels));
  // Conv3d with kernel = stride = (temporal, patch, patch) over one patch each: x · W[D, K]ᵀ (the
  // weight flattened to [D, K] on load, model_weights.cc).
  DeviceTensor x = run.backend().upload(glue::to_dtype(px.pixels, run.dtype()));
  x = run.linear(-1, TensorRole::kVisPatchEmbed, x, false);
  run.probe("model.visual.patch_embed", x);

  const WindowOrder order = qwen_window_order(g, m, v.window_size / m / v.patch_size);
  const std::vector<int64_t> perm = qwen_patch_permutation(order, m);
  x = run.backend().upload(glue::gather_rows(run.backend().download(x), perm));
  const std::vector<int64_t> pos = qwen_patch_positions(g, m);
  std::vector<int64_t> pos_windowed(size_t(2 * P));
  for (int64_t i = 0; i < P; ++i) {
    pos_windowed[size_t(i)] = pos[size_t(perm[size_t(i)])];
    pos_windowed[size_t(P + i)] = pos[size_t(P + perm[size_t(i)])];
  }
  const DeviceTensor positions = run.backend().upload(
      tensor::Tensor::copy_of(tensor::DType::kI64, {2, P}, pos_windowed.data()));
  // Full attention sees one frame at a time (cu_seqlens: h·w per t); windows stay inside a frame.
  const std::vector<int64_t> frames(size_t(g.t), g.h * g.w);
  for (int64_t l = 0; l < v.num_layers; ++l) {
    const bool full =
        std::find(v.fullatt_blocks.begin(), v.fullatt_blocks.end(), l) != v.fullatt_blocks.end();
    x = vision_block(run, l, std::move(x), positions, full ? frames : order.window_patches);
  }

  DeviceTensor h = run.run1(op.vision_norm, {&x, &run.weight(-1, TensorRole::kVisMergerNorm)});
  h.reshape({P / mu, mu * D});
  h = run.linear(-1, TensorRole::kVisMerger1, h);
  h = run.run1(op.gelu, {&h});
  h = run.linear(-1, TensorRole::kVisMerger2, h);
  run.probe("model.visual.merger", h);
  // Back to image order: merged row j is unit order.units[j].
  const tensor::Tensor merged = run.backend().download(h);
  std::vector<int64_t> inverse(order.units.size());
  for (size_t j = 0; j < order.units.size(); ++j) inverse[size_t(order.units[j])] = int64_t(j);
  if (run.self_test_fault() == "qwen_window_not_inverted") {
    for (size_t j = 0; j < inverse.size(); ++j) inverse[j] = int64_t(j);
  }
  const DeviceTensor features = run.backend().upload(glue::gather_rows(merged, inverse));
  run.probe("model.visual", features);
  return run.to_host_f32(features);
}

}  // namespace

const Tower& qwen_vl_tower() {
  static const QwenVlTower tower;
  return tower;
}

}  // namespace h0::model
