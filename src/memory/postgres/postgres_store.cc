// Opening the PostgreSQL store: connecting, checking the schema, creating or migrating it.
#include "kope/memory/postgres/postgres_store.h"

#include "pg_schema.h"
#include "pg_store_impl.h"

namespace kope::memory {
namespace {

using postgres::Db;

// Brings the schema up to date in one transaction, under the schema lock (concurrent openers
// serialize here).
Status InitializeSchema(Db& db, const std::string& where, const StoreOptions& options) {
  KOPE_RETURN_IF_ERROR(db.Exec("BEGIN"));
  auto work = [&]() -> Status {
    KOPE_RETURN_IF_ERROR(
        db.Exec("SELECT pg_advisory_xact_lock(" + std::to_string(postgres::kSchemaLock) + ")"));
    Result<int> version = postgres::StoredVersion(db);
    if (!version.ok()) {
      if (version.status().code() != StatusCode::kInvalidArgument) return version.status();
      return Status::InvalidArgument("the " + where + " is not a kope experience store: " +
                                     version.status().message() + "; nothing was changed");
    }
    if (*version == 0) {
      // Tables of another application refuse the schema; kope's own (kope_jobs, the work queue
      // that may have been created first) do not.
      KOPE_ASSIGN_OR_RETURN(int64_t tables,
                            db.QueryInt("SELECT count(*) FROM pg_tables WHERE schemaname = "
                                        "current_schema() AND tablename NOT LIKE 'kope\\_%'"));
      if (tables > 0) {
        return Status::InvalidArgument(
            "the " + where + " is not a kope experience store: its schema holds " +
            std::to_string(tables) + " tables but no kope store; nothing was changed");
      }
      if (!options.create_if_missing) {
        return Status::NotFound("no experience store in the " + where);
      }
    }
    if (*version > kSqliteSchemaVersion) {
      return Status::FailedPrecondition(
          "the experience store in the " + where + " was written by a newer kope (schema version " +
          std::to_string(*version) + "; this build knows up to " +
          std::to_string(kSqliteSchemaVersion) + "); nothing was changed");
    }
    if (*version == kSqliteSchemaVersion) return Status::Ok();
    return postgres::Migrate(db, kSqliteSchemaVersion);
  };
  Status status = work();
  if (!status.ok()) {
    (void)db.Exec("ROLLBACK");
    return status;
  }
  return db.Exec("COMMIT");
}

}  // namespace

bool IsPostgresLocation(std::string_view location) {
  return location.rfind("postgresql://", 0) == 0 || location.rfind("postgres://", 0) == 0;
}

Result<std::unique_ptr<GraphStore>> OpenPostgresStore(std::string_view url,
                                                      const StoreOptions& options) {
  if (url.empty()) return Status::InvalidArgument("the experience store URL is empty");
  KOPE_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(std::string(url)));
  const std::string where = db->Describe();
  KOPE_RETURN_IF_ERROR(db->Configure("SET client_min_messages = warning; SET lock_timeout = " +
                                     std::to_string(options.busy_timeout_ms)));
  Status status = InitializeSchema(*db, where, options);
  if (!status.ok()) {
    if (status.message().find(where) != std::string::npos) return status;
    return status.WithContext("opening the experience store in the " + where);
  }
  return std::unique_ptr<GraphStore>(new postgres::PostgresStore(std::move(db), where));
}

}  // namespace kope::memory
