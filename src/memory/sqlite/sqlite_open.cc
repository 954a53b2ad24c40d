// Opening the SQLite store: checking a location, creating or migrating its schema.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <system_error>
#include <thread>

#include "kope/memory/sqlite/sqlite_store.h"
#include "sqlite_schema.h"
#include "sqlite_store_impl.h"

#ifndef KOPE_PAGE_SIZE
#define KOPE_PAGE_SIZE 16384
#endif

namespace kope::memory {

namespace {

using sqlite::Db;
using sqlite::Query;

constexpr uintmax_t kQuickCheckLimitBytes = 64u << 20;
constexpr const char* kRequiredTables[] = {"tasks",    "hardware", "runs",     "sources",
                                           "attempts", "outcomes", "insights", "insight_evidence",
                                           "used",     "usage"};

Status Refuse(const std::filesystem::path& path, std::string why) {
  return Status::InvalidArgument("'" + path.string() + "' is not a kope experience store: " + why +
                                 "; the file was left untouched");
}

// The writability checks, before anything is created.
Status CheckWritable(const std::filesystem::path& path, bool exists) {
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status::IoError("cannot use the experience store '" + path.string() + "': its folder '" +
                           dir.string() + "' is not writable (" + std::strerror(errno) +
                           "); the store needs it for its write-ahead log. Choose another "
                           "location with --store or KOPE_STORE");
  }
  if (exists && ::access(path.c_str(), R_OK | W_OK) != 0) {
    return Status::IoError("cannot use the experience store '" + path.string() +
                           "': the file is not writable (" + std::strerror(errno) +
                           "). Choose another location with --store or KOPE_STORE");
  }
  return Status::Ok();
}

// Checks an existing non-empty file through a read-only connection.
Status CheckExisting(const std::filesystem::path& path, uintmax_t size) {
  char header[16] = {};
  {
    std::ifstream in(path, std::ios::binary);
    in.read(header, sizeof(header));
    if (in.gcount() < static_cast<std::streamsize>(sizeof(header)) ||
        std::memcmp(header, "SQLite format 3", 16) != 0) {
      return Refuse(path, "it is not a SQLite database");
    }
  }
  auto opened = Db::Open(path, SQLITE_OPEN_READONLY);
  if (!opened.ok()) return Refuse(path, "it cannot be opened (" + opened.status().message() + ")");
  Db& db = **opened;
  // Another process may be creating the store this moment (its write lock held while it sets
  // the schema up): wait for it as the store's own connection does, not fail at once.
  sqlite3_busy_timeout(db.handle(), StoreOptions{}.busy_timeout_ms);
  auto app = db.QueryInt("PRAGMA application_id");
  if (!app.ok()) {
    if (app.status().code() == StatusCode::kCorruption) {
      return Status::Corruption("the experience store '" + path.string() + "' is damaged (" +
                                app.status().message() + "); the file was left untouched");
    }
    return app.status();
  }
  if (*app == 0) {
    // A database with no tables and no schema version is a store another kope process has just
    // created and not yet initialized (or an empty SQLite file): InitializeSchema settles it under
    // a write lock.
    KOPE_ASSIGN_OR_RETURN(int64_t version, db.QueryInt("PRAGMA user_version"));
    KOPE_ASSIGN_OR_RETURN(int64_t tables, db.QueryInt("SELECT count(*) FROM sqlite_master"));
    if (version == 0 && tables == 0) return Status::Ok();
  }
  if (*app != sqlite::kApplicationId) {
    std::string tables;
    auto q =
        db.Prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT 6");
    while (q.ok()) {
      auto row = q->Step();
      if (!row.ok() || !*row) break;
      tables += (tables.empty() ? "" : ", ") + q->Text(0);
    }
    char id[16];
    std::snprintf(id, sizeof(id), "0x%08llx", static_cast<unsigned long long>(*app & 0xffffffff));
    return Refuse(path, "it is a SQLite database of another application (application_id " +
                            std::string(id) + (tables.empty() ? "" : ", tables " + tables) + ")");
  }
  KOPE_ASSIGN_OR_RETURN(int64_t version, db.QueryInt("PRAGMA user_version"));
  if (version > kSqliteSchemaVersion) {
    return Status::FailedPrecondition("the experience store '" + path.string() +
                                      "' was written by a newer kope (schema version " +
                                      std::to_string(version) + "; this build knows up to " +
                                      std::to_string(kSqliteSchemaVersion) +
                                      "); the file was left untouched");
  }
  auto damaged = [&](const std::string& why) {
    return Status::Corruption("the experience store '" + path.string() + "' is damaged: " + why +
                              "; the file was left untouched");
  };
  for (const char* table : kRequiredTables) {
    KOPE_ASSIGN_OR_RETURN(Query q, db.Prepare("SELECT count(*) FROM sqlite_master WHERE name = ?"));
    q.Bind(1, table);
    auto row = q.Step();
    if (!row.ok()) return damaged(row.status().message());
    if (q.Int(0) != 1) return damaged("table '" + std::string(table) + "' is missing");
  }
  if (size <= kQuickCheckLimitBytes) {
    auto q = db.Prepare("PRAGMA quick_check(1)");
    if (!q.ok()) return damaged(q.status().message());
    auto row = q->Step();
    if (!row.ok()) return damaged(row.status().message());
    if (!*row || q->Text(0) != "ok") return damaged(*row ? q->Text(0) : "no check result");
  }
  return Status::Ok();
}

// CheckExisting, with every failure phrased for the user, and the companion files that a
// read-only look at a write-ahead-logged file may create removed again when it is refused.
Status ValidateExisting(const std::filesystem::path& path, uintmax_t size) {
  namespace fs = std::filesystem;
  const fs::path wal = path.string() + "-wal", shm = path.string() + "-shm";
  std::error_code ec;
  const bool had_wal = fs::exists(wal, ec), had_shm = fs::exists(shm, ec);
  Status status = CheckExisting(path, size);
  if (status.ok()) return status;
  if (status.message().find(path.string()) == std::string::npos) {
    status = status.code() == StatusCode::kCorruption
                 ? Status::Corruption("the experience store '" + path.string() + "' is damaged (" +
                                      status.message() + "); the file was left untouched")
                 : status.WithContext("opening the experience store '" + path.string() + "'");
  }
  if (!had_wal && fs::exists(wal, ec) && fs::file_size(wal, ec) == 0) fs::remove(wal, ec);
  if (!had_shm && fs::exists(shm, ec)) fs::remove(shm, ec);
  return status;
}

// Brings the schema up to date in one write transaction (concurrent openers serialize here).
Status InitializeSchema(Db& db, const std::filesystem::path& path) {
  KOPE_RETURN_IF_ERROR(db.Exec("BEGIN IMMEDIATE"));
  auto work = [&]() -> Status {
    KOPE_ASSIGN_OR_RETURN(int64_t version, db.QueryInt("PRAGMA user_version"));
    KOPE_ASSIGN_OR_RETURN(int64_t app, db.QueryInt("PRAGMA application_id"));
    KOPE_ASSIGN_OR_RETURN(int64_t tables, db.QueryInt("SELECT count(*) FROM sqlite_master"));
    if (version == 0 && tables > 0) {
      return Refuse(path, "it is a SQLite database with tables but no kope schema");
    }
    if (version > 0 && app != sqlite::kApplicationId) {
      return Refuse(path, "it is a SQLite database of another application");
    }
    if (version > kSqliteSchemaVersion) {
      return Status::FailedPrecondition("the experience store '" + path.string() +
                                        "' was written by a newer kope");
    }
    if (version == kSqliteSchemaVersion) return Status::Ok();
    return sqlite::Migrate(db, kSqliteSchemaVersion);
  };
  Status status = work();
  if (!status.ok()) {
    (void)db.Exec("ROLLBACK");
    return status;
  }
  return db.Exec("COMMIT");
}

// Opens the connection to a checked location and brings its schema up to date.
Result<std::unique_ptr<GraphStore>> OpenConnection(const std::filesystem::path& path,
                                                   const StoreOptions& options) {
  KOPE_ASSIGN_OR_RETURN(std::unique_ptr<Db> db,
                        Db::Open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  KOPE_RETURN_IF_ERROR(
      sqlite::SqliteCheck(db->handle(), sqlite3_busy_timeout(db->handle(), options.busy_timeout_ms),
                          "sqlite3_busy_timeout"));
  KOPE_RETURN_IF_ERROR(sqlite::RegisterFunctions(*db));

  // Larger pages for a new store (ignored for an existing one): fewer B-tree splits and index
  // pages per inserted attempt. Must precede write-ahead logging.
  KOPE_RETURN_IF_ERROR(db->Exec("PRAGMA page_size = " + std::to_string(KOPE_PAGE_SIZE)));
  // Switching a new store to write-ahead logging takes an exclusive lock without waiting in
  // SQLite's busy handler: when another process is creating the same store, retry until the
  // busy timeout.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.busy_timeout_ms);
  for (int attempt = 0;; ++attempt) {
    KOPE_ASSIGN_OR_RETURN(sqlite::Query q, db->Prepare("PRAGMA journal_mode = WAL"));
    Result<bool> row = q.Step();
    if (!row.ok()) {
      if (row.status().code() != StatusCode::kUnavailable ||
          std::chrono::steady_clock::now() > deadline) {
        return row.status();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1 + attempt, 20)));
      continue;
    }
    if (!*row || q.Text(0) != "wal") {
      return Status::IoError("the experience store '" + path.string() +
                             "' cannot use write-ahead logging on this file system");
    }
    break;
  }
  KOPE_RETURN_IF_ERROR(
      db->Exec("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY; "
               "PRAGMA cache_size = -65536; PRAGMA mmap_size = 1073741824; "
               "PRAGMA wal_autocheckpoint = 8192; "
               "PRAGMA journal_size_limit = 67108864;"));
  KOPE_RETURN_IF_ERROR(InitializeSchema(*db, path));
  return std::unique_ptr<GraphStore>(new sqlite::SqliteStore(std::move(db), path));
}

}  // namespace

Result<std::unique_ptr<GraphStore>> OpenSqliteStore(const std::filesystem::path& path,
                                                    const StoreOptions& options) {
  namespace fs = std::filesystem;
  if (path.empty()) return Status::InvalidArgument("the experience store path is empty");
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  bool exists = fs::exists(st);
  if (exists && !fs::is_regular_file(st)) {
    return Status::InvalidArgument("the experience store '" + path.string() +
                                   "' is not a regular file");
  }
  if (!exists) {
    if (!options.create_if_missing) {
      return Status::NotFound("no experience store at '" + path.string() + "'");
    }
    fs::path dir = path.parent_path();
    if (!dir.empty() && !fs::exists(dir, ec)) {
      fs::create_directories(dir, ec);
      if (ec) {
        return Status::IoError("cannot create the folder '" + dir.string() +
                               "' for the experience store: " + ec.message());
      }
    }
  }
  KOPE_RETURN_IF_ERROR(CheckWritable(path, exists));
  uintmax_t size = exists ? fs::file_size(path, ec) : 0;
  if (exists && size > 0) KOPE_RETURN_IF_ERROR(ValidateExisting(path, size));

  Result<std::unique_ptr<GraphStore>> store = OpenConnection(path, options);
  if (!store.ok() && store.status().message().find(path.string()) == std::string::npos) {
    return store.status().WithContext("opening the experience store '" + path.string() + "'");
  }
  return store;
}

}  // namespace kope::memory
