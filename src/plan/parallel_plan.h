// The parallel plan: how a model's weights spread over tp·pp·dp ranks, and the one function that
// says which part of a weight tensor a rank holds (shard_of). The memory planner and the sharded
// loader both read weights through shard_of, so they can never disagree.
//
// Ranks: world = tp·pp·dp, numbered with tp fastest, then dp, then pp:
//   rank = tp_rank + tp·(dp_rank + dp·pp_rank).
// Pipeline: layer i lives on the stage split(num_layers, pp, ·) gives it; the embedding, the
// vision tower and the projector live on stage 0; the final norm, the LM head and the MTP layers on
// the last stage (a tied embedding is held by both ends).
// Tensor parallelism: column/row projections split over tp in whole units (heads); the
// vocabulary and the MLP intermediate split unevenly (remainders to the first ranks); kv heads
// split when num_kv_heads >= tp, else each rank holds one kv head, replicated over
// tp / num_kv_heads ranks.
// Expert parallelism: the tp·dp ranks of one stage form ep groups of etp = tp·dp/ep consecutive
// ranks; ep group g holds experts split(num_experts, ep, g), each tensor-split over its etp ranks.
// With ep == 1 experts split over tp like a dense MLP (etp = tp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/config/architecture.h"
#include "model/weights/inventory.h"

namespace h0::plan {

struct ParallelPlan {
  int64_t tp = 1, pp = 1, ep = 1, dp = 1;

  int64_t world() const { return tp * pp * dp; }
  // Ranks that tensor-split one expert: tp·dp/ep, or tp when ep == 1.
  int64_t etp() const { return ep == 1 ? tp : tp * dp / ep; }
};

// "tp=8 pp=2 ep=16 dp=2".
std::string plan_name(const ParallelPlan& plan);

// Fills in dp when the user did not give it: ep/tp when ep > tp, else 1. Returns a note for the
// plan ("dp=2 (from ep 16 over tp 8)") or "" when dp was given or stays 1.
std::string default_dp(ParallelPlan* plan, bool dp_given);

// A problem with a plan for a model, naming the plan dimension at fault ("tp").
struct PlanIssue {
  std::string dimension;  // "tp", "pp", "ep" or "dp"
  std::string message;    // "num_attention_heads 64 is not divisible by tp 3"
};

// Every dimension >= 1, heads divisible by tp, what each block the layers run needs of tp
// (Block::tp_issue: kv heads divisible by tp or tp by kv heads; Gated DeltaNet's key-head
// groups), pp <= layers, ep <= experts and ep dividing tp·dp. nullopt when the plan is valid.
std::optional<PlanIssue> check_plan(const model::Architecture& arch, const ParallelPlan& plan);

struct RankCoord {
  int64_t rank = 0;
  int64_t tp_rank = 0, dp_rank = 0, pp_rank = 0;
  int64_t ep_rank = 0;   // the ep group this rank belongs to (0 when ep == 1)
  int64_t etp_rank = 0;  // its position within that group's expert tensor split
};

// The coordinates of `rank` in [0, world).
RankCoord coord_of(const ParallelPlan& plan, int64_t rank);

// [begin, end) of part `index` of `n` items cut into `parts`: the first n % parts parts get one
// more. split(61, 2, 0) = [0, 31), split(61, 2, 1) = [31, 61).
std::pair<int64_t, int64_t> split(int64_t n, int64_t parts, int64_t index);

// The decoder layers [begin, end) of pipeline stage `pp_rank`.
std::pair<int64_t, int64_t> stage_layers(const model::Architecture& arch, const ParallelPlan& plan,
                                         int64_t pp_rank);
// The routed experts [begin, end) of ep group `ep_rank` ([0, 0) for a dense model).
std::pair<int64_t, int64_t> rank_experts(const model::Architecture& arch, const ParallelPlan& plan,
                                         int64_t ep_rank);
// The vocabulary rows [begin, end) of tensor-parallel rank `tp_rank`.
std::pair<int64_t, int64_t> rank_vocab(const model::Architecture& arch, const ParallelPlan& plan,
                                       int64_t tp_rank);
// The pipeline stage that holds `w` (its first, for a tied embedding).
int64_t stage_of(const model::WeightInfo& w, const model::Architecture& arch,
                 const ParallelPlan& plan);

// How many tp ranks hold each kv head: tp / num_kv_heads when kv heads < tp, else 1.
int64_t kv_head_replication(const model::Architecture& arch, const ParallelPlan& plan);
// The kv heads one tp rank holds.
int64_t kv_heads_per_rank(const model::Architecture& arch, const ParallelPlan& plan);

// The part of a weight tensor one rank holds.
struct Slice {
  int axis = -1;               // -1: the whole tensor; else the axis cut
  int64_t begin = 0, end = 0;  // [begin, end) along `axis` (0 and shape[0] when whole)
  std::vector<int64_t> shape;  // the slice's shape
  // A weight with WeightInfo::tp_parts: these ranges of axis 0, one after another (begin and
  // end are then 0).
  std::vector<std::pair<int64_t, int64_t>> pieces;

  bool whole() const { return axis < 0; }
  int64_t numel() const;
};

std::optional<Slice> shard_of(const model::WeightInfo& w, const model::Architecture& arch,
                              const ParallelPlan& plan, const RankCoord& at);

}  // namespace h0::plan
