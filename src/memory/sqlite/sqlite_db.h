// A thin checked layer over the SQLite C API, private to the memory component.
//
// Every call into SQLite whose result code matters goes through SqliteCheck, which turns a
// failure into a Status naming the call, its call site and SQLite's own message. Db owns one
// connection and a cache of prepared statements; Query is a borrowed, bound statement that is
// reset when it goes out of scope. Not thread-safe: the owner serializes access.
#ifndef KOPE_SRC_MEMORY_SQLITE_DB_H_
#define KOPE_SRC_MEMORY_SQLITE_DB_H_

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../stored_form.h"
#include "kope/base/status.h"

namespace kope::memory::sqlite {

// Ok for SQLITE_OK, SQLITE_ROW and SQLITE_DONE; otherwise a Status whose code follows the
// SQLite result (busy: Unavailable, corrupt / not a database: Corruption, I/O, permission and
// read-only: IoError, constraint: InvalidArgument, else Internal) and whose message reads
// "<call> at <file>:<line>: <sqlite3_errmsg> (<sqlite3_errstr>)".
Status SqliteCheck(sqlite3* db, int rc, std::string_view call,
                   std::source_location where = std::source_location::current());

// A prepared statement borrowed from Db's cache. Bind errors are kept and reported by Step.
class Query {
 public:
  Query(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Query(Query&& other) noexcept;
  Query& operator=(Query&&) = delete;
  ~Query();

  Query& Bind(int index, int64_t value);
  Query& Bind(int index, int value) { return Bind(index, static_cast<int64_t>(value)); }
  Query& Bind(int index, double value);
  Query& Bind(int index, std::optional<double> value);
  Query& Bind(int index, std::string_view text);
  Query& Bind(int index, const char* text) { return Bind(index, std::string_view(text)); }
  Query& Bind(int index, const std::string& text) { return Bind(index, std::string_view(text)); }
  // Binds text without copying it: the bytes must stay valid until this Query is destroyed (or
  // the parameter is bound again). For large texts that outlive the statement's run.
  Query& BindStatic(int index, std::string_view text);
  Query& BindBlob(int index, std::string_view bytes);
  Query& BindNull(int index);
  // Binds 0 as NULL (ids where 0 means none).
  Query& BindId(int index, int64_t id);

  // True when a row is available, false when done.
  Result<bool> Step(std::source_location where = std::source_location::current());
  // Resets the statement for another execution (bindings stay until rebound).
  Status Reset();
  // Steps to completion, expecting no rows.
  Status Run(std::source_location where = std::source_location::current());

  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  double Double(int column) const { return sqlite3_column_double(stmt_, column); }
  bool IsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::optional<double> OptionalDouble(int column) const;
  std::string Text(int column) const;
  std::string_view TextView(int column) const;  // valid until the next Step or reset
  std::string Blob(int column) const;

  // Rows changed by the last completed Run/Step of an INSERT, UPDATE or DELETE.
  int64_t Changes() const { return sqlite3_changes64(db_); }
  // The prepared statement, owned by Db's cache (valid while the Db lives).
  sqlite3_stmt* statement() const { return stmt_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  Status bind_status_;
  void Note(int rc, std::string_view call);
};

// Steps `query` to completion and returns the integer in the first column of each row (ids), in
// the rows' order; the step's error as it is.
Result<std::vector<int64_t>> ReadIds(Query& query);

class Db {
 public:
  // Opens a connection with sqlite3_open_v2 flags (SQLITE_OPEN_*).
  static Result<std::unique_ptr<Db>> Open(const std::filesystem::path& path, int flags);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* handle() const { return db_; }
  // Runs one or more statements without results.
  Status Exec(std::string_view sql, std::source_location where = std::source_location::current());
  // A cached prepared statement for `sql` (prepared on first use).
  Result<Query> Prepare(std::string_view sql,
                        std::source_location where = std::source_location::current());
  // The integer result of a one-value query (a PRAGMA, a count).
  Result<int64_t> QueryInt(std::string_view sql,
                           std::source_location where = std::source_location::current());
  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }
  int64_t LastInsertRowid() const { return sqlite3_last_insert_rowid(db_); }

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  // Looked up by string_view without building a string (transparent hash and equality).
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const { return std::hash<std::string_view>()(sql); }
  };
  std::unordered_map<std::string, sqlite3_stmt*, SqlHash, std::equal_to<>> cache_;
};

// A read snapshot: BEGIN on construction when no transaction is open, COMMIT on destruction.
class ReadSnapshot {
 public:
  explicit ReadSnapshot(Db& db);
  ~ReadSnapshot();
  const Status& status() const { return status_; }

 private:
  Db& db_;
  bool owns_ = false;
  Status status_;
};

}  // namespace kope::memory::sqlite

#endif  // KOPE_SRC_MEMORY_SQLITE_DB_H_
