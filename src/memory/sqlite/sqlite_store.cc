// Single-node reads of the SQLite store, statistics and the integrity check.
#include "kope/memory/sqlite/sqlite_store.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "sqlite_schema.h"
#include "sqlite_store_impl.h"

namespace kope::memory {
namespace sqlite {

int StoredKind(NodeKind kind) { return static_cast<int>(kind); }
NodeKind KindFromStored(int64_t stored) { return static_cast<NodeKind>(stored); }

namespace {

constexpr std::string_view kHardwareSql =
    "SELECT id, key, backend, device, arch, attrs, created_at FROM hardware";
constexpr std::string_view kRunSql =
    "SELECT id, key, task_id, hardware_id, label, compiler, config, started_at FROM runs";

std::string_view TableOf(NodeKind kind) {
  switch (kind) {
    case NodeKind::kTask:
      return "tasks";
    case NodeKind::kHardware:
      return "hardware";
    case NodeKind::kRun:
      return "runs";
    case NodeKind::kAttempt:
      return "attempts";
    case NodeKind::kOutcome:
      return "outcomes";
    case NodeKind::kInsight:
      return "insights";
    case NodeKind::kWorkload:
      return "workloads";
  }
  return "tasks";
}

}  // namespace

Status NotFoundNode(NodeKind kind, NodeId id) {
  return Status::NotFound("no " + FormatNodeRef({kind, id}) + " in the store");
}

Result<TaskNode> SqliteStore::GetTask(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql =
      "SELECT " + std::string(kTaskColumns) + " FROM tasks t WHERE t.id = ?";
  return OneById<TaskNode>(*db_, sql, NodeKind::kTask, id,
                           [](const Query& q) { return ReadTask(q, 0); });
}

Result<HardwareNode> SqliteStore::GetHardware(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql = std::string(kHardwareSql) + " WHERE id = ?";
  return OneById<HardwareNode>(*db_, sql, NodeKind::kHardware, id, ReadHardware<Query>);
}

Result<RunNode> SqliteStore::GetRun(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql = std::string(kRunSql) + " WHERE id = ?";
  return OneById<RunNode>(*db_, sql, NodeKind::kRun, id, ReadRun<Query>);
}

Result<AttemptNode> SqliteStore::LoadAttempt(NodeId id) {
  static const std::string sql =
      "SELECT " + std::string(kAttemptColumns) + std::string(kAttemptFrom) + " WHERE a.id = ?";
  return OneById<AttemptNode>(*db_, sql, NodeKind::kAttempt, id,
                              [](const Query& q) { return ReadAttempt(q, 0); });
}

Result<AttemptNode> SqliteStore::GetAttempt(NodeId id) {
  std::lock_guard lock(mu_);
  return LoadAttempt(id);
}

Result<OutcomeNode> SqliteStore::GetOutcome(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql =
      "SELECT " + std::string(kOutcomeColumns) + " FROM outcomes o WHERE o.id = ?";
  return OneById<OutcomeNode>(*db_, sql, NodeKind::kOutcome, id,
                              [](const Query& q) { return ReadOutcome(q, 0); });
}

Result<InsightNode> SqliteStore::GetInsight(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql =
      "SELECT " + std::string(kInsightColumns) + " FROM insights i WHERE i.id = ?";
  return OneById<InsightNode>(*db_, sql, NodeKind::kInsight, id,
                              [](const Query& q) { return ReadInsight(q, 0); });
}

Result<std::string> SqliteStore::GetSource(std::string_view hash) {
  std::lock_guard lock(mu_);
  if (!IsValidKey(hash))
    return Status::InvalidArgument("bad source hash '" + std::string(hash) + "'");
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare("SELECT text FROM sources WHERE hash = ?"));
  q.BindBlob(1, KeyToBlob(hash));
  KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return Status::NotFound("no source with hash " + std::string(hash) + " in the store");
  return q.Text(0);
}

Result<NodeId> SqliteStore::FindByKey(NodeKind kind, std::string_view key) {
  std::lock_guard lock(mu_);
  if (!IsValidKey(key)) {
    return Status::InvalidArgument("bad node key '" + std::string(key) +
                                   "': expected 32 lowercase hex digits");
  }
  std::string sql = "SELECT id FROM " + std::string(TableOf(kind)) + " WHERE key = ?";
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
  q.BindBlob(1, KeyToBlob(key));
  KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) {
    return Status::NotFound("no " + std::string(NodeKindName(kind)) + " with key " +
                            std::string(key) + " in the store");
  }
  return q.Int(0);
}

Result<std::vector<TaskNode>> SqliteStore::ListTasks(std::string_view op_family) {
  std::lock_guard lock(mu_);
  static const std::string sql = "SELECT " + std::string(kTaskColumns) +
                                 " FROM tasks t WHERE ?1 = '' OR t.op_family = ?1 ORDER BY t.id";
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
  q.Bind(1, op_family);
  std::vector<TaskNode> out;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    out.push_back(ReadTask(q, 0));
  }
}

Result<std::vector<HardwareNode>> SqliteStore::ListHardware() {
  std::lock_guard lock(mu_);
  static const std::string sql = std::string(kHardwareSql) + " ORDER BY id";
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
  std::vector<HardwareNode> out;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    out.push_back(ReadHardware(q));
  }
}

Result<std::vector<RunNode>> SqliteStore::ListRuns(NodeId task_id) {
  std::lock_guard lock(mu_);
  static const std::string sql = std::string(kRunSql) + " WHERE ?1 = 0 OR task_id = ?1 ORDER BY id";
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
  q.Bind(1, task_id);
  std::vector<RunNode> out;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    out.push_back(ReadRun(q));
  }
}

Result<StoreStats> SqliteStore::Stats() {
  std::lock_guard lock(mu_);
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  StoreStats s;
  s.location = path_.string();
  KOPE_ASSIGN_OR_RETURN(int64_t version, db_->QueryInt("PRAGMA user_version"));
  s.schema_version = static_cast<int>(version);
  struct Count {
    int64_t* field;
    std::string_view sql;
  };
  const Count counts[] = {
      {&s.tasks, "SELECT count(*) FROM tasks"},
      {&s.hardware, "SELECT count(*) FROM hardware"},
      {&s.runs, "SELECT count(*) FROM runs"},
      {&s.attempts, "SELECT count(*) FROM attempts"},
      {&s.outcomes, "SELECT count(*) FROM outcomes"},
      {&s.insights, "SELECT count(*) FROM insights"},
      {&s.sources, "SELECT count(*) FROM sources"},
      {&s.source_bytes, "SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM sources"},
      {&s.evidence_edges, "SELECT count(*) FROM insight_evidence"},
      {&s.used_edges, "SELECT count(*) FROM used"},
      {&s.workloads, "SELECT count(*) FROM workloads"},
      {&s.from_workload_edges, "SELECT count(*) FROM from_workload"},
      {&s.deployments, "SELECT count(*) FROM deployments"},
      {&s.valid_outcomes,
       "SELECT count(*) FROM outcomes WHERE verdict = 'valid' AND flagged = 0 AND speedup IS NOT "
       "NULL"},
  };
  for (const Count& c : counts) {
    KOPE_ASSIGN_OR_RETURN(*c.field, db_->QueryInt(c.sql));
  }
  std::error_code ec;
  for (const char* suffix : {"", "-wal"}) {
    auto size = std::filesystem::file_size(path_.string() + suffix, ec);
    if (!ec) s.store_bytes += static_cast<int64_t>(size);
  }
  return s;
}

Status SqliteStore::CheckIntegrity() {
  std::lock_guard lock(mu_);
  if (in_write_) return Status::FailedPrecondition("CheckIntegrity inside a Write");
  {
    KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare("PRAGMA integrity_check(20)"));
    std::string problems;
    while (true) {
      KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      std::string line = q.Text(0);
      if (line != "ok") problems += (problems.empty() ? "" : "; ") + line;
    }
    if (!problems.empty()) {
      return Status::Corruption("integrity check of " + path_.string() + " failed: " + problems);
    }
  }
  // The full-text indexes against the tables they index (read-only despite the INSERT form).
  KOPE_RETURN_IF_ERROR(db_->Exec("BEGIN IMMEDIATE"));
  Status status;
  for (const char* table : {"tasks_fts", "attempts_fts", "insights_fts", "errors_fts"}) {
    std::string sql =
        "INSERT INTO " + std::string(table) + "(" + table + ") VALUES('integrity-check')";
    status = db_->Exec(sql);
    if (!status.ok()) {
      status = Status::Corruption("full-text index " + std::string(table) + " of " +
                                  path_.string() + " is inconsistent: " + status.message());
      break;
    }
  }
  KOPE_RETURN_IF_ERROR(db_->Exec("ROLLBACK"));
  return status;
}

}  // namespace sqlite
}  // namespace kope::memory
