// RunData <-> the rows of stacks, runs, results, metrics and profiles. Each function runs inside
// the caller's transaction (or as one statement); none opens a write transaction itself.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "store/run_data.h"

namespace h0::store {

class Database;

// Returns the id of the stack with stack.fingerprint, inserting the stack if it is new.
int64_t insert_stack(Database& db, const StackData& stack);

// Inserts the run row (its stack too if new; not its results); `pid` is the process writing it.
// run.finished_at empty is stored as NULL. Returns the run's id.
int64_t insert_run(Database& db, const RunData& run, int64_t pid);

// Inserts one result with its metrics (in order) and profiles; returns the result's id.
int64_t insert_result(Database& db, int64_t run_id, const ResultData& result);

// Every run without results, newest first (by started_at, then id).
std::vector<RunData> select_runs(Database& db);

// The run `run_id`, with its results, metrics and profiles if `with_results`, read in one
// snapshot; its pid into `pid` when not null. nullopt if absent.
std::optional<RunData> select_run(Database& db, int64_t run_id, bool with_results,
                                  int64_t* pid = nullptr);

// The number of results of run `run_id`.
int64_t count_results(Database& db, int64_t run_id);

}  // namespace h0::store
