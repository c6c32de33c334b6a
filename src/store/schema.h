// The store's schema as an ordered list of migrations. Version N is the schema after migrations
// 1..N; the `schema_version` table holds the store's version (one row). A released migration
// never changes: a new table or column is a new migration at the end.
#pragma once

#include <span>
#include <string>

namespace h0::store {

class Database;

struct Migration {
  int version;      // the store's version once this migration ran; 1, 2, ... in order
  const char* sql;  // DDL only (no values); may hold several statements
};

// The migrations this harness knows, oldest first.
std::span<const Migration> migrations();

// The newest schema version this harness knows: migrations().back().version.
int latest_schema_version();

// Brings the store to the last version of `steps` (default: migrations()), running the missing
// ones and recording the new version in one write transaction; a store already at that version
// is only read. Returns the version the store now has. Throws InputError if the file is an
// SQLite database but not a harness store, or if its version is newer than `steps` knows.
int migrate(Database& db, std::span<const Migration> steps = migrations());

}  // namespace h0::store
