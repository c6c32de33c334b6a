// A thin layer over the sqlite3 C API for the store: a connection with its cached prepared
// statements, a statement borrowed for one use, and transactions. Values reach SQL only through
// bound parameters. Errors: a SQLite error caused by our own SQL or a broken invariant (misuse,
// constraint) is an H0_CHECK; one caused by the file (not a database, corrupt, locked past the
// busy timeout, disk full, unwritable) is an InputError naming the file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace h0::store {

class Database;

// One use of a cached prepared statement: bind ?1, ?2, ... then step. The statement is reset
// and its bindings cleared when this goes out of scope, so no read snapshot stays open.
// Bound strings and blobs are not copied: they must outlive the last step().
class Statement {
 public:
  Statement(Database& db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds parameter `index` (1-based). A NaN double is stored as NULL (SQLite's rule) and read
  // back as NaN by real().
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) { return bind(index, int64_t{value}); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind_null(int index);
  // Binds `values` as a blob of little-endian f64 (empty vector -> empty blob, not NULL).
  Statement& bind_f64_blob(int index, const std::vector<double>& values);

  // Returns true when a row is available, false when the statement is done.
  bool step();
  // Steps a statement that returns no rows to completion.
  void run();
  // Steps once and returns SQLite's result code instead of throwing (for retries).
  int try_step();

  bool is_null(int col) const;
  int64_t integer(int col) const;
  double real(int col) const;       // NULL -> NaN
  std::string text(int col) const;  // NULL -> ""
  std::vector<double> f64_blob(int col) const;

 private:
  Database& db_;
  sqlite3_stmt* stmt_;
  std::vector<uint8_t> scratch_;  // little-endian copy for bind_f64_blob on big-endian hosts
};

// One connection. Not thread-safe: one thread uses it at a time.
class Database {
 public:
  // Opens or creates `path` with a 30 s busy timeout and foreign keys on. Throws InputError if
  // the file cannot be opened.
  explicit Database(const std::string& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Borrows the statement for `sql`, preparing it on first use. `sql` must be a string with
  // static storage (a named constant); statements are cached by its address.
  Statement prepare(const char* sql);
  // Runs SQL without parameters (pragmas, DDL). Retries SQLITE_BUSY a few times.
  void exec(const char* sql);

  int64_t last_insert_rowid() const;
  int changes() const;
  bool in_transaction() const;

  // Throws the error for result code `rc` (see the file comment): `doing` says what failed, for
  // the user; `sql` (our statement, if any) is shown only when the error is our bug.
  [[noreturn]] void fail(int rc, std::string_view doing, const char* sql = nullptr) const;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  std::unordered_map<const char*, sqlite3_stmt*> cache_;
};

// BEGIN IMMEDIATE ... COMMIT: takes the write lock up front (waiting up to the busy timeout,
// then retrying a few times), so a write transaction never fails half-way on a lock.
// Rolls back if destroyed uncommitted.
class WriteTransaction {
 public:
  explicit WriteTransaction(Database& db);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void commit();

 private:
  Database& db_;
  bool open_ = false;
};

// BEGIN ... COMMIT around several reads, so they see one snapshot. A no-op inside a transaction
// already open on the same connection.
class ReadTransaction {
 public:
  explicit ReadTransaction(Database& db);
  ~ReadTransaction();
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  Database& db_;
  bool open_ = false;
};

}  // namespace h0::store
