#include "store/sqlite_store.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>

#include "base/check.h"
#include "base/error.h"
#include "base/sha256.h"
#include "base/status.h"
#include "store/run_rows.h"
#include "store/schema.h"
#include "store/sqlite_db.h"

namespace h0::store {
namespace {

constexpr const char* kFinishRun = "UPDATE runs SET finished_at = ?2, status = ?3 WHERE id = ?1";
constexpr const char* kRunningOnHost =
    "SELECT id, pid FROM runs WHERE status = 'running' AND host = ?1";
constexpr const char* kMarkIncomplete =
    "UPDATE runs SET status = 'incomplete' WHERE id = ?1 AND status = 'running'";
constexpr const char* kRunIdsOldestFirst = "SELECT id FROM runs ORDER BY id";
constexpr const char* kRunByUuid = "SELECT id, status FROM runs WHERE uuid = ?1";
constexpr const char* kCountRuns = "SELECT count(*) FROM runs";
constexpr const char* kRunExists = "SELECT count(*) FROM runs WHERE id = ?1";
constexpr const char* kStacksWithPrefix =
    "SELECT fingerprint FROM stacks WHERE substr(fingerprint, 1, length(?1)) = ?1";

}  // namespace

std::string utc_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t{};
  gmtime_r(&ts.tv_sec, &t);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &t);
  char millis[16];
  std::snprintf(millis, sizeof(millis), ".%03dZ", static_cast<int>(ts.tv_nsec / 1000000));
  return std::string(date) + millis;
}

namespace {

// Returns 32 lowercase hex digits from /dev/urandom.
std::string random_uuid() {
  unsigned char bytes[16];
  std::FILE* f = std::fopen("/dev/urandom", "rb");
  H0_CHECK(f != nullptr) << "cannot open /dev/urandom";
  const size_t got = std::fread(bytes, 1, sizeof(bytes), f);
  std::fclose(f);
  H0_CHECK(got == sizeof(bytes)) << "short read from /dev/urandom";
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

}  // namespace

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

namespace {

// True only when the process certainly does not exist (another user's process is alive).
bool process_gone(int64_t pid) {
  return pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

bool is_complete(const RunData& run) { return is_complete_run(run.status); }

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Parses a string of decimal digits; nullopt if it does not fit in int64.
std::optional<int64_t> parse_digits(std::string_view s) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

int64_t count(Database& db, const char* sql, std::optional<int64_t> arg = std::nullopt) {
  Statement q = db.prepare(sql);
  if (arg) q.bind(1, *arg);
  H0_CHECK(q.step()) << sql;
  return q.integer(0);
}

}  // namespace

struct SqliteStore::Impl {
  explicit Impl(const std::string& path) : db(path) {}

  // Marks `running` runs of this host whose process is gone as `incomplete`.
  void mark_interrupted() {
    std::vector<int64_t> gone;
    {
      Statement q = db.prepare(kRunningOnHost);
      q.bind(1, host);
      while (q.step()) {
        if (process_gone(q.integer(1))) gone.push_back(q.integer(0));
      }
    }
    if (gone.empty()) return;
    std::vector<int64_t> marked;  // by this open, not by another process opening concurrently
    WriteTransaction tx(db);
    for (int64_t id : gone) {
      db.prepare(kMarkIncomplete).bind(1, id).run();
      if (db.changes() == 1) marked.push_back(id);
    }
    tx.commit();
    for (int64_t id : marked) interrupted.push_back(*select_run(db, id, /*with_results=*/false));
  }

  Database db;
  int version = 0;
  std::string host;
  std::vector<RunData> interrupted;
};

SqliteStore::SqliteStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SqliteStore::~SqliteStore() = default;

std::unique_ptr<SqliteStore> SqliteStore::open(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) throw InputError(path, "cannot create the store's directory: " + ec.message());
  }
  auto impl = std::make_unique<Impl>(path);
  Database& db = impl->db;
  db.exec("PRAGMA foreign_keys = ON");
  db.exec("PRAGMA synchronous = NORMAL");
  // Small pages: each add_result commits a few pages (results, their index, metrics) to the WAL,
  // and a row is a few hundred bytes, so 1 KiB pages write a quarter of what 4 KiB pages do.
  // Takes effect only when the file is created.
  db.exec("PRAGMA page_size = 1024");
  // Migrating first reads the file: one that is not ours fails there, before WAL changes it.
  impl->version = migrate(db);
  db.exec("PRAGMA journal_mode = WAL");
  // Checkpoint (and fsync) every ~40 MiB of WAL rather than every 1000 pages.
  db.exec("PRAGMA wal_autocheckpoint = 40000");
  impl->host = host_name();
  impl->mark_interrupted();
  return std::unique_ptr<SqliteStore>(new SqliteStore(std::move(impl)));
}

const std::string& SqliteStore::path() const { return impl_->db.path(); }

int SqliteStore::schema_version() const { return impl_->version; }

const std::vector<RunData>& SqliteStore::interrupted_runs() const { return impl_->interrupted; }

RunData run_record_of(const RunStart& start) {
  RunData run;
  run.suite = start.suite;
  run.suite_file = start.suite_file;
  run.suite_sha256 = start.suite_sha256;
  run.platform = start.platform;
  run.platform_file = start.platform_file;
  run.platform_sha256 = start.platform_sha256;
  run.platform_content = start.platform_content;
  run.stack.backend = start.backend;
  run.stack.versions_json = start.versions_json.empty() ? "{}" : start.versions_json;
  run.stack.fingerprint =
      base::sha256_hex(run.stack.versions_json.data(), run.stack.versions_json.size());
  run.host = start.host.empty() ? host_name() : start.host;
  run.mesh = start.mesh;
  run.started_at = utc_now();
  run.status = "running";
  run.labels = start.labels;
  return run;
}

int64_t SqliteStore::begin_run(RunData* run) {
  if (run->uuid.empty()) run->uuid = random_uuid();
  if (run->started_at.empty()) run->started_at = utc_now();
  run->status = "running";
  run->finished_at.clear();
  WriteTransaction tx(impl_->db);
  run->id = insert_run(impl_->db, *run, getpid());
  tx.commit();
  return run->id;
}

int64_t SqliteStore::begin_run(const RunStart& start) {
  RunData run = run_record_of(start);
  return begin_run(&run);
}

int64_t SqliteStore::add_result(int64_t run_id, const ResultData& result) {
  WriteTransaction tx(impl_->db);
  const int64_t id = insert_result(impl_->db, run_id, result);
  tx.commit();
  return id;
}

void SqliteStore::finish_run(int64_t run_id, const std::string& status) {
  RunData run;
  run.id = run_id;
  run.status = status;
  run.finished_at = utc_now();
  finish_run(run);
}

void SqliteStore::finish_run(const RunData& run) {
  const int64_t run_id = run.id;
  const std::string& status = run.status;
  const std::string& finished_at = run.finished_at;
  H0_CHECK(status == "pass" || status == "fail") << "finish_run status '" << status << "'";
  H0_CHECK(!finished_at.empty()) << "finish_run: run " << run_id << " has no finished_at";
  WriteTransaction tx(impl_->db);
  impl_->db.prepare(kFinishRun).bind(1, run_id).bind(2, finished_at).bind(3, status).run();
  H0_CHECK(impl_->db.changes() == 1) << "finish_run: no run " << run_id;
  tx.commit();
}

std::vector<RunData> SqliteStore::list_runs() const { return select_runs(impl_->db); }

std::optional<RunData> SqliteStore::load_run(int64_t run_id) const {
  return select_run(impl_->db, run_id, /*with_results=*/true);
}

bool SqliteStore::is_selector(const std::string& text) {
  if (text == "latest" || all_digits(text)) return true;
  for (const char* prefix : {"latest~", "label:", "stack:", "platform:"})
    if (text.rfind(prefix, 0) == 0) return true;
  return false;
}

int64_t SqliteStore::resolve(const std::string& selector) const {
  const std::string where = "selector '" + selector + "'";
  const auto no_match = [&] {
    return InputError(where, "no run matches (" + std::to_string(count(impl_->db, kCountRuns)) +
                                 " runs in " + path() + ")");
  };
  if (all_digits(selector)) {
    const auto id = parse_digits(selector);
    if (!id || count(impl_->db, kRunExists, *id) == 0) throw no_match();
    return *id;
  }
  // Every other selector names complete runs only, newest first.
  std::vector<RunData> runs = list_runs();
  std::erase_if(runs, [](const RunData& r) { return !is_complete(r); });
  const auto first = [&](auto&& matches) -> int64_t {
    for (const RunData& r : runs) {
      if (matches(r)) return r.id;
    }
    throw no_match();
  };
  const auto value_after = [&](std::string_view prefix) -> std::optional<std::string> {
    if (selector.rfind(prefix, 0) != 0) return std::nullopt;
    return selector.substr(prefix.size());
  };
  if (selector == "latest") return first([](const RunData&) { return true; });
  if (const auto n = value_after("latest~")) {
    if (!all_digits(*n)) throw InputError(where, "expected latest~N with N a count of runs");
    const auto back = parse_digits(*n);
    if (!back || *back >= static_cast<int64_t>(runs.size())) throw no_match();
    return runs[static_cast<size_t>(*back)].id;
  }
  if (const auto kv = value_after("label:")) {
    const size_t eq = kv->find('=');
    if (eq == std::string::npos) throw InputError(where, "expected label:key=value");
    const std::string key = kv->substr(0, eq), value = kv->substr(eq + 1);
    return first([&](const RunData& r) {
      const auto it = r.labels.find(key);
      return it != r.labels.end() && it->second == value;
    });
  }
  if (const auto name = value_after("platform:")) {
    return first([&](const RunData& r) { return r.platform == *name; });
  }
  if (const auto prefix = value_after("stack:")) {
    if (prefix->empty()) throw InputError(where, "expected stack:<fingerprint prefix>");
    std::vector<std::string> stacks;
    {
      Statement q = impl_->db.prepare(kStacksWithPrefix);
      q.bind(1, *prefix);
      while (q.step()) stacks.push_back(q.text(0));
    }
    if (stacks.size() > 1) {
      std::string all;
      for (const std::string& s : stacks) all += (all.empty() ? "" : ", ") + s;
      throw InputError(where, "the prefix matches " + std::to_string(stacks.size()) + " stacks (" +
                                  all + "); give more digits");
    }
    return first([&](const RunData& r) { return r.stack.fingerprint.rfind(*prefix, 0) == 0; });
  }
  throw InputError(where,
                   "expected a run id, latest, latest~N, label:key=value, "
                   "platform:<name> or stack:<fingerprint prefix>");
}

int SqliteStore::merge_from(const SqliteStore& other, std::vector<std::string>* conflicts) {
  Database& here = impl_->db;
  Database& there = other.impl_->db;
  WriteTransaction tx(here);
  ReadTransaction snapshot(there);  // a no-op when merging a store into itself
  std::vector<int64_t> ids;
  {
    Statement q = there.prepare(kRunIdsOldestFirst);
    while (q.step()) ids.push_back(q.integer(0));
  }
  int copied = 0;
  for (int64_t id : ids) {
    int64_t pid = 0;
    std::optional<RunData> run = select_run(there, id, /*with_results=*/false, &pid);
    H0_CHECK(run.has_value()) << "run " << id << " vanished inside a read transaction";
    std::optional<int64_t> local_id;
    std::string local_status;
    {
      Statement q = here.prepare(kRunByUuid);
      q.bind(1, run->uuid);
      if (q.step()) {
        local_id = q.integer(0);
        local_status = q.text(1);
      }
    }
    if (local_id) {
      const int64_t n_here = count_results(here, *local_id);
      const int64_t n_there = count_results(there, id);
      std::string differs;
      if (local_status != run->status) {
        differs = "status " + local_status + " here, " + run->status + " in " + other.path();
      }
      if (n_here != n_there) {
        differs += (differs.empty() ? "" : "; ") + std::to_string(n_here) + " results here, " +
                   std::to_string(n_there) + " in " + other.path();
      }
      if (!differs.empty() && conflicts != nullptr) {
        conflicts->push_back("run " + run->uuid + " (" + run->suite + " on " + run->platform +
                             ", " + run->started_at + "): " + differs);
      }
      continue;
    }
    run = select_run(there, id, /*with_results=*/true);
    const int64_t new_id = insert_run(here, *run, pid);
    for (const ResultData& r : run->results) insert_result(here, new_id, r);
    ++copied;
  }
  tx.commit();
  return copied;
}

}  // namespace h0::store
