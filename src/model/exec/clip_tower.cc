// The LLaVA image path of the executor (HF LlavaModel.get_image_features with a CLIP vision
// tower): normalize → patch embedding + class token + position embedding → pre-LayerNorm →
// encoder layers (LayerNorm, bidirectional attention, quick-GELU MLP) → the hidden state of
// vision_feature_layer, CLS dropped for the "default" strategy → projector (linear, GELU, linear).
#include <cmath>

#include "base/error.h"
#include "model/exec/executor.h"
#include "model/exec/host_glue.h"

namespace h0::model {

using backend::DeviceTensor;

DeviceTensor Executor::constant_like(const DeviceTensor& like,
                                     const std::vector<double>& per_channel, int64_t inner) {
  tensor::Tensor host = tensor::Tensor::empty(tensor::DType::kF32, like.shape());
  float* d = host.mutable_data_as<float>();
  for (int64_t i = 0; i < host.numel(); ++i)
    d[i] = float(per_channel[size_t((i / inner) % int64_t(per_channel.size()))]);
  return backend_.upload(glue::to_dtype(host, options_.dtype));
}

tensor::Tensor Executor::image_features(const tensor::Tensor& rescaled_pixels,
                                        const std::array<double, 3>& mean,
                                        const std::array<double, 3>& std, ProbeRecorder* probes) {
  if (!arch_.vision) throw InputError(arch_.architecture, "has no vision tower");
  const Vision& v = *arch_.vision;
  if (v.tower != "clip") {
    throw InputError(
        arch_.architecture,
        "the " + v.tower + " vision tower takes the processor's patches: qwen_image_features");
  }
  // Under pipeline parallelism the tower runs on the first stage, the only one that embeds.
  if (options_.sharding != nullptr && options_.sharding->pp_rank > 0) return tensor::Tensor();
  Step step;
  step.probes = probes;
  // (x - mean) / std as x · (1/std) + (-mean/std), on the backend.
  DeviceTensor x = backend_.upload(glue::to_dtype(rescaled_pixels, options_.dtype));
  const int64_t plane = rescaled_pixels.dim(1) * rescaled_pixels.dim(2);
  const DeviceTensor scale = constant_like(x, {1 / std[0], 1 / std[1], 1 / std[2]}, plane);
  const DeviceTensor shift =
      constant_like(x, {-mean[0] / std[0], -mean[1] / std[1], -mean[2] / std[2]}, plane);
  x = ops_.run1(op_.mul, {&x, &scale});
  x = ops_.run1(op_.add, {&x, &shift});
  probe(step, "pixel_values", x);

  // The tower's weights by vision role and vision layer (-1: outside the encoder layers).
  const auto vis = [&](TensorRole role, int64_t layer = -1,
                       TensorPiece piece = TensorPiece::kWeight) -> const DeviceTensor& {
    return weights_->get(layer, role, piece);
  };
  const DeviceTensor patches = ops_.run1(op_.patch_embed, {&x, &vis(TensorRole::kVisPatchEmbed)});
  const tensor::Tensor cls =
      backend_.download(vis(TensorRole::kVisClassEmbed)).reshape({1, v.hidden_size});
  DeviceTensor emb = backend_.upload(glue::concat_rows(cls, backend_.download(patches)));
  emb = ops_.run1(op_.add, {&emb, &vis(TensorRole::kVisPosEmbed)});
  probe(step, "model.vision_tower.embeddings", emb);
  DeviceTensor h = ops_.run1(
      op_.layernorm,
      {&emb, &vis(TensorRole::kVisPreNorm), &vis(TensorRole::kVisPreNorm, -1, TensorPiece::kBias)});
  probe(step, "model.vision_tower.pre_layrnorm", h);

  // hidden_states[0] is the pre-LayerNorm output, [i + 1] the output of layer i.
  const int64_t wanted =
      v.feature_layer >= 0 ? v.feature_layer : v.num_layers + 1 + v.feature_layer;
  tensor::Tensor selected = wanted == 0 ? backend_.download(h) : tensor::Tensor();
  for (int64_t l = 0; l < v.num_layers; ++l) {  // every layer runs, as in HF, so probes line up
    const std::string i = std::to_string(l);
    h = vision_layer(l, "model.vision_tower.encoder.layers." + i, std::move(h), step);
    if (l + 1 == wanted) selected = backend_.download(h);
  }
  if (v.feature_select_strategy == "default")
    selected = selected.slice_rows(1, selected.dim(0));  // drop CLS
  DeviceTensor f = backend_.upload(selected);
  probe(step, "image_features_selected", f);
  f = linear(-1, TensorRole::kProjector1, f, true);  // the bias when the projector has one
  f = ops_.run1(op_.gelu, {&f});
  f = linear(-1, TensorRole::kProjector2, f, true);
  probe(step, "model.multi_modal_projector", f);
  return to_host_f32(f);
}

DeviceTensor Executor::vision_layer(int64_t l, const std::string& p, DeviceTensor x, Step& step) {
  const Vision& v = *arch_.vision;
  const int64_t S = x.shape()[0], heads = v.num_heads, hd = v.hidden_size / v.num_heads;
  const auto layer_norm = [&](TensorRole role, const DeviceTensor& in) {
    return ops_.run1(op_.layernorm,
                     {&in, &weights_->get(l, role), &weights_->get(l, role, TensorPiece::kBias)});
  };
  DeviceTensor h = layer_norm(TensorRole::kVisNorm1, x);
  probe(step, p + ".layer_norm1", h);
  DeviceTensor q = linear(l, TensorRole::kVisAttnQ, h), k = linear(l, TensorRole::kVisAttnK, h),
               val = linear(l, TensorRole::kVisAttnV, h);
  q.reshape({S, heads, hd});
  k.reshape({S, heads, hd});
  val.reshape({S, heads, hd});
  DeviceTensor o = ops_.run1(op_.vision_attention, {&q, &k, &val});
  o.reshape({S, heads * hd});
  o = linear(l, TensorRole::kVisAttnO, o);
  probe(step, p + ".self_attn", o);
  x = ops_.run1(op_.add, {&x, &o});
  h = layer_norm(TensorRole::kVisNorm2, x);
  probe(step, p + ".layer_norm2", h);
  DeviceTensor m = linear(l, TensorRole::kVisFc1, h);
  if (v.hidden_act == "quick_gelu") {  // x·sigmoid(1.702x) = silu(1.702x) / 1.702
    if (!step.gelu_up) {
      step.gelu_up.emplace(constant_like(m, {1.702}, 1));
      step.gelu_down.emplace(constant_like(m, {1 / 1.702}, 1));
    }
    m = ops_.run1(op_.mul, {&m, &*step.gelu_up});
    m = ops_.run1(op_.silu, {&m});
    m = ops_.run1(op_.mul, {&m, &*step.gelu_down});
  } else {
    m = ops_.run1(op_.gelu, {&m});
  }
  m = linear(l, TensorRole::kVisFc2, m);
  probe(step, p + ".mlp", m);
  x = ops_.run1(op_.add, {&x, &m});
  probe(step, p, x);
  return x;
}

}  // namespace h0::model
