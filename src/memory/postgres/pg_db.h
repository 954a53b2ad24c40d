// A thin checked layer over libpq, private to the memory component; the PostgreSQL twin of
// sqlite_db.h, with the same Query interface so that the store's code reads the same on both.
//
// Every libpq call whose result matters goes through PgCheck, which turns a failure into a Status
// naming the call, its call site, the server's SQLSTATE and message. Db owns one connection and
// its named prepared statements; SQL is written with SQLite's placeholders (`?` and `?N`), which
// Prepare rewrites to `$N`. A Query runs when it is first stepped and holds its whole result
// (PostgreSQL sends it at once), so that several may be open at a time. Not thread-safe: the
// owner serializes access.
#ifndef KOPE_SRC_MEMORY_POSTGRES_PG_DB_H_
#define KOPE_SRC_MEMORY_POSTGRES_PG_DB_H_

#include <libpq-fe.h>

#include <cstdint>
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

namespace kope::memory::postgres {

class Db;

// Ok when `result` has one of the successful statuses (command ok, tuples ok); otherwise a
// Status whose code follows the SQLSTATE (serialization failure, deadlock, lock not available,
// connection failure: Unavailable; data corrupted: Corruption; disk full, I/O: IoError;
// integrity constraint, invalid text: InvalidArgument; else Internal) and whose message reads
// "<call> at <file>:<line>: <server message> (SQLSTATE <code>)". `result` may be null (out of
// memory, lost connection): the connection's message is used.
Status PgCheck(PGconn* conn, const PGresult* result, std::string_view call,
               std::source_location where = std::source_location::current());

// Owns a PGresult.
struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

// A bound execution of a prepared statement; runs at its first Step (or Run).
class Query {
 public:
  Query(Db* db, PGconn* conn, std::string name, const std::string* sql)
      : db_(db), conn_(conn), name_(std::move(name)), sql_(sql) {}
  Query(Query&&) noexcept = default;
  Query& operator=(Query&&) = delete;

  Query& Bind(int index, int64_t value);
  Query& Bind(int index, int value) { return Bind(index, static_cast<int64_t>(value)); }
  Query& Bind(int index, double value);
  Query& Bind(int index, std::optional<double> value);
  Query& Bind(int index, std::string_view text);
  Query& Bind(int index, const char* text) { return Bind(index, std::string_view(text)); }
  Query& Bind(int index, const std::string& text) { return Bind(index, std::string_view(text)); }
  // libpq copies parameters when the statement runs, so this is Bind (kept for the same code).
  Query& BindStatic(int index, std::string_view text) { return Bind(index, text); }
  Query& BindBlob(int index, std::string_view bytes);  // a bytea parameter, sent as binary
  Query& BindNull(int index);
  // Binds 0 as NULL (ids where 0 means none).
  Query& BindId(int index, int64_t id);

  // True when a row is available, false when done. The statement runs at the first call.
  Result<bool> Step(std::source_location where = std::source_location::current());
  // Runs the statement (if it has not run), ignoring its rows.
  Status Run(std::source_location where = std::source_location::current());

  int64_t Int(int column) const;  // NULL reads as 0
  double Double(int column) const;
  bool IsNull(int column) const { return PQgetisnull(result_.get(), row_, column) != 0; }
  std::optional<double> OptionalDouble(int column) const;
  std::string Text(int column) const { return std::string(TextView(column)); }
  std::string_view TextView(int column) const;  // valid while this Query lives
  std::string Blob(int column) const;           // a bytea column's bytes

  // Rows changed by the INSERT, UPDATE or DELETE that ran.
  int64_t Changes() const;

 private:
  Status Execute(std::source_location where);
  struct Param {
    std::optional<std::string> value;
    bool binary = false;
  };
  Param& Slot(int index);

  Db* db_;  // the owner: a read whose connection was lost reconnects through it, once
  PGconn* conn_;
  std::string name_;
  const std::string* sql_;  // owned by Db (stable: entries are never erased)
  std::vector<Param> params_;
  PgResult result_;
  int row_ = -1;
  int rows_ = 0;
};

// Steps `query` to completion and returns the integer in the first column of each row.
Result<std::vector<int64_t>> ReadIds(Query& query);

class Db {
 public:
  // Connects with a libpq connection string or URL ("postgresql://...").
  static Result<std::unique_ptr<Db>> Open(const std::string& url);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  PGconn* handle() const { return conn_; }
  // Runs `sql` (SET statements) now and again after every reconnection.
  Status Configure(std::string sql);
  // Outside a transaction, a connection found broken (the server restarted, the connection was
  // terminated) is reset at the next Exec or Prepare: its prepared statements are made again and
  // Configure's statements run again. Inside one (an Exec of BEGIN until one of COMMIT or
  // ROLLBACK), the calls fail as Unavailable until the transaction is ended: it is lost.
  // Runs one or more statements without parameters or results.
  Status Exec(std::string_view sql, std::source_location where = std::source_location::current());
  // A query of `sql` (prepared on the server at first use, then reused).
  Result<Query> Prepare(std::string_view sql,
                        std::source_location where = std::source_location::current());
  // The integer result of a one-value query (a count).
  Result<int64_t> QueryInt(std::string_view sql,
                           std::source_location where = std::source_location::current());
  // Between an Exec of BEGIN and one of COMMIT or ROLLBACK (every transaction starts so); a
  // broken connection does not end it for the caller, who must still end it.
  bool InTransaction() const { return in_transaction_; }
  // The server's database and host, for messages (never the password).
  std::string Describe() const;

 private:
  explicit Db(PGconn* conn) : conn_(conn) {}
  Status Reconnect(std::source_location where);
  Status Configured(std::source_location where);
  PGconn* conn_;
  std::string session_sql_;
  bool in_transaction_ = false;  // between an Exec of BEGIN and one of COMMIT or ROLLBACK
  bool configured_ = true;       // Configure's statements ran on the current connection
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view sql) const { return std::hash<std::string_view>()(sql); }
  };
  friend class Query;
  struct Prepared {
    std::string name;
    std::string sql;     // the original text, for messages
    int generation = 0;  // of the connection it was prepared on
  };
  int generation_ = 0;  // connections made: the first, then one per reset
  std::unordered_map<std::string, Prepared, SqlHash, std::equal_to<>> cache_;
};

// SQLite placeholders (`?`, `?N`) as PostgreSQL's (`$N`), outside quoted text.
std::string ToPgPlaceholders(std::string_view sql);

// A read snapshot: BEGIN ISOLATION LEVEL REPEATABLE READ when no transaction is open, COMMIT on
// destruction.
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

}  // namespace kope::memory::postgres

#endif  // KOPE_SRC_MEMORY_POSTGRES_PG_DB_H_
