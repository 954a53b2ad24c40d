// The embedded experience store: one SQLite file.
//
// OpenSqliteStore opens (or creates) the store at `path` and brings its schema up to date:
// a store written by an earlier version of kope is migrated, in one transaction, when it is
// opened. Before it changes anything it checks that
//   - the path can be written (the file, if it exists, and its folder, which holds the
//     write-ahead log): otherwise IoError, and nothing is created;
//   - an existing file is a kope store: a file that is not SQLite, a SQLite database of another
//     application, a damaged store, or a store of a newer schema is refused with a message that
//     says which, and the file is left byte-for-byte untouched (it is checked through a read-only
//     connection). The header and the schema are always checked; a store of up to 64 MiB is also
//     quick-checked page by page, while damage deeper in a larger one is reported as Corruption
//     by the query that meets it (CheckIntegrity checks everything).
// The store uses write-ahead logging, synchronous=FULL (a committed write survives a crash of the
// process or the machine), and BEGIN IMMEDIATE transactions with a busy timeout, so that several
// processes can share one file. The returned object is thread-safe (GraphStore's contract) and
// holds one connection with a 64 MiB page cache.
#ifndef KOPE_MEMORY_SQLITE_SQLITE_STORE_H_
#define KOPE_MEMORY_SQLITE_SQLITE_STORE_H_

#include <filesystem>
#include <memory>

#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::memory {

struct StoreOptions {
  // Create the file (and its folder) when missing; otherwise a missing store is NotFound.
  bool create_if_missing = true;
  // How long a write waits for another process's transaction before giving up.
  int busy_timeout_ms = 10000;
};

// The schema version this build writes. Version 1: the first release. Version 2: outcomes
// carry a normalized error signature, indexed (backfilled on migration). Version 3: two ranking
// indexes fewer (a family on any hardware, a hardware for any family). Version 4: deployment
// workloads. Version 5: an attempt's cost; deployment reports.
inline constexpr int kSqliteSchemaVersion = 5;

Result<std::unique_ptr<GraphStore>> OpenSqliteStore(const std::filesystem::path& path,
                                                    const StoreOptions& options = {});

}  // namespace kope::memory

#endif  // KOPE_MEMORY_SQLITE_SQLITE_STORE_H_
