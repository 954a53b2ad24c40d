// The PostgreSQL store's schema and its migrations, private to the memory component.
//
// The same schema versions as the SQLite store (sqlite_schema.cc), in PostgreSQL's dialect:
// BIGINT identities for ids, BYTEA keys, DOUBLE PRECISION for reals, and a generated tsvector
// column with a GIN index on each searched table where SQLite has an FTS5 table. The version and
// the application mark are rows of kope_meta. Migration N takes a store from version N-1 to N;
// migrations are frozen once released.
#ifndef KOPE_SRC_MEMORY_POSTGRES_PG_SCHEMA_H_
#define KOPE_SRC_MEMORY_POSTGRES_PG_SCHEMA_H_

#include <cstdint>

#include "kope/base/status.h"
#include "pg_db.h"

namespace kope::memory::postgres {

// The advisory lock keys: opening (schema changes) and writing.
inline constexpr int64_t kSchemaLock = 0x4b4f504500000001;
inline constexpr int64_t kWriteLock = 0x4b4f504500000002;

// The schema version of the store in the current schema: 0 when there is no kope_meta table;
// InvalidArgument when kope_meta belongs to another application.
Result<int> StoredVersion(Db& db);

// Applies the migrations from the store's current version up to `target_version`, in the
// caller's transaction.
Status Migrate(Db& db, int target_version);

}  // namespace kope::memory::postgres

#endif  // KOPE_SRC_MEMORY_POSTGRES_PG_SCHEMA_H_
