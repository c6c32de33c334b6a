// The index arithmetic of Qwen2.5-VL's image path (qwen_vision.h), as transformers computes it.
#include "model/vision/qwen_vision.h"

#include <algorithm>

#include "base/error.h"

namespace h0::model {

WindowOrder qwen_window_order(const ImageGrid& g, int64_t merge, int64_t window_units) {
  const int64_t lh = g.h / merge, lw = g.w / merge, ws = std::max<int64_t>(window_units, 1);
  // transformers pads by ws - n % ws: a whole empty window row (column) when n divides evenly;
  // empty windows hold no patch and are dropped, so the count of windows does not matter.
  const int64_t nwh = (lh + ws - lh % ws) / ws, nww = (lw + ws - lw % ws) / ws;
  WindowOrder o;
  for (int64_t t = 0; t < g.t; ++t) {
    for (int64_t wy = 0; wy < nwh; ++wy) {
      for (int64_t wx = 0; wx < nww; ++wx) {
        int64_t n = 0;
        for (int64_t y = wy * ws; y < std::min((wy + 1) * ws, lh); ++y) {
          for (int64_t x = wx * ws; x < std::min((wx + 1) * ws, lw); ++x) {
            o.units.push_back((t * lh + y) * lw + x);
            ++n;
          }
        }
        if (n > 0) o.window_patches.push_back(n * merge * merge);
      }
    }
  }
  return o;
}

std::vector<int64_t> qwen_patch_permutation(const WindowOrder& order, int64_t merge) {
  const int64_t mu = merge * merge;
  std::vector<int64_t> rows;
  rows.reserve(order.units.size() * size_t(mu));
  for (int64_t u : order.units) {
    for (int64_t k = 0; k < mu; ++k) rows.push_back(u * mu + k);
  }
  return rows;
}

std::vector<int64_t> qwen_patch_positions(const ImageGrid& g, int64_t merge) {
  const int64_t n = g.patches();
  std::vector<int64_t> pos(size_t(2 * n));
  int64_t i = 0;
  for (int64_t t = 0; t < g.t; ++t) {
    for (int64_t by = 0; by < g.h / merge; ++by) {
      for (int64_t bx = 0; bx < g.w / merge; ++bx) {
        for (int64_t y = 0; y < merge; ++y) {
          for (int64_t x = 0; x < merge; ++x, ++i) {
            pos[size_t(i)] = by * merge + y;
            pos[size_t(n + i)] = bx * merge + x;
          }
        }
      }
    }
  }
  return pos;
}

MropePositions mrope_positions(const std::vector<int64_t>& ids, int64_t first, int64_t image_token,
                               const std::vector<ImageGrid>& grids, int64_t merge) {
  const size_t T = ids.size();
  MropePositions m;
  m.rows.assign(3 * T, 0);
  int64_t p = first;
  size_t image = 0;
  for (size_t i = 0; i < T;) {
    if (ids[i] != image_token) {
      for (size_t a = 0; a < 3; ++a) m.rows[a * T + i] = p;
      ++p;
      ++i;
      continue;
    }
    size_t run = i;
    while (run < T && ids[run] == image_token) ++run;
    if (image >= grids.size()) {
      throw InputError("prompt", "image token " + std::to_string(image_token) + " at position " +
                                     std::to_string(i) + " has no image: " +
                                     std::to_string(grids.size()) + " image(s) given");
    }
    const ImageGrid& g = grids[image++];
    const int64_t lh = g.h / merge, lw = g.w / merge, n = g.tokens(merge);
    if (int64_t(run - i) < n) {
      throw InputError("prompt", "image " + std::to_string(image) + " (grid " +
                                     std::to_string(g.t) + "x" + std::to_string(g.h) + "x" +
                                     std::to_string(g.w) + ") needs " + std::to_string(n) +
                                     " image tokens, position " + std::to_string(i) + " holds " +
                                     std::to_string(run - i));
    }
    for (int64_t u = 0; u < n; ++u) {  // t index 0: Qwen2.5-VL times an image's frames by 0
      m.rows[0 * T + i + size_t(u)] = p;
      m.rows[1 * T + i + size_t(u)] = p + (u / lw) % lh;
      m.rows[2 * T + i + size_t(u)] = p + u % lw;
    }
    p += std::max(lh, lw);
    i += size_t(n);  // an adjacent image's tokens start the next run
  }
  m.next = p;
  return m;
}

}  // namespace h0::model
