// The index arithmetic of Qwen2.5-VL's image path, as transformers computes it
// (Qwen2_5_VisionTransformerPretrainedModel.rot_pos_emb / get_window_index and
// Qwen2_5_VLModel.get_rope_index): pure functions, unit-tested on their own; the tower that uses
// them is Qwen2.5-VL's tower (model/blocks/qwen_vl_tower.cc).
#pragma once

#include <cstdint>
#include <vector>

namespace h0::model {

// One image's image_grid_thw, in patches (t is 1 for an image: its two temporal frames are one
// patch deep).
struct ImageGrid {
  int64_t t = 1, h = 0, w = 0;
  int64_t patches() const { return t * h * w; }
  int64_t tokens(int64_t merge) const { return patches() / (merge * merge); }
};

// get_window_index for one image: the merge units (merge × merge patches, numbered in the
// processor's order) reordered window by window — windows of `window_units` × `window_units`
// units, row-major over the unit grid padded to whole windows, units row-major inside each — and
// the patch count of each non-empty window in that order (cu_window_seqlens' differences).
struct WindowOrder {
  std::vector<int64_t> units;
  std::vector<int64_t> window_patches;
};
WindowOrder qwen_window_order(const ImageGrid& g, int64_t merge, int64_t window_units);

// The patches of `order.units` in their order: unit u's merge² patches are u·merge² … (the
// processor keeps a unit's patches together).
std::vector<int64_t> qwen_patch_permutation(const WindowOrder& order, int64_t merge);

// rot_pos_emb's position ids: [2, patches] (row 0 the patch's row h, row 1 its column w), the
// patches in the processor's order (units row-major, each unit's patches row-major; t frames
// repeat).
std::vector<int64_t> qwen_patch_positions(const ImageGrid& g, int64_t merge);

// get_rope_index for `ids`: the M-RoPE position ids [3, T] (rows t, h, w). A text token takes
// position p on all three rows and p advances by one; a run of `image_token` ids takes the next
// grid of `grids` (in order) and its tokens' ids are p + (t index, unit row, unit column) — the t
// index 0 for an image — after which p advances by max(units high, units wide). `first` is the
// first token's p (0 for a fresh sequence, the previous call's `next` after). InputError when a
// run of image tokens is not the next grid's tokens(merge) long or the grids run out.
struct MropePositions {
  std::vector<int64_t> rows;  // [3, T], axis-major
  int64_t next = 0;
};
MropePositions mrope_positions(const std::vector<int64_t>& ids, int64_t first, int64_t image_token,
                               const std::vector<ImageGrid>& grids, int64_t merge);

}  // namespace h0::model
