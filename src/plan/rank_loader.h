// Sharded loading: one rank of a parallel plan reads exactly its slices of a checkpoint (a
// column-parallel weight only its rows, a row-parallel one only its columns, another stage's
// layers and another expert group's experts not at all), as plan::shard_of says, after the
// checkpoint is checked against the model's tensor inventory. verify_rank_shards proves the
// split: every slice equals its region of the full tensor and the ranks together cover it.
#pragma once

#include <string>
#include <vector>

#include "io/sharded_checkpoint.h"
#include "model/config/architecture.h"
#include "model/weights/inventory.h"
#include "model/weights/weight_loader.h"
#include "plan/parallel_plan.h"

namespace h0::plan {

struct RankLoad {
  int64_t rank = 0;
  model::LoadReport report;
  int64_t tensors_skipped = 0;  // inventory tensors this rank holds none of
  std::vector<std::string>
      notes;  // tensors read as stored, not as the inventory says (verify_checkpoint)
};

// The inventory of the checkpoint as released (quantized when the config says so), without
// the MTP layers unless the checkpoint holds them.
model::Inventory checkpoint_inventory(const model::Architecture& arch,
                                      const io::ShardedCheckpoint& ckpt);

// Loads rank `rank`'s slices. Throws InputError for a plan the model cannot take or a
// checkpoint that does not match the inventory.
RankLoad load_rank(const model::Architecture& arch, const model::Inventory& inventory,
                   const io::ShardedCheckpoint& ckpt, const ParallelPlan& plan, int64_t rank,
                   const model::LoadOptions& options);

struct ShardVerification {
  int64_t tensors = 0, slices = 0;
  std::vector<std::string>
      problems;  // "model.layers.0.mlp.down_proj.weight: rank 1 slice differs from the full tensor"
};
// Checks every rank's loaded slices against the full tensors read from `ckpt`: each slice
// equals its region, and every element of every tensor is held by at least one rank.
ShardVerification verify_rank_shards(const model::Inventory& inventory,
                                     const io::ShardedCheckpoint& ckpt,
                                     const std::vector<RankLoad>& ranks);

}  // namespace h0::plan
