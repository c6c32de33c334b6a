// A memory plan for people (a per-rank table and a verdict) and for machines (JSON). Ranks of
// one stage whose every number is the same are shown once, with their count; ranks that an
// uneven split makes different are shown each.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "plan/memory_plan.h"

namespace h0::plan {

// Indices into plan.ranks of ranks shown as one row, in rank order of their first member.
std::vector<std::vector<size_t>> group_ranks(const MemoryPlan& plan);

// "0-7", "0-7,16-23", "3".
std::string rank_list(const MemoryPlan& plan, const std::vector<size_t>& group);

// The per-rank table, one line per group, with a header line; no trailing verdict.
std::string plan_table(const MemoryPlan& plan);

// "fits: KV cache holds 1,234 tokens per replica, 8,192 needed" or "does not fit: <reason>".
std::string plan_verdict(const MemoryPlan& plan);

// Everything in the plan: options, notes, every rank, the verdict.
nlohmann::json plan_json(const MemoryPlan& plan);

}  // namespace h0::plan
