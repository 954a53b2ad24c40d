// Single-node reads of the PostgreSQL store, statistics and the integrity check.
#include <algorithm>

#include "kope/memory/sqlite/sqlite_store.h"
#include "pg_schema.h"
#include "pg_store_impl.h"

namespace kope::memory {
namespace postgres {

int StoredKind(NodeKind kind) { return static_cast<int>(kind); }
NodeKind KindFromStored(int64_t stored) { return static_cast<NodeKind>(stored); }

std::string ArrayLiteral(const std::vector<int64_t>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(values[i]);
  }
  return out + "}";
}

Result<std::vector<AttemptView>> ReadViews(Query& q) {
  std::vector<AttemptView> views;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return views;
    AttemptView view;
    view.attempt = ReadAttempt(q, 0);
    if (!q.IsNull(kAttemptColumnCount)) view.outcome = ReadOutcome(q, kAttemptColumnCount);
    views.push_back(std::move(view));
  }
}

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

Result<TaskNode> PostgresStore::GetTask(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql =
      "SELECT " + std::string(kTaskColumns) + " FROM tasks t WHERE t.id = ?";
  return OneById<TaskNode>(*db_, sql, NodeKind::kTask, id,
                           [](const Query& q) { return ReadTask(q, 0); });
}

Result<HardwareNode> PostgresStore::GetHardware(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql = std::string(kHardwareSql) + " WHERE id = ?";
  return OneById<HardwareNode>(*db_, sql, NodeKind::kHardware, id, ReadHardware<Query>);
}

Result<RunNode> PostgresStore::GetRun(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql = std::string(kRunSql) + " WHERE id = ?";
  return OneById<RunNode>(*db_, sql, NodeKind::kRun, id, ReadRun<Query>);
}

Result<AttemptNode> PostgresStore::LoadAttempt(NodeId id) {
  static const std::string sql =
      "SELECT " + std::string(kAttemptColumns) + std::string(kAttemptFrom) + " WHERE a.id = ?";
  return OneById<AttemptNode>(*db_, sql, NodeKind::kAttempt, id,
                              [](const Query& q) { return ReadAttempt(q, 0); });
}

Result<AttemptNode> PostgresStore::GetAttempt(NodeId id) {
  std::lock_guard lock(mu_);
  return LoadAttempt(id);
}

Result<OutcomeNode> PostgresStore::GetOutcome(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql =
      "SELECT " + std::string(kOutcomeColumns) + " FROM outcomes o WHERE o.id = ?";
  return OneById<OutcomeNode>(*db_, sql, NodeKind::kOutcome, id,
                              [](const Query& q) { return ReadOutcome(q, 0); });
}

Result<InsightNode> PostgresStore::GetInsight(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql =
      "SELECT " + std::string(kInsightColumns) + " FROM insights i WHERE i.id = ?";
  return OneById<InsightNode>(*db_, sql, NodeKind::kInsight, id,
                              [](const Query& q) { return ReadInsight(q, 0); });
}

Result<std::string> PostgresStore::GetSource(std::string_view hash) {
  std::lock_guard lock(mu_);
  if (!IsValidKey(hash))
    return Status::InvalidArgument("bad source hash '" + std::string(hash) + "'");
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare("SELECT text FROM sources WHERE hash = ?"));
  q.BindBlob(1, KeyToBlob(hash));
  KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return Status::NotFound("no source with hash " + std::string(hash) + " in the store");
  return q.Text(0);
}

Result<NodeId> PostgresStore::FindByKey(NodeKind kind, std::string_view key) {
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

Result<std::vector<TaskNode>> PostgresStore::ListTasks(std::string_view op_family) {
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

Result<std::vector<HardwareNode>> PostgresStore::ListHardware() {
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

Result<std::vector<RunNode>> PostgresStore::ListRuns(NodeId task_id) {
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

Result<StoreStats> PostgresStore::Stats() {
  std::lock_guard lock(mu_);
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  StoreStats s;
  s.location = location_;
  KOPE_ASSIGN_OR_RETURN(s.schema_version, StoredVersion(*db_));
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
      {&s.source_bytes, "SELECT coalesce(sum(octet_length(text)), 0) FROM sources"},
      {&s.evidence_edges, "SELECT count(*) FROM insight_evidence"},
      {&s.used_edges, "SELECT count(*) FROM used"},
      {&s.workloads, "SELECT count(*) FROM workloads"},
      {&s.from_workload_edges, "SELECT count(*) FROM from_workload"},
      {&s.deployments, "SELECT count(*) FROM deployments"},
      {&s.valid_outcomes,
       "SELECT count(*) FROM outcomes WHERE verdict = 'valid' AND flagged = 0 AND speedup IS NOT "
       "NULL"},
      {&s.store_bytes,
       "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN "
       "pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND "
       "c.relkind = 'r'"},
  };
  for (const Count& c : counts) {
    KOPE_ASSIGN_OR_RETURN(*c.field, db_->QueryInt(c.sql));
  }
  return s;
}

Status PostgresStore::CheckIntegrity() {
  std::lock_guard lock(mu_);
  if (in_write_) return Status::FailedPrecondition("CheckIntegrity inside a Write");
  // The server keeps its own pages consistent (and reports damage as it meets it): this reads
  // every row of every table, and checks the references that carry no foreign key.
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  for (const char* table :
       {"tasks", "hardware", "runs", "sources", "attempts", "outcomes", "insights",
        "insight_evidence", "used", "usage", "workloads", "from_workload", "deployments"}) {
    Status read =
        db_->QueryInt("SELECT count(*) FROM (SELECT * FROM " + std::string(table) + ") rows")
            .status();
    if (!read.ok()) {
      return Status::Corruption("reading table " + std::string(table) + " of the " + location_ +
                                " failed: " + read.message());
    }
  }
  KOPE_ASSIGN_OR_RETURN(
      int64_t stray,
      db_->QueryInt("SELECT count(*) FROM outcomes o LEFT JOIN attempts a ON a.id = o.attempt_id "
                    "WHERE a.task_id IS DISTINCT FROM o.task_id OR a.hardware_id IS DISTINCT "
                    "FROM o.hardware_id"));
  if (stray > 0) {
    return Status::Corruption(std::to_string(stray) +
                              " outcomes disagree with their attempt's task or hardware in the " +
                              location_);
  }
  return Status::Ok();
}

}  // namespace postgres
}  // namespace kope::memory
