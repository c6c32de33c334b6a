// Qwen2.5-VL's image path in the executor against transformers (tiny-qwen2-5-vl, goldens of
// golden/tools/gen_qwen_vl.py): the window order and the M-RoPE position ids by hand and against
// transformers' get_rope_index, every probe, the logits and the greedy tokens of three images, and
// three bugs a port makes — the processor's mean and std swapped, the window order not inverted,
// M-RoPE's sections put on the wrong axes — each localized to its module.
#include <gtest/gtest.h>

#include "backend/backend.h"
#include "base/error.h"
#include "compare/metrics.h"
#include "compare/model_compare.h"
#include "io/safetensors_reader.h"
#include "io/sharded_checkpoint.h"
#include "model/config/tower.h"
#include "model/exec/executor.h"
#include "model/exec/generation.h"
#include "model/exec/host_glue.h"
#include "model/vision/image.h"
#include "model/vision/qwen_vision.h"
#include "test_util.h"

namespace h0::model {
namespace {

const char kModel[] = "tests/data/models/tiny-qwen2-5-vl";

TEST(QwenVlWindows, WindowsAreRowMajorOverThePaddedUnitGrid) {
  // 4 x 10 patches: 2 x 5 merge units, windows of 4 x 4 units: units 0-3 and 5-8, then 4 and 9.
  const WindowOrder o = qwen_window_order({1, 4, 10}, 2, 4);
  EXPECT_EQ(o.units, (std::vector<int64_t>{0, 1, 2, 3, 5, 6, 7, 8, 4, 9}));
  EXPECT_EQ(o.window_patches, (std::vector<int64_t>{32, 8}));
  EXPECT_EQ(qwen_patch_permutation(o, 2)[4 * 4], 5 * 4);  // unit 5's first patch after units 0-3
  // A grid that fills its windows exactly: transformers pads a whole empty window row and column,
  // which hold no patch and are dropped.
  const WindowOrder exact = qwen_window_order({1, 8, 8}, 2, 2);
  EXPECT_EQ(exact.units,
            (std::vector<int64_t>{0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15}));
  EXPECT_EQ(exact.window_patches, (std::vector<int64_t>(4, 16)));
}

TEST(QwenVlWindows, PatchPositionsFollowTheProcessorsMergeBlocks) {
  // 2 x 4 patches, merge 2: unit (0, 0) holds patches (0,0) (0,1) (1,0) (1,1), then unit (0, 1).
  const std::vector<int64_t> p = qwen_patch_positions({1, 2, 4}, 2);
  EXPECT_EQ(p, (std::vector<int64_t>{0, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0, 1, 2, 3, 2, 3}));
}

TEST(QwenVlMrope, TextContinuesAfterTheImagesLargestSide) {
  const int64_t img = 9;
  // Two text tokens, an image of 4 x 6 patches (2 x 3 units), one text token.
  const MropePositions m =
      mrope_positions({1, 2, img, img, img, img, img, img, 3}, 0, img, {{1, 4, 6}}, 2);
  EXPECT_EQ(m.rows, (std::vector<int64_t>{0, 1, 2, 2, 2, 2, 2, 2, 5,     // t
                                          0, 1, 2, 2, 2, 3, 3, 3, 5,     // h
                                          0, 1, 2, 3, 4, 2, 3, 4, 5}));  // w
  EXPECT_EQ(m.next, 6);
  const MropePositions decode = mrope_positions({7}, m.next, img, {}, 2);
  EXPECT_EQ(decode.rows, (std::vector<int64_t>{6, 6, 6}));
  EXPECT_THROW(mrope_positions({1, img, img, 2}, 0, img, {{1, 4, 6}}, 2),
               InputError);                                               // 2 of 6 tokens
  EXPECT_THROW(mrope_positions({1, img, 2}, 0, img, {}, 2), InputError);  // no image given
}

struct ImageRun {
  std::vector<std::pair<std::string, tensor::Tensor>> probes;
  Generation gen;
};

ImageRun run_image(const std::string& stem, const std::string& file, const QwenVlProcessor& p,
                   const std::string& fault = "", const char* plugin_fault = nullptr) {
  const std::string dir = h0::test::source_path(kModel);
  const Architecture arch = load_architecture(dir);
  const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(dir);
  auto be =
      plugin_fault == nullptr
          ? backend::Backend::open({"cpu", "", nlohmann::json::object()})
          : backend::Backend::open({"", H0_FAULTY_PLUGIN, nlohmann::json::parse(plugin_fault)});
  ExecutorOptions o;
  o.self_test_fault = fault;
  Executor ex(arch, ckpt, *be, o);
  const io::SafetensorsFile g = io::SafetensorsFile::open(
      h0::test::golden_path("models/tiny-qwen2-5-vl/" + stem + ".safetensors"));
  const QwenVlPixels px =
      qwen_vl_pixels(decode_image(h0::test::golden_path("models/images/" + file)), p);
  ProbeRecorder probes;
  const ImageGrid grid{px.grid_t, px.grid_h, px.grid_w};
  const Tower& tower = *tower_of(arch);
  const tensor::Tensor features =
      tower.features(ex, *tower.processor(dir), {px.pixel_values, grid, grid.tokens(2)}, &probes);
  ImageRun r;
  r.gen = generate_greedy(ex, glue::ids_of(g.get("input_ids")), 8, &probes, &features, {grid});
  r.probes = probes.probes();
  return r;
}

compare::ProbeReport report(const ImageRun& r, const std::string& stem) {
  const io::SafetensorsFile g = io::SafetensorsFile::open(
      h0::test::golden_path("models/tiny-qwen2-5-vl/" + stem + ".safetensors"));
  return compare::compare_probes(r.probes, g, 0.99999, 1e-3);
}

QwenVlProcessor model_processor() { return load_qwen_vl_processor(h0::test::source_path(kModel)); }

// The position ids the executor gives the language model are transformers' get_rope_index's.
TEST(QwenVlModel, PositionIdsAreTransformers) {
  const ImageRun r = run_image("qvl_wide", "qvl_wide.png", model_processor());
  const io::SafetensorsFile g = io::SafetensorsFile::open(
      h0::test::golden_path("models/tiny-qwen2-5-vl/qvl_wide.safetensors"));
  const tensor::Tensor want = g.get("position_ids");
  bool found = false;
  for (const auto& [name, value] : r.probes) {
    if (name != "position_ids") continue;
    found = true;
    ASSERT_EQ(value.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i)
      EXPECT_EQ(value.at(i), want.at(i)) << "element " << i;
  }
  EXPECT_TRUE(found);
}

TEST(QwenVlModel, ThreeAspectRatiosMatchTransformers) {
  const std::pair<const char*, const char*> images[] = {{"qvl_wide", "qvl_wide.png"},
                                                        {"qvl_tall", "qvl_tall.jpg"},
                                                        {"qvl_square_rgba", "qvl_square_rgba.png"}};
  for (const auto& [stem, file] : images) {
    const ImageRun r = run_image(stem, file, model_processor());
    const compare::ProbeReport rep = report(r, stem);
    EXPECT_EQ(rep.first_divergent, -1) << stem << ": " << rep.first_divergence();
    EXPECT_GE(rep.rows.size(), 30u)
        << stem;  // pixels, 4 blocks, merger, features, embeddings, 2 layers
    const io::SafetensorsFile g = io::SafetensorsFile::open(
        h0::test::golden_path(std::string("models/tiny-qwen2-5-vl/") + stem + ".safetensors"));
    EXPECT_GE(compare::compute_metrics(r.gen.prompt_logits, g.get("logits"), {0, 0, false}).cosine,
              0.99999)
        << stem;
    EXPECT_EQ(r.gen.ids, glue::ids_of(g.get("greedy_ids"))) << stem;
  }
}

TEST(QwenVlModel, SwappedMeanAndStdDivergeAtThePixels) {
  QwenVlProcessor p = model_processor();
  std::swap(p.mean, p.std);
  EXPECT_EQ(report(run_image("qvl_wide", "qvl_wide.png", p), "qvl_wide").first_divergence(),
            "pixel_values.patch_stats");
}

TEST(QwenVlModel, WindowOrderNotInvertedDivergesAtTheFeatures) {
  // The blocks and the merger run in window order, so they still match; the tokens handed to the
  // language model do not.
  const compare::ProbeReport r =
      report(run_image("qvl_wide", "qvl_wide.png", model_processor(), "qwen_window_not_inverted"),
             "qvl_wide");
  EXPECT_EQ(r.first_divergence(), "model.visual");
}

TEST(QwenVlModel, MropeOnTheWrongAxesDivergesAtTheFirstAttention) {
  // A rope kernel that reads Qwen2.5-VL's sections as Qwen3-VL's interleaved t, h, w (the
  // faulty plugin's set_attr on the language model's first rope call: the tower's 4 blocks make
  // calls 0-7). Text tokens have equal t, h, w ids; the image tokens do not.
  const char* fault = R"({"op": "rope", "fault": "set_attr", "attr": "mrope",
                         "value": {"section": [2, 3, 3], "layout": "interleaved"}, "call": 8})";
  const compare::ProbeReport r =
      report(run_image("qvl_wide", "qvl_wide.png", model_processor(), "", fault), "qvl_wide");
  EXPECT_EQ(r.first_divergence().rfind("model.language_model.layers.0.self_attn", 0), 0u)
      << r.first_divergence();
}

}  // namespace
}  // namespace h0::model
