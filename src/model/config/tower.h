// A vision tower: how a multimodal model turns one image into the rows its language model reads in
// place of the image's tokens. One file per tower under src/model/blocks/ (clip_tower.cc for
// LLaVA's CLIP, qwen_vl_tower.cc for Qwen2.5-VL's) holds what the harness knows of it: the weights
// it reads, the catalogue ops it binds, the image processor of a model directory, its features
// step, how many image tokens a prompt holds per image, and what the memory plan counts for it.
// The hubs (the inventory, the model's ops, the server and its batch engine, the model check, the
// chat template, day0's memory stage, the planner) ask tower_of(arch) and call it; none names a
// tower. Adding one: its file under blocks/, its row in blocks/registry.cc, the family that sets
// Vision::tower — docs/blocks.md.
//
// Declared here, below the modules that call it; defined in model/blocks/, above them (as
// config/block.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/config/architecture.h"
#include "tensor/tensor.h"

namespace h0::model {

class Executor;          // exec/executor.h
class ProbeRecorder;     // exec/probes.h
class InventoryBuilder;  // weights/inventory_builder.h
struct ModelOps;         // exec/model_ops.h
struct Image;            // vision/image.h
struct TowerPixels;      // vision/image.h: one image as its tower takes it

// A model directory's image processor (preprocessor_config.json, else its class defaults).
class ImageProcessor {
 public:
  virtual ~ImageProcessor() = default;
  // `image` as the tower takes it: InputError for an image the processor refuses.
  virtual TowerPixels pixels(const Image& image) const = 0;
};

class Tower {
 public:
  virtual ~Tower() = default;
  // Its Vision::tower value: "clip", "qwen2_5_vl".
  virtual const char* name() const = 0;
  // Appends its weights, in checkpoint order (InventoryBuilder::vision_weight).
  virtual void weights(const Architecture& arch, InventoryBuilder& b) const = 0;
  // Binds the ops its features step runs into `ops` (InputError naming a field the ops cannot
  // express).
  virtual void bind(const Architecture& arch, ModelOps* ops) const = 0;
  // The image processor of `model_dir` (a config.json path: its directory).
  virtual std::unique_ptr<ImageProcessor> processor(const std::string& model_dir) const = 0;
  // The image's rows for the language model [tokens, D] (empty on a pipeline stage after the
  // first, which does not embed); `p` is this tower's processor.
  virtual tensor::Tensor features(Executor& ex, const ImageProcessor& p, const TowerPixels& px,
                                  ProbeRecorder* probes = nullptr) const = 0;
  // The image tokens a prompt holds for each image: a count, or 0 where each image's count
  // follows its size (TowerPixels::tokens). `config`: the model's config.json.
  virtual int64_t image_tokens(const Architecture& arch, const nlohmann::json& config) const = 0;

  // --- for the planner: the largest image the plan sizes the tower for (0: images of a fixed
  // size), read from `model_dir`'s processor; its activations at that image in `act_bytes` an
  // element; what the plan says of it.
  virtual int64_t max_image_pixels(const std::string& model_dir) const { return 0; }
  virtual int64_t activation_bytes(const Architecture& arch, int64_t max_image_pixels,
                                   int64_t act_bytes) const {
    return 0;
  }
  virtual void plan_notes(const Architecture& arch, int64_t max_image_pixels,
                          std::vector<std::string>* notes) const {}
};

// Every tower this build has (model/blocks/registry.cc).
const std::vector<const Tower*>& towers();
// The tower of `arch`'s vision_config, or null for a text-only model. A bug (H0_CHECK) for a
// Vision::tower no tower has: the family that sets it must register it.
const Tower* tower_of(const Architecture& arch);

}  // namespace h0::model
