#include "plan/execution_sharding.h"

#include "base/error.h"

namespace h0::plan {

std::unique_ptr<model::Sharding> execution_sharding(const model::Architecture& arch,
                                                    const ParallelPlan& plan,
                                                    mesh::Communicator& world) {
  if (world.size() != plan.world()) {
    throw InputError("mesh " + plan_name(plan),
                     "needs " + std::to_string(plan.world()) + " ranks, this run has " +
                         std::to_string(world.size()) + " (launch with mpirun -np " +
                         std::to_string(plan.world()) + ")");
  }
  if (const auto issue = check_plan(arch, plan))
    throw InputError("mesh " + issue->dimension, issue->message);
  if (plan.ep > 1 && plan.etp() > 1) {
    throw InputError("mesh " + plan_name(plan),
                     "experts split over both ep and tp (etp " + std::to_string(plan.etp()) +
                         ") are not run by the executor; use ep = tp x dp");
  }
  const RankCoord at = coord_of(plan, world.rank());
  auto s = std::make_unique<model::Sharding>();
  s->slice = [arch, plan, at](const model::WeightInfo& w) -> std::optional<model::WeightSlice> {
    const std::optional<Slice> part = shard_of(w, arch, plan, at);
    if (!part) return std::nullopt;
    return model::WeightSlice{part->whole() ? -1 : part->axis, part->begin, part->end,
                              part->pieces};
  };
  const auto& a = arch.text.attn;
  s->heads = a.num_heads / plan.tp;
  s->kv_heads = kv_heads_per_rank(arch, plan);
  std::tie(s->vocab_begin, s->vocab_end) = rank_vocab(arch, plan, at.tp_rank);
  std::tie(s->layer_begin, s->layer_end) = stage_layers(arch, plan, at.pp_rank);
  std::tie(s->expert_begin, s->expert_end) = rank_experts(arch, plan, at.ep_rank);
  s->tp_rank = at.tp_rank;
  s->pp_rank = at.pp_rank;
  s->pp = plan.pp;
  s->experts_split_by_tp = plan.ep == 1;
  // Groups: tp = same stage and replica; ep = the whole stage; pipeline = same tp rank and replica.
  s->tp = world.split(int(at.pp_rank * plan.dp + at.dp_rank), int(at.tp_rank));
  s->ep = world.split(int(at.pp_rank), int(at.tp_rank + plan.tp * at.dp_rank));
  s->pp_group = world.split(int(at.dp_rank * plan.tp + at.tp_rank), int(at.pp_rank));
  s->label = "rank " + std::to_string(at.rank) + " (tp " + std::to_string(at.tp_rank) + ", pp " +
             std::to_string(at.pp_rank) + ", ep " + std::to_string(at.ep_rank) + ")";
  return s;
}

}  // namespace h0::plan
