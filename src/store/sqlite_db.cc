#include "store/sqlite_db.h"

#include <sqlite3.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>

#include "base/check.h"
#include "base/error.h"

namespace h0::store {
namespace {

constexpr int kBusyTimeoutMs = 30000;
// Extra attempts after SQLITE_BUSY, for the cases SQLite reports busy without waiting (WAL
// recovery by another connection) or after the busy timeout ran out under heavy contention.
constexpr int kBusyRetries = 5;

bool is_busy(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }

void backoff(int attempt) { std::this_thread::sleep_for(std::chrono::milliseconds(50 << attempt)); }

constexpr const char* kBegin = "BEGIN";
constexpr const char* kBeginImmediate = "BEGIN IMMEDIATE";
constexpr const char* kCommit = "COMMIT";

uint64_t byteswap64(uint64_t x) {
  uint64_t y = 0;
  for (int i = 0; i < 8; ++i) y = (y << 8) | ((x >> (8 * i)) & 0xff);
  return y;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Statement

Statement::~Statement() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

Statement& Statement::bind(int index, int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) db_.fail(rc, "cannot bind a value", sqlite3_sql(stmt_));
  return *this;
}

Statement& Statement::bind(int index, double value) {
  const int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) db_.fail(rc, "cannot bind a value", sqlite3_sql(stmt_));
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  // A non-null pointer, so that an empty string binds '' rather than NULL.
  const char* data = value.empty() ? "" : value.data();
  const int rc = sqlite3_bind_text64(stmt_, index, data, value.size(), SQLITE_STATIC, SQLITE_UTF8);
  if (rc != SQLITE_OK) db_.fail(rc, "cannot bind a value", sqlite3_sql(stmt_));
  return *this;
}

Statement& Statement::bind_null(int index) {
  const int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) db_.fail(rc, "cannot bind a value", sqlite3_sql(stmt_));
  return *this;
}

Statement& Statement::bind_f64_blob(int index, const std::vector<double>& values) {
  static const char kEmpty = 0;
  const void* data = values.empty() ? static_cast<const void*>(&kEmpty) : values.data();
  if constexpr (std::endian::native != std::endian::little) {
    scratch_.resize(values.size() * 8);
    for (size_t i = 0; i < values.size(); ++i) {
      const uint64_t le = byteswap64(std::bit_cast<uint64_t>(values[i]));
      std::memcpy(scratch_.data() + 8 * i, &le, 8);
    }
    if (!values.empty()) data = scratch_.data();
  }
  const int rc = sqlite3_bind_blob64(stmt_, index, data, values.size() * 8, SQLITE_STATIC);
  if (rc != SQLITE_OK) db_.fail(rc, "cannot bind a value", sqlite3_sql(stmt_));
  return *this;
}

int Statement::try_step() { return sqlite3_step(stmt_); }

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail(rc, "cannot read or write the store", sqlite3_sql(stmt_));
}

void Statement::run() {
  const bool row = step();
  H0_CHECK(!row) << "statement returned a row: " << sqlite3_sql(stmt_);
}

bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

int64_t Statement::integer(int col) const { return sqlite3_column_int64(stmt_, col); }

double Statement::real(int col) const {
  if (is_null(col)) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, col);
}

std::string Statement::text(int col) const {
  const auto* data = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  const int bytes = sqlite3_column_bytes(stmt_, col);
  return data ? std::string(data, static_cast<size_t>(bytes)) : std::string();
}

std::vector<double> Statement::f64_blob(int col) const {
  const void* data = sqlite3_column_blob(stmt_, col);
  const auto bytes = static_cast<size_t>(sqlite3_column_bytes(stmt_, col));
  if (bytes % 8 != 0) {
    throw InputError(db_.path(), "a samples blob of " + std::to_string(bytes) +
                                     " bytes is not a whole number of f64 values");
  }
  std::vector<double> values(bytes / 8);
  if (bytes > 0) std::memcpy(values.data(), data, bytes);
  if constexpr (std::endian::native != std::endian::little) {
    for (double& v : values) v = std::bit_cast<double>(byteswap64(std::bit_cast<uint64_t>(v)));
  }
  return values;
}

// ---------------------------------------------------------------------------------------------
// Database

Database::Database(const std::string& path) : path_(path) {
  const int rc =
      sqlite3_open_v2(path.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    throw InputError(path, "cannot open the store: " + why);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
}

Database::~Database() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

Statement Database::prepare(const char* sql) {
  sqlite3_stmt*& stmt = cache_[sql];
  if (stmt == nullptr) {
    const int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      cache_.erase(sql);
      fail(rc, "cannot read the store", sql);
    }
  }
  H0_CHECK(!sqlite3_stmt_busy(stmt)) << "statement borrowed while in use: " << sql;
  return Statement(*this, stmt);
}

void Database::exec(const char* sql) {
  for (int attempt = 0;; ++attempt) {
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) return;
    if (!is_busy(rc) || attempt == kBusyRetries) fail(rc, "cannot set up the store", sql);
    backoff(attempt);
  }
}

int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int Database::changes() const { return sqlite3_changes(db_); }

bool Database::in_transaction() const { return sqlite3_get_autocommit(db_) == 0; }

void Database::fail(int rc, std::string_view doing, const char* sql) const {
  const int code = sqlite3_extended_errcode(db_);
  const std::string why = (code == rc) ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
      throw InputError(path_, "not a harness store: the file is not an SQLite database");
    case SQLITE_CORRUPT:
      throw InputError(path_, "the store is corrupt (" + why + ")");
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw InputError(path_, std::string(doing) + ": " + why + " (another process held it for " +
                                  std::to_string(kBusyTimeoutMs / 1000) + " s)");
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_NOMEM:
    case SQLITE_NOLFS:
    case SQLITE_PROTOCOL:
      throw InputError(path_, std::string(doing) + ": " + why);
    default:
      H0_CHECK(false) << path_ << ": " << doing << ": " << why << " (SQLite code " << rc << ")"
                      << (sql ? " in: " : "") << (sql ? sql : "");
  }
  std::abort();  // unreachable: H0_CHECK(false) aborts
}

// ---------------------------------------------------------------------------------------------
// Transactions

WriteTransaction::WriteTransaction(Database& db) : db_(db) {
  H0_CHECK(!db.in_transaction()) << "a write transaction inside another transaction";
  for (int attempt = 0;; ++attempt) {
    const int rc = db_.prepare(kBeginImmediate).try_step();
    if (rc == SQLITE_DONE) break;
    if (!is_busy(rc) || attempt == kBusyRetries) db_.fail(rc, "cannot write to the store");
    backoff(attempt);
  }
  open_ = true;
}

WriteTransaction::~WriteTransaction() {
  if (open_ && db_.in_transaction())
    sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void WriteTransaction::commit() {
  H0_CHECK(open_) << "commit twice";
  db_.prepare(kCommit).run();
  open_ = false;
}

ReadTransaction::ReadTransaction(Database& db) : db_(db) {
  if (db_.in_transaction()) return;
  db_.prepare(kBegin).run();
  open_ = true;
}

ReadTransaction::~ReadTransaction() {
  if (open_ && db_.in_transaction())
    sqlite3_exec(db_.handle(), "COMMIT", nullptr, nullptr, nullptr);
}

}  // namespace h0::store
