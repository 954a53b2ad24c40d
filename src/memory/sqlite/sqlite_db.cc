#include "sqlite_db.h"

#include <filesystem>

namespace kope::memory::sqlite {
namespace {

StatusCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return StatusCode::kUnavailable;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return StatusCode::kCorruption;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_FULL:
    case SQLITE_PERM:
      return StatusCode::kIoError;
    case SQLITE_CONSTRAINT:
    case SQLITE_TOOBIG:
      return StatusCode::kInvalidArgument;
    default:
      return StatusCode::kInternal;
  }
}

}  // namespace

Status SqliteCheck(sqlite3* db, int rc, std::string_view call, std::source_location where) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return Status::Ok();
  std::string file = std::filesystem::path(where.file_name()).filename().string();
  std::string message = std::string(call) + " at " + file + ":" + std::to_string(where.line()) +
                        ": " + (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc)) + " (" +
                        sqlite3_errstr(rc) + ")";
  return Status(CodeFor(rc), std::move(message));
}

Query::Query(Query&& other) noexcept
    : db_(other.db_), stmt_(other.stmt_), bind_status_(std::move(other.bind_status_)) {
  other.stmt_ = nullptr;
}

Query::~Query() {
  if (stmt_ != nullptr) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

void Query::Note(int rc, std::string_view call) {
  if (rc != SQLITE_OK && bind_status_.ok()) bind_status_ = SqliteCheck(db_, rc, call);
}

Query& Query::Bind(int index, int64_t value) {
  Note(sqlite3_bind_int64(stmt_, index, value), "sqlite3_bind_int64");
  return *this;
}

Query& Query::Bind(int index, double value) {
  Note(sqlite3_bind_double(stmt_, index, value), "sqlite3_bind_double");
  return *this;
}

Query& Query::Bind(int index, std::optional<double> value) {
  return value.has_value() ? Bind(index, *value) : BindNull(index);
}

Query& Query::Bind(int index, std::string_view text) {
  Note(sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8),
       "sqlite3_bind_text64");
  return *this;
}

Query& Query::BindStatic(int index, std::string_view text) {
  Note(sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8),
       "sqlite3_bind_text64");
  return *this;
}

Query& Query::BindBlob(int index, std::string_view bytes) {
  Note(sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT),
       "sqlite3_bind_blob64");
  return *this;
}

Query& Query::BindNull(int index) {
  Note(sqlite3_bind_null(stmt_, index), "sqlite3_bind_null");
  return *this;
}

Query& Query::BindId(int index, int64_t id) { return id == 0 ? BindNull(index) : Bind(index, id); }

Result<bool> Query::Step(std::source_location where) {
  if (!bind_status_.ok()) return bind_status_;
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  Status status = SqliteCheck(db_, rc, "sqlite3_step", where);
  std::string sql = sqlite3_sql(stmt_) != nullptr ? sqlite3_sql(stmt_) : "";
  if (sql.size() > 80) sql = sql.substr(0, 77) + "...";
  return status.WithContext("in '" + sql + "'");
}

Status Query::Reset() {
  int rc = sqlite3_reset(stmt_);
  // sqlite3_reset repeats the error of the last step, which Step already reported.
  (void)rc;
  return bind_status_;
}

Status Query::Run(std::source_location where) {
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, Step(where));
    if (!row) return Status::Ok();
  }
}

Result<std::vector<int64_t>> ReadIds(Query& query) {
  std::vector<int64_t> ids;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return ids;
    ids.push_back(query.Int(0));
  }
}

std::optional<double> Query::OptionalDouble(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Double(column);
}

std::string Query::Text(int column) const { return std::string(TextView(column)); }

std::string_view Query::TextView(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  return std::string_view(reinterpret_cast<const char*>(text),
                          static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::string Query::Blob(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  if (data == nullptr) return {};
  return std::string(static_cast<const char*>(data),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

Result<std::unique_ptr<Db>> Db::Open(const std::filesystem::path& path, int flags) {
  sqlite3* handle = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &handle, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status status = SqliteCheck(handle, rc, "sqlite3_open_v2");
    sqlite3_close_v2(handle);
    return status;
  }
  sqlite3_extended_result_codes(handle, 1);
  return std::unique_ptr<Db>(new Db(handle));
}

Db::~Db() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close_v2(db_);
}

Status Db::Exec(std::string_view sql, std::source_location where) {
  std::string text(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);
  return SqliteCheck(db_, rc, "sqlite3_exec", where);
}

Result<Query> Db::Prepare(std::string_view sql, std::source_location where) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(stmt);
      return SqliteCheck(db_, rc, "sqlite3_prepare_v3", where);
    }
    it = cache_.emplace(std::string(sql), stmt).first;
  }
  return Query(db_, it->second);
}

Result<int64_t> Db::QueryInt(std::string_view sql, std::source_location where) {
  KOPE_ASSIGN_OR_RETURN(Query query, Prepare(sql, where));
  KOPE_ASSIGN_OR_RETURN(bool row, query.Step(where));
  if (!row) return Status::Internal("no result for '" + std::string(sql) + "'");
  return query.Int(0);
}

ReadSnapshot::ReadSnapshot(Db& db) : db_(db) {
  if (!db_.InTransaction()) {
    status_ = db_.Exec("BEGIN");
    owns_ = status_.ok();
  }
}

ReadSnapshot::~ReadSnapshot() {
  if (owns_) (void)db_.Exec("COMMIT");
}

}  // namespace kope::memory::sqlite
