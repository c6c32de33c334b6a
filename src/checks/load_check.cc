// `kind: load` — every rank of a plan loads its shards of a checkpoint, and the split is proved:
// each slice equals its region of the full tensor (sha256-checked as loaded), the ranks together
// hold every element, and no rank reads more than its share allows.
//
//   - id: tiny-llama/tp4
//     kind: load
//     model: configs/models/tiny-llama   # a checkpoint, or a config dir (synthesized, seed 0)
//     plan: {tp: 4}
//     expect: {max_rank_fraction: 0.30}  # bytes one rank reads / checkpoint bytes (optional)
// Metrics: ranks, bytes_read_total, max_rank_fraction, gb_per_s (all ranks, sequential).
#include "checks/load_check.h"

#include "base/error.h"
#include "checks/plan_check.h"
#include "model/weights/model_source.h"
#include "plan/rank_loader.h"
#include "suite/location.h"

namespace h0::checks {
namespace {

struct LoadCaseSpec {
  std::string id, check_id, model;
  plan::ParallelPlan parallel;
  double max_rank_fraction = 1.0;
};

class LoadCase : public PreparedCase {
 public:
  explicit LoadCase(LoadCaseSpec s) : s_(std::move(s)) {}

  nlohmann::json describe() const override {
    return {{"id", s_.id},
            {"check", s_.check_id},
            {"kind", "load"},
            {"model", s_.model},
            {"plan", plan::plan_name(s_.parallel)}};
  }

  CheckResult run(RunContext&) override {
    CheckResult r;
    const model::ModelSource src = model::resolve_model(s_.model);
    const model::Architecture arch = model::load_architecture(src.dir);
    const io::ShardedCheckpoint ckpt = io::ShardedCheckpoint::open(src.dir);
    const model::Inventory inv = plan::checkpoint_inventory(arch, ckpt);
    std::vector<plan::RankLoad> ranks;
    double worst = 0, seconds = 0;
    int64_t total = 0;
    for (int64_t rank = 0; rank < s_.parallel.world(); ++rank) {
      ranks.push_back(plan::load_rank(arch, inv, ckpt, s_.parallel, rank, {true}));
      const model::LoadReport& l = ranks.back().report;
      worst =
          std::max(worst, double(l.bytes_read) / double(std::max<int64_t>(l.checkpoint_bytes, 1)));
      total += l.bytes_read;
      seconds += l.seconds;
      r.profile.push_back(summarize("load", "rank " + std::to_string(rank), {l.seconds * 1e9}));
      r.profile.back().bytes = double(l.bytes_read);
    }
    const plan::ShardVerification v = plan::verify_rank_shards(inv, ckpt, ranks);
    r.metrics = {{"ranks", double(ranks.size())},
                 {"bytes_read_total", double(total)},
                 {"max_rank_fraction", worst},
                 {"gb_per_s", seconds > 0 ? double(total) / seconds / 1e9 : 0},
                 {"slices", double(v.slices)}};
    r.details["problems"] = v.problems;
    std::vector<std::string> failures = v.problems;
    if (worst > s_.max_rank_fraction) {
      failures.insert(failures.begin(), "a rank reads " + std::to_string(worst) +
                                            " of the checkpoint, more than " +
                                            std::to_string(s_.max_rank_fraction));
    }
    r.status = failures.empty() ? Status::kPass : Status::kFail;
    for (size_t i = 0; i < failures.size() && i < 5; ++i) {
      if (!r.message.empty()) r.message.append("; ");
      r.message.append(failures[i]);
    }
    return r;
  }

 private:
  LoadCaseSpec s_;
};

std::unique_ptr<PreparedCase> prepare(const suite::Case& c, const suite::Platform&) {
  LoadCaseSpec s;
  s.id = c.id;
  s.check_id = c.check->id;
  const YAML::Node model = case_field(c, "model");
  if (!model.IsDefined() || !model.IsScalar())
    suite::fail_at(c.check->where, "kind load needs a `model` directory");
  s.model = resolve_case_path(c, model.Scalar());
  model::Architecture arch;
  try {
    arch = model::load_architecture(s.model);
  } catch (const InputError& e) {
    suite::fail_at(c.check->file, model, e.what());
  }
  std::string note;
  s.parallel = parse_parallel_plan(c, arch, &note);
  if (const YAML::Node ex = case_field(c, "expect"); ex.IsDefined()) {
    if (!ex.IsMap())
      suite::fail_at(c.check->file, ex, "expect must be a mapping {max_rank_fraction: x}");
    suite::for_each_entry(
        c.check->file, ex, [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
          if (key != "max_rank_fraction")
            suite::fail_at(c.check->file, k,
                           "unknown expectation '" + key + "' (max_rank_fraction)");
          s.max_rank_fraction = as_double(c, v, "max_rank_fraction");
        });
  }
  return std::make_unique<LoadCase>(std::move(s));
}

}  // namespace

CheckKind load_check_kind() {
  return {"load", {"model", "plan", "expect", "timeout", "description"}, &prepare};
}

}  // namespace h0::checks
