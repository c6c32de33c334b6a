// What one rank of a parallel plan holds and whom it talks to, for the executor (the plan
// module derives it: plan/execution_sharding.h). Without a Sharding the executor runs the whole
// model alone.
//   TP: attention heads, kv heads (replicated in groups when fewer than tp), MLP columns and the
//       vocabulary split over `tp`; row-parallel outputs (o_proj, down_proj) all-reduced over it;
//       embedding rows outside the rank's vocabulary are zero before the all-reduce; the LM
//       head's logits all-gathered.
//   EP: routed experts [expert_begin, expert_end) held whole; each rank runs its experts on the
//       tokens routed to them and the outputs are summed over `ep` (dispatch + combine).
//   PP: layers [layer_begin, layer_end); hidden states received from the previous stage and sent
//       to the next over `pp`; the last stage's logits broadcast to the whole pipeline.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "mesh/communicator.h"
#include "model/weights/inventory.h"
#include "model/weights/weight_loader.h"

namespace h0::model {

struct Sharding {
  // The part of a weight this rank holds: nullopt = none, a slice with axis -1 = all of it.
  std::function<std::optional<WeightSlice>(const WeightInfo&)> slice;
  int64_t heads = 0, kv_heads = 0;  // attention heads and kv heads on this rank
  int64_t vocab_begin = 0, vocab_end = 0;
  int64_t layer_begin = 0, layer_end = 0;
  int64_t expert_begin = 0, expert_end = 0;
  int64_t tp_rank = 0, pp_rank = 0, pp = 1;
  bool experts_split_by_tp = true;  // ep == 1: expert weights split like the MLP
  std::unique_ptr<mesh::Communicator> tp, ep, pp_group;  // pp_group rank r = stage r
  std::string label;                                     // "rank 1 (tp 1, pp 0, ep 0)"
};

}  // namespace h0::model
