// LLaVA's CLIP vision tower (HF LlavaModel.get_image_features with a CLIPVisionModel): normalize →
// patch embedding + class token + position embedding → pre-LayerNorm → encoder layers (LayerNorm,
// bidirectional attention, quick-GELU MLP) → the hidden state of vision_feature_layer, CLS dropped
// for the "default" strategy → projector (linear, GELU, linear). Its processor is
// CLIPImageProcessor's host steps (vision/image.h: resize, center crop, rescale); normalization
// runs on the backend. Config: Vision (tower "clip"), families/llava.cc.
#include <cmath>
#include <optional>

#include "base/error.h"
#include "model/config/tower.h"
#include "model/exec/host_glue.h"
#include "model/exec/tower_run.h"
#include "model/vision/image.h"
#include "model/weights/inventory_builder.h"

namespace h0::model {
namespace {

using backend::DeviceTensor;

class ClipImages : public ImageProcessor {
 public:
  explicit ClipImages(ClipProcessor p) : p_(std::move(p)) {}
  TowerPixels pixels(const Image& image) const override {
    return {clip_rescaled_pixels(image, p_), {}, 0};
  }
  const ClipProcessor& settings() const { return p_; }

 private:
  ClipProcessor p_;
};

// Encoder layer `l`, probed under `p`; `gelu` holds quick_gelu's constants once made.
DeviceTensor encoder_layer(TowerRun& run, int64_t l, const std::string& p, DeviceTensor x,
                           std::optional<std::pair<DeviceTensor, DeviceTensor>>* gelu) {
  const Vision& v = *run.arch().vision;
  const ModelOps& op = run.model_ops();
  const int64_t S = x.shape()[0], heads = v.num_heads, hd = v.hidden_size / v.num_heads;
  const auto layer_norm = [&](TensorRole role, const DeviceTensor& in) {
    return run.run1(op.layernorm,
                    {&in, &run.weight(l, role), &run.weight(l, role, TensorPiece::kBias)});
  };
  DeviceTensor h = layer_norm(TensorRole::kVisNorm1, x);
  run.probe(p + ".layer_norm1", h);
  DeviceTensor q = run.linear(l, TensorRole::kVisAttnQ, h),
               k = run.linear(l, TensorRole::kVisAttnK, h),
               val = run.linear(l, TensorRole::kVisAttnV, h);
  q.reshape({S, heads, hd});
  k.reshape({S, heads, hd});
  val.reshape({S, heads, hd});
  DeviceTensor o = run.run1(op.vision_attention, {&q, &k, &val});
  o.reshape({S, heads * hd});
  o = run.linear(l, TensorRole::kVisAttnO, o);
  run.probe(p + ".self_attn", o);
  x = run.run1(op.add, {&x, &o});
  h = layer_norm(TensorRole::kVisNorm2, x);
  run.probe(p + ".layer_norm2", h);
  DeviceTensor m = run.linear(l, TensorRole::kVisFc1, h);
  if (v.hidden_act == "quick_gelu") {  // x·sigmoid(1.702x) = silu(1.702x) / 1.702
    if (!*gelu)
      gelu->emplace(run.constant_like(m, {1.702}, 1), run.constant_like(m, {1 / 1.702}, 1));
    m = run.run1(op.mul, {&m, &(*gelu)->first});
    m = run.run1(op.silu, {&m});
    m = run.run1(op.mul, {&m, &(*gelu)->second});
  } else {
    m = run.run1(op.gelu, {&m});
  }
  m = run.linear(l, TensorRole::kVisFc2, m);
  run.probe(p + ".mlp", m);
  x = run.run1(op.add, {&x, &m});
  run.probe(p, x);
  return x;
}

class ClipTower : public Tower {
 public:
  const char* name() const override { return "clip"; }

  void weights(const Architecture& arch, InventoryBuilder& b) const override {
    const Vision& v = *arch.vision;
    const auto layer_norm = [&](TensorRole role, int64_t layer) {
      b.vision_weight(role, TensorPiece::kWeight, {v.hidden_size}, layer);
      b.vision_weight(role, TensorPiece::kBias, {v.hidden_size}, layer);
    };
    const auto linear = [&](TensorRole role, int64_t out, int64_t in, bool bias, int64_t layer) {
      b.vision_weight(role, TensorPiece::kWeight, {out, in}, layer);
      if (bias) b.vision_weight(role, TensorPiece::kBias, {out}, layer);
    };
    b.vision_weight(TensorRole::kVisClassEmbed, TensorPiece::kWeight, {v.hidden_size});
    b.vision_weight(TensorRole::kVisPatchEmbed, TensorPiece::kWeight,
                    {v.hidden_size, v.num_channels, v.patch_size, v.patch_size});
    b.vision_weight(TensorRole::kVisPosEmbed, TensorPiece::kWeight,
                    {v.num_patches() + 1, v.hidden_size});
    layer_norm(TensorRole::kVisPreNorm, -1);
    for (int64_t i = 0; i < v.num_layers; ++i) {
      for (const TensorRole proj : {TensorRole::kVisAttnK, TensorRole::kVisAttnV,
                                    TensorRole::kVisAttnQ, TensorRole::kVisAttnO}) {
        linear(proj, v.hidden_size, v.hidden_size, true, i);
      }
      layer_norm(TensorRole::kVisNorm1, i);
      linear(TensorRole::kVisFc1, v.intermediate_size, v.hidden_size, true, i);
      linear(TensorRole::kVisFc2, v.hidden_size, v.intermediate_size, true, i);
      layer_norm(TensorRole::kVisNorm2, i);
    }
    layer_norm(TensorRole::kVisPostNorm, -1);
    const int64_t D = arch.text.hidden_size;
    linear(TensorRole::kProjector1, D, v.hidden_size, v.projector_bias, -1);
    linear(TensorRole::kProjector2, D, D, v.projector_bias, -1);
  }

  void bind(const Architecture& arch, ModelOps* o) const override {
    const Vision& v = *arch.vision;
    o->layernorm = bind_op("layernorm", {{"eps", v.layer_norm_eps}});
    o->mul = bind_op("mul");
    o->silu = bind_op("silu");
    o->gelu = bind_op("gelu", {{"approximate", "none"}});
    o->patch_embed = bind_op("patch_embed", {{"patch", v.patch_size}});
    o->vision_attention = bind_op(
        "attention",
        {{"causal", false}, {"scale", 1.0 / std::sqrt(double(v.hidden_size / v.num_heads))}});
  }

  std::unique_ptr<ImageProcessor> processor(const std::string& model_dir) const override {
    return std::make_unique<ClipImages>(load_clip_processor(model_dir));
  }

  tensor::Tensor features(Executor& ex, const ImageProcessor& p, const TowerPixels& px,
                          ProbeRecorder* probes) const override;

  int64_t image_tokens(const Architecture& arch, const nlohmann::json& config) const override {
    const Vision& v = *arch.vision;
    if (config.is_object() && config.contains("image_seq_length") &&
        config["image_seq_length"].is_number_integer()) {
      return config["image_seq_length"].get<int64_t>();
    }
    return v.num_patches() + (v.feature_select_strategy == "default" ? 0 : 1);
  }
};

tensor::Tensor ClipTower::features(Executor& ex, const ImageProcessor& p, const TowerPixels& px,
                                   ProbeRecorder* probes) const {
  const std::array<double, 3>& mean = static_cast<const ClipImages&>(p).settings().mean;
  const std::array<double, 3>& std = static_cast<const ClipImages&>(p).settings().std;
  TowerRun run(ex, probes);
  if (!run.embeds()) return tensor::Tensor();  // under pipeline parallelism: the first stage's
  const Vision& v = *run.arch().vision;
  const ModelOps& op = run.model_ops();
  // (x - mean) / std as x · (1/std) + (-mean/std), on the backend.
  DeviceTensor x = run.backend().upload(glue::to_dtype(px.pixels, run.dtype()));
  const int64_t plane = px.pixels.dim(1) * px.pixels.dim(2);
  const DeviceTensor scale = run.constant_like(x, {1 / std[0], 1 / std[1], 1 / std[2]}, plane);
  const DeviceTensor shift =
      run.constant_like(x, {-mean[0] / std[0], -mean[1] / std[1], -mean[2] / std[2]}, plane);
  x = run.run1(op.mul, {&x, &scale});
  x = run.run1(op.add, {&x, &shift});
  run.probe("pixel_values", x);

  const DeviceTensor patches =
      run.run1(op.patch_embed, {&x, &run.weight(-1, TensorRole::kVisPatchEmbed)});
  const tensor::Tensor cls = run.backend()
                                 .download(run.weight(-1, TensorRole::kVisClassEmbed))
                                 .reshape({1, v.hidden_size});
  DeviceTensor emb = run.backend().upload(glue::concat_rows(cls, run.backend().download(patches)));
  emb = run.run1(op.add, {&emb, &run.weight(-1, TensorRole::kVisPosEmbed)});
  run.probe("model.vision_tower.embeddings", emb);
  DeviceTensor h =
      run.run1(op.layernorm, {&emb, &run.weight(-1, TensorRole::kVisPreNorm),
                              &run.weight(-1, TensorRole::kVisPreNorm, TensorPiece::kBias)});
  run.probe("model.vision_tower.pre_layrnorm", h);

  // hidden_states[0] is the pre-LayerNorm output, [i + 1] the output of layer i.
  const int64_t wanted =
      v.feature_layer >= 0 ? v.feature_layer : v.num_layers + 1 + v.feature_layer;
  tensor::Tensor selected = wanted == 0 ? run.backend().download(h) : tensor::Tensor();
  std::optional<std::pair<DeviceTensor, DeviceTensor>> gelu;
  for (int64_t l = 0; l < v.num_layers; ++l) {  // every layer runs, as in HF, so probes line up
    h = encoder_layer(run, l, "model.vision_tower.encoder.layers." + std::to_string(l),
                      std::move(h), &gelu);
    if (l + 1 == wanted) selected = run.backend().download(h);
  }
  if (v.feature_select_strategy == "default")
    selected = selected.slice_rows(1, selected.dim(0));  // drop CLS
  DeviceTensor f = run.backend().upload(selected);
  run.probe("image_features_selected", f);
  f = run.linear(-1, TensorRole::kProjector1, f, true);  // the bias when the projector has one
  f = run.run1(op.gelu, {&f});
  f = run.linear(-1, TensorRole::kProjector2, f, true);
  run.probe("model.multi_modal_projector", f);
  return run.to_host_f32(f);
}

}  // namespace

const Tower& clip_tower() {
  static const ClipTower tower;
  return tower;
}

}  // namespace h0::model
