// The shared experience store: one PostgreSQL database, for teams and clusters.
//
// OpenPostgresStore connects to `url` (a libpq URL such as
// "postgresql://user@host:5432/kope", or any libpq connection string) and brings the schema up to
// date: the same schema versions as the SQLite store (kSqliteSchemaVersion), with PostgreSQL's
// types, and full-text search over tsvector columns (GIN indexes) where SQLite has FTS5. The
// schema lives in the connection's current schema (search_path), so that one database can hold
// several stores. Opening
//   - refuses a schema that holds tables but no kope store, or a store of a newer schema
//     version, and changes nothing then;
//   - migrates an older store in one transaction, under an advisory lock, so that processes
//     opening the same store at once do not race.
// Writes run in one transaction each and take a transaction-scoped advisory lock, so that
// writers of one store are serialized as SQLite's are (a writer waits up to the busy timeout,
// then gets Unavailable); reads see one REPEATABLE READ snapshot each. A lost connection reports
// Unavailable. The returned object is thread-safe (GraphStore's contract) and holds one
// connection. Stats().store_bytes is the size of the store's tables and indexes.
#ifndef KOPE_MEMORY_POSTGRES_POSTGRES_STORE_H_
#define KOPE_MEMORY_POSTGRES_POSTGRES_STORE_H_

#include <memory>
#include <string_view>

#include "kope/base/status.h"
#include "kope/memory/graph_store.h"
#include "kope/memory/sqlite/sqlite_store.h"

namespace kope::memory {

// True for "postgresql://" and "postgres://" locations.
bool IsPostgresLocation(std::string_view location);

// `options.create_if_missing` false: a database without a kope store is NotFound.
Result<std::unique_ptr<GraphStore>> OpenPostgresStore(std::string_view url,
                                                      const StoreOptions& options = {});

}  // namespace kope::memory

#endif  // KOPE_MEMORY_POSTGRES_POSTGRES_STORE_H_
