// Shared helpers for the store tests: sample runs and results, raw SQL on a store file, and a
// fixture that checks every store it made with PRAGMA integrity_check when the test ends.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "store/sqlite_store.h"
#include "test_util.h"

namespace h0::store::test {

inline RunStart sample_start(const std::string& platform = "cpu",
                             const std::string& versions_json = R"({"backend":"cpu","v":"1"})",
                             std::map<std::string, std::string> labels = {}) {
  RunStart s;
  s.suite = "ops-core";
  s.suite_file = "suites/ops.yaml";
  s.suite_sha256 = std::string(64, 'a');
  s.platform = platform;
  s.platform_file = "configs/platforms/" + platform + ".yaml";
  s.platform_sha256 = std::string(64, 'b');
  s.platform_content = "name: " + platform + "\nbackend: cpu\n";
  s.backend = "cpu";
  s.versions_json = versions_json;
  s.mesh = "1x1";
  s.labels = std::move(labels);
  return s;
}

// Result `i`: `metrics` metrics, and one profile with `samples` samples if samples >= 0.
inline ResultData sample_result(int i, int metrics = 3, int samples = -1) {
  ResultData r;
  r.case_id = "rmsnorm[dtype=f32,shape=7x" + std::to_string(i) + "]";
  r.check_id = "rmsnorm";
  r.kind = "op";
  r.params_json = R"({"dtype":"f32","i":)" + std::to_string(i) + "}";
  r.status = i % 5 == 0 ? "fail" : "pass";
  r.duration_s = 0.001 * i;
  r.message = i % 5 == 0 ? "max_abs 3e-2 > 1e-3" : "";
  r.details_json = R"({"worst_index":)" + std::to_string(i) + "}";
  for (int m = 0; m < metrics; ++m)
    r.metrics.emplace_back(std::string("m").append(std::to_string(m)), i + 0.5 * m);
  if (samples >= 0) {
    ProfileData p;
    p.phase = "steady";
    p.name = "rmsnorm[7x4096]";
    p.count = samples;
    p.total_ns = 1000.0 * samples;
    p.min_ns = 900, p.median_ns = 1000, p.p99_ns = 1200, p.mean_ns = 1010, p.stddev_ns = 30;
    p.bytes = 7 * 4096 * 8, p.flops = 7 * 4096 * 4;
    for (int k = 0; k < samples; ++k) p.samples_ns.push_back(900 + k * 1.25);
    r.profiles.push_back(p);
  }
  return r;
}

// Runs `sql` on the file at `path` through a separate connection; returns the first column of
// every row, joined by '\n'.
inline std::string raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
            SQLITE_OK);
  sqlite3_busy_timeout(db, 30000);
  std::string out;
  const char* tail = sql.c_str();
  while (*tail) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, tail, -1, &stmt, &tail), SQLITE_OK) << sqlite3_errmsg(db);
    if (stmt == nullptr) break;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      if (!out.empty()) out += '\n';
      out += text ? text : "NULL";
    }
    EXPECT_EQ(rc, SQLITE_DONE) << sqlite3_errmsg(db) << " in " << sql;
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return out;
}

// A temporary directory; every store path handed out is integrity-checked at the end.
class StoreTest : public ::testing::Test {
 protected:
  std::string store_path(const std::string& name = "store.db") {
    paths_.push_back(dir_.file("runs/" + name));
    return paths_.back();
  }
  void TearDown() override {
    for (const std::string& p : paths_) {
      if (!std::filesystem::exists(p)) continue;
      EXPECT_EQ(raw_sql(p, "PRAGMA integrity_check"), "ok") << p;
      EXPECT_EQ(raw_sql(p, "PRAGMA foreign_key_check"), "") << p;
    }
  }
  h0::test::TempDir dir_;
  std::vector<std::string> paths_;
};

}  // namespace h0::store::test
