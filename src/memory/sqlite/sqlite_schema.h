// The SQLite store's schema and its migrations, private to the memory component.
//
// The schema version is PRAGMA user_version; PRAGMA application_id marks the file as a kope
// store. Migration N takes a store from version N-1 to N; migrations are frozen once released
// (a change is a new migration), so that a store written by any earlier version can be brought
// up to date.
#ifndef KOPE_SRC_MEMORY_SQLITE_SCHEMA_H_
#define KOPE_SRC_MEMORY_SQLITE_SCHEMA_H_

#include <cstdint>

#include "kope/base/status.h"
#include "sqlite_db.h"

namespace kope::memory::sqlite {

// 'KOPE' in ASCII.
inline constexpr int32_t kApplicationId = 0x4b4f5045;

// Registers the SQL functions the schema's migrations use (kope_error_signature).
Status RegisterFunctions(Db& db);

// Applies the migrations from the store's current user_version up to `target_version`, each in
// the caller's transaction, and sets application_id and user_version.
Status Migrate(Db& db, int target_version);

}  // namespace kope::memory::sqlite

#endif  // KOPE_SRC_MEMORY_SQLITE_SCHEMA_H_
