// Single-node reads of the PostgreSQL store, statistics and the integrity check.
#include <algorithm>

#include "kope/memory/sqlite/sqlite_store.h"
#include "pg_schema.h"
#include "pg_store_impl.h"

namespace kope::memory {
namespace postgres {

std::vector<std::string> SplitClasses(std::string_view joined) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < joined.size()) {
    size_t end = joined.find(' ', start);
    if (end == std::string_view::npos) end = joined.size();
    if (end > start) out.emplace_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string JoinClasses(const std::vector<std::string>& classes) {
  std::string out;
  for (const std::string& c : classes) {
    if (!out.empty()) out += ' ';
    out += c;
  }
  return out;
}

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

AttemptNode ReadAttempt(const Query& q, int c) {
  AttemptNode a;
  a.id = q.Int(c);
  a.key = BlobToKey(q.Blob(c + 1));
  a.run_id = q.Int(c + 2);
  a.task_id = q.Int(c + 3);
  a.hardware_id = q.Int(c + 4);
  a.parent_id = q.Int(c + 5);  // NULL reads as 0
  a.source_hash = BlobToKey(q.Blob(c + 6));
  a.diff = q.Text(c + 7);
  a.decision = q.Text(c + 8);
  a.classes = SplitClasses(q.TextView(c + 9));
  a.proposer = q.Text(c + 10);
  a.prompt_tokens = q.Int(c + 11);
  a.completion_tokens = q.Int(c + 12);
  a.created_at = q.Int(c + 13);
  a.cost_usd = q.Double(c + 14);
  return a;
}

OutcomeNode ReadOutcome(const Query& q, int c) {
  OutcomeNode o;
  o.id = q.Int(c);
  o.key = BlobToKey(q.Blob(c + 1));
  o.attempt_id = q.Int(c + 2);
  o.stage = q.Text(c + 3);
  o.verdict = q.Text(c + 4);
  o.flagged = q.Int(c + 5) != 0;
  o.speedup = q.OptionalDouble(c + 6);
  o.time_ms = q.OptionalDouble(c + 7);
  o.roofline = q.OptionalDouble(c + 8);
  o.error_message = q.Text(c + 9);
  o.error_signature = q.Text(c + 10);
  o.evidence_json = q.Text(c + 11);
  o.created_at = q.Int(c + 12);
  o.task_id = q.Int(c + 13);
  o.hardware_id = q.Int(c + 14);
  o.op_family = q.Text(c + 15);
  return o;
}

InsightNode ReadInsight(const Query& q, int c) {
  InsightNode i;
  i.id = q.Int(c);
  i.key = BlobToKey(q.Blob(c + 1));
  i.kind = q.Text(c + 2);
  i.text = q.Text(c + 3);
  i.scope.op_family = q.Text(c + 4);
  i.scope.backend = q.Text(c + 5);
  i.scope.device = q.Text(c + 6);
  i.scope.arch = q.Text(c + 7);
  i.scope.compiler = q.Text(c + 8);
  i.scope.size_min = q.Double(c + 9);
  i.scope.size_max = q.Double(c + 10);
  i.classes = SplitClasses(q.TextView(c + 11));
  i.support = q.Int(c + 12);
  i.contradiction = q.Int(c + 13);
  i.effect_size = q.Double(c + 14);
  i.created_at = q.Int(c + 15);
  i.updated_at = q.Int(c + 16);
  return i;
}

TaskNode ReadTask(const Query& q, int c) {
  TaskNode t;
  t.id = q.Int(c);
  t.key = BlobToKey(q.Blob(c + 1));
  t.name = q.Text(c + 2);
  t.op_family = q.Text(c + 3);
  t.description = q.Text(c + 4);
  t.size = q.Double(c + 5);
  t.spec_hash = q.Text(c + 6);
  t.attrs_json = q.Text(c + 7);
  t.created_at = q.Int(c + 8);
  return t;
}

namespace {

constexpr std::string_view kHardwareSql =
    "SELECT id, key, backend, device, arch, attrs, created_at FROM hardware";
constexpr std::string_view kRunSql =
    "SELECT id, key, task_id, hardware_id, label, compiler, config, started_at FROM runs";

HardwareNode ReadHardware(const Query& q) {
  HardwareNode h;
  h.id = q.Int(0);
  h.key = BlobToKey(q.Blob(1));
  h.backend = q.Text(2);
  h.device = q.Text(3);
  h.arch = q.Text(4);
  h.attrs_json = q.Text(5);
  h.created_at = q.Int(6);
  return h;
}

RunNode ReadRun(const Query& q) {
  RunNode r;
  r.id = q.Int(0);
  r.key = BlobToKey(q.Blob(1));
  r.task_id = q.Int(2);
  r.hardware_id = q.Int(3);
  r.label = q.Text(4);
  r.compiler = q.Text(5);
  r.config_json = q.Text(6);
  r.started_at = q.Int(7);
  return r;
}

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
  return OneById<HardwareNode>(*db_, sql, NodeKind::kHardware, id, ReadHardware);
}

Result<RunNode> PostgresStore::GetRun(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql = std::string(kRunSql) + " WHERE id = ?";
  return OneById<RunNode>(*db_, sql, NodeKind::kRun, id, ReadRun);
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
