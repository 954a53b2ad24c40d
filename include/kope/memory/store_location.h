// Where the experience store lives, and opening it from a location string.
//
// The location is, in order of precedence: the `--store` flag, the KOPE_STORE environment
// variable, and the default $XDG_DATA_HOME/kope/experience.db (or
// ~/.local/share/kope/experience.db when XDG_DATA_HOME is not set). A location is a file path
// (the SQLite store); a "postgresql://" or "postgres://" URL is the shared PostgreSQL store
// (postgres/postgres_store.h).
// Thread-safe (reads the environment only).
#ifndef KOPE_MEMORY_STORE_LOCATION_H_
#define KOPE_MEMORY_STORE_LOCATION_H_

#include <memory>
#include <string>
#include <string_view>

#include "kope/base/status.h"
#include "kope/memory/graph_store.h"
#include "kope/memory/sqlite/sqlite_store.h"

namespace kope::memory {

// The default location; InvalidArgument when neither XDG_DATA_HOME nor HOME is set.
Result<std::string> DefaultStoreLocation();

// `flag_value` if not empty, else $KOPE_STORE if set and not empty, else the default.
Result<std::string> ResolveStoreLocation(std::string_view flag_value);

// Opens the store at a resolved location.
Result<std::unique_ptr<GraphStore>> OpenStore(std::string_view location,
                                              const StoreOptions& options = {});

}  // namespace kope::memory

#endif  // KOPE_MEMORY_STORE_LOCATION_H_
