#include "pg_db.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace kope::memory::postgres {
namespace {

StatusCode CodeFor(std::string_view sqlstate) {
  if (sqlstate == "40001" || sqlstate == "40P01" || sqlstate == "55P03" || sqlstate == "57014" ||
      sqlstate.substr(0, 2) == "08" || sqlstate == "57P01" || sqlstate == "57P03") {
    return StatusCode::kUnavailable;
  }
  if (sqlstate == "XX001" || sqlstate == "XX002") return StatusCode::kCorruption;
  if (sqlstate.substr(0, 2) == "53" || sqlstate.substr(0, 2) == "58") return StatusCode::kIoError;
  if (sqlstate.substr(0, 2) == "23" || sqlstate.substr(0, 2) == "22") {
    return StatusCode::kInvalidArgument;
  }
  return StatusCode::kInternal;
}

std::string Trimmed(const char* message) {
  std::string text = message != nullptr ? message : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

int Nibble(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

}  // namespace

Status PgCheck(PGconn* conn, const PGresult* result, std::string_view call,
               std::source_location where) {
  ExecStatusType status = result != nullptr ? PQresultStatus(result) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY) {
    return Status::Ok();
  }
  std::string sqlstate;
  std::string text;
  if (result != nullptr) {
    const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    if (state != nullptr) sqlstate = state;
    text = Trimmed(PQresultErrorMessage(result));
  }
  if (text.empty()) text = Trimmed(conn != nullptr ? PQerrorMessage(conn) : "no connection");
  // A lost connection has no SQLSTATE: it is the server that is unavailable.
  if (sqlstate.empty() && (conn == nullptr || PQstatus(conn) == CONNECTION_BAD)) sqlstate = "08006";
  std::string file = std::filesystem::path(where.file_name()).filename().string();
  std::string message = std::string(call) + " at " + file + ":" + std::to_string(where.line()) +
                        ": " + text + (sqlstate.empty() ? "" : " (SQLSTATE " + sqlstate + ")");
  return Status(CodeFor(sqlstate), std::move(message));
}

Query::Param& Query::Slot(int index) {
  if (static_cast<int>(params_.size()) < index) params_.resize(index);
  return params_[index - 1];
}

Query& Query::Bind(int index, int64_t value) {
  Slot(index) = {std::to_string(value), false};
  return *this;
}

Query& Query::Bind(int index, double value) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  Slot(index) = {std::string(buffer, ec == std::errc() ? end : buffer), false};
  return *this;
}

Query& Query::Bind(int index, std::optional<double> value) {
  return value.has_value() ? Bind(index, *value) : BindNull(index);
}

Query& Query::Bind(int index, std::string_view text) {
  Slot(index) = {std::string(text), false};
  return *this;
}

Query& Query::BindBlob(int index, std::string_view bytes) {
  Slot(index) = {std::string(bytes), true};
  return *this;
}

Query& Query::BindNull(int index) {
  Slot(index) = {std::nullopt, false};
  return *this;
}

Query& Query::BindId(int index, int64_t id) { return id == 0 ? BindNull(index) : Bind(index, id); }

namespace {

// A statement that only reads: run again on a new connection when the old one is found lost.
bool IsRead(std::string_view sql) {
  while (!sql.empty() && (sql.front() == ' ' || sql.front() == '(')) sql.remove_prefix(1);
  if (!sql.starts_with("SELECT") && !sql.starts_with("WITH")) return false;
  for (std::string_view writes : {"INSERT", "UPDATE", "DELETE", "pg_advisory"}) {
    if (sql.find(writes) != std::string_view::npos) return false;
  }
  return true;
}

}  // namespace

Status Query::Execute(std::source_location where) {
  std::vector<const char*> values(params_.size());
  std::vector<int> lengths(params_.size()), formats(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    values[i] = p.value.has_value() ? p.value->data() : nullptr;
    lengths[i] = p.value.has_value() ? static_cast<int>(p.value->size()) : 0;
    formats[i] = p.binary ? 1 : 0;
  }
  auto run = [&] {
    result_.reset(PQexecPrepared(conn_, name_.c_str(), static_cast<int>(params_.size()),
                                 values.data(), lengths.data(), formats.data(), 0));
  };
  run();
  // A read that finds its connection lost (dropped while idle) runs again, once, on a new one.
  if (PQstatus(conn_) != CONNECTION_OK && !db_->in_transaction_ && IsRead(*sql_)) {
    const std::string sql = *sql_;
    if (db_->Reconnect(where).ok() && db_->Prepare(sql, where).ok()) run();
  }
  Status status = PgCheck(conn_, result_.get(), "PQexecPrepared", where);
  if (!status.ok()) {
    std::string sql = *sql_;
    if (sql.size() > 80) sql = sql.substr(0, 77) + "...";
    return status.WithContext("in '" + sql + "'");
  }
  rows_ = PQntuples(result_.get());
  return Status::Ok();
}

Result<bool> Query::Step(std::source_location where) {
  if (result_ == nullptr) KOPE_RETURN_IF_ERROR(Execute(where));
  if (row_ + 1 >= rows_) {
    row_ = rows_;
    return false;
  }
  ++row_;
  return true;
}

Status Query::Run(std::source_location where) {
  if (result_ == nullptr) return Execute(where);
  return Status::Ok();
}

int64_t Query::Int(int column) const {
  if (IsNull(column)) return 0;
  const char* text = PQgetvalue(result_.get(), row_, column);
  return std::strtoll(text, nullptr, 10);
}

double Query::Double(int column) const {
  if (IsNull(column)) return 0;
  return std::strtod(PQgetvalue(result_.get(), row_, column), nullptr);
}

std::optional<double> Query::OptionalDouble(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Double(column);
}

std::string_view Query::TextView(int column) const {
  if (result_ == nullptr || row_ < 0 || row_ >= rows_) return {};
  return std::string_view(PQgetvalue(result_.get(), row_, column),
                          static_cast<size_t>(PQgetlength(result_.get(), row_, column)));
}

std::string Query::Blob(int column) const {
  // bytea in text form: "\x" and two hex digits per byte.
  std::string_view text = TextView(column);
  if (text.size() < 2 || text.substr(0, 2) != "\\x") return std::string(text);
  text.remove_prefix(2);
  std::string out(text.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<char>((Nibble(text[2 * i]) << 4) | Nibble(text[2 * i + 1]));
  }
  return out;
}

int64_t Query::Changes() const {
  if (result_ == nullptr) return 0;
  return std::strtoll(PQcmdTuples(result_.get()), nullptr, 10);
}

Result<std::vector<int64_t>> ReadIds(Query& query) {
  std::vector<int64_t> ids;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return ids;
    ids.push_back(query.Int(0));
  }
}

std::string ToPgPlaceholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int next = 0;
  char quote = 0;
  for (size_t i = 0; i < sql.size(); ++i) {
    char c = sql[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
      out.push_back(c);
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out.push_back(c);
      continue;
    }
    if (c != '?') {
      out.push_back(c);
      continue;
    }
    size_t digits = i + 1;
    while (digits < sql.size() && sql[digits] >= '0' && sql[digits] <= '9') ++digits;
    if (digits > i + 1) {
      out += "$" + std::string(sql.substr(i + 1, digits - i - 1));
      i = digits - 1;
    } else {
      out += "$" + std::to_string(++next);
    }
  }
  return out;
}

Result<std::unique_ptr<Db>> Db::Open(const std::string& url) {
  PGconn* conn = PQconnectdb(url.c_str());
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    std::string message = Trimmed(conn != nullptr ? PQerrorMessage(conn) : "out of memory");
    PQfinish(conn);
    return Status::Unavailable("PQconnectdb: cannot connect to the PostgreSQL store: " + message);
  }
  // Notices (a table that exists already) are not the user's concern.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<Db>(new Db(conn));
}

Db::~Db() { PQfinish(conn_); }

Status Db::Configure(std::string sql) {
  session_sql_ = std::move(sql);
  configured_ = false;
  return Reconnect(std::source_location::current());
}

Status Db::Reconnect(std::source_location where) {
  if (PQstatus(conn_) == CONNECTION_OK) return Configured(where);
  if (in_transaction_) {
    return Status::Unavailable("at " + std::string(where.file_name()) + ":" +
                               std::to_string(where.line()) +
                               ": the connection to the PostgreSQL store was lost inside a "
                               "transaction, which is gone");
  }
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Status::Unavailable(
        "PQreset at " + std::string(where.file_name()) + ":" + std::to_string(where.line()) +
        ": the PostgreSQL store is unreachable: " + Trimmed(PQerrorMessage(conn_)));
  }
  ++generation_;  // the server forgot the connection's prepared statements
  configured_ = false;
  return Configured(where);
}

// Configure's statements, on a connection that has not run them yet (a new one, or one where
// they failed: they run again at the next call).
Status Db::Configured(std::source_location where) {
  if (configured_ || session_sql_.empty()) return Status::Ok();
  PgResult result(PQexec(conn_, session_sql_.c_str()));
  KOPE_RETURN_IF_ERROR(PgCheck(conn_, result.get(), "PQexec", where));
  configured_ = true;
  return Status::Ok();
}

Status Db::Exec(std::string_view sql, std::source_location where) {
  // The transactions this connection opens and ends (BEGIN, COMMIT, ROLLBACK), so that a lost
  // connection is not silently replaced in the middle of one.
  const bool begins = sql.starts_with("BEGIN");
  const bool ends = sql.starts_with("COMMIT") || sql.starts_with("ROLLBACK");
  if (ends && PQstatus(conn_) != CONNECTION_OK) {
    in_transaction_ = false;
    return Status::Unavailable("PQexec at " + std::string(where.file_name()) + ":" +
                               std::to_string(where.line()) +
                               ": the connection to the PostgreSQL store was lost, and with it "
                               "the transaction");
  }
  KOPE_RETURN_IF_ERROR(Reconnect(where));
  PgResult result(PQexec(conn_, std::string(sql).c_str()));
  Status status = PgCheck(conn_, result.get(), "PQexec", where);
  if (!status.ok() && begins && !in_transaction_ && PQstatus(conn_) != CONNECTION_OK) {
    // Found lost only now (a connection dropped while idle looks fine until used): nothing
    // had begun, so it begins again on a new connection.
    KOPE_RETURN_IF_ERROR(Reconnect(where));
    result.reset(PQexec(conn_, std::string(sql).c_str()));
    status = PgCheck(conn_, result.get(), "PQexec", where);
  }
  if (ends || (begins && status.ok())) in_transaction_ = begins;
  return status;
}

Result<Query> Db::Prepare(std::string_view sql, std::source_location where) {
  KOPE_RETURN_IF_ERROR(Reconnect(where));
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    std::string name = "kope_" + std::to_string(cache_.size() + 1);
    it = cache_.emplace(std::string(sql), Prepared{std::move(name), std::string(sql), -1}).first;
  }
  if (it->second.generation != generation_) {
    const std::string pg_sql = ToPgPlaceholders(sql);
    PgResult result(PQprepare(conn_, it->second.name.c_str(), pg_sql.c_str(), 0, nullptr));
    if (PQstatus(conn_) != CONNECTION_OK && !in_transaction_) {
      // Found lost only now; preparing changes nothing, so it is made again on a new connection.
      KOPE_RETURN_IF_ERROR(Reconnect(where));
      result.reset(PQprepare(conn_, it->second.name.c_str(), pg_sql.c_str(), 0, nullptr));
    }
    Status status = PgCheck(conn_, result.get(), "PQprepare", where);
    if (!status.ok()) {
      std::string text(sql.substr(0, 77));
      return status.WithContext("in '" + text + (sql.size() > 77 ? "...'" : "'"));
    }
    it->second.generation = generation_;
  }
  return Query(this, conn_, it->second.name, &it->second.sql);
}

Result<int64_t> Db::QueryInt(std::string_view sql, std::source_location where) {
  KOPE_ASSIGN_OR_RETURN(Query query, Prepare(sql, where));
  KOPE_ASSIGN_OR_RETURN(bool row, query.Step(where));
  if (!row) return Status::Internal("no result for '" + std::string(sql) + "'");
  return query.Int(0);
}

std::string Db::Describe() const {
  const char* host = PQhost(conn_);
  const char* port = PQport(conn_);
  const char* db = PQdb(conn_);
  return std::string("postgresql database '") + (db != nullptr ? db : "") + "' on " +
         (host != nullptr ? host : "") + ":" + (port != nullptr ? port : "");
}

ReadSnapshot::ReadSnapshot(Db& db) : db_(db) {
  if (!db_.InTransaction()) {
    status_ = db_.Exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
    owns_ = status_.ok();
  }
}

ReadSnapshot::~ReadSnapshot() {
  if (owns_) (void)db_.Exec("COMMIT");
}

}  // namespace kope::memory::postgres
