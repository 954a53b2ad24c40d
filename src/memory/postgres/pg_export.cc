// Export of the PostgreSQL store: the whole graph, or one op family's closed subgraph.
#include "pg_store_impl.h"

namespace kope::memory::postgres {
namespace {

// Temporary tables holding the ids of the family subgraph.
constexpr const char* kSubgraphSql = R"sql(
CREATE TEMP TABLE x_attempts(id BIGINT PRIMARY KEY);
CREATE TEMP TABLE x_insights(id BIGINT PRIMARY KEY);
CREATE TEMP TABLE x_runs(id BIGINT PRIMARY KEY);
CREATE TEMP TABLE x_tasks(id BIGINT PRIMARY KEY);
INSERT INTO x_insights SELECT id FROM insights WHERE op_family = :family;
INSERT INTO x_attempts SELECT a.id FROM attempts a JOIN tasks t ON t.id = a.task_id
  WHERE t.op_family = :family;
INSERT INTO x_attempts SELECT o.attempt_id FROM insight_evidence e
  JOIN outcomes o ON o.id = e.outcome_id WHERE e.insight_id IN (SELECT id FROM x_insights)
  ON CONFLICT DO NOTHING;
INSERT INTO x_attempts
  WITH RECURSIVE ancestors(id) AS (
    SELECT a.parent_id FROM attempts a WHERE a.id IN (SELECT id FROM x_attempts)
      AND a.parent_id IS NOT NULL
    UNION SELECT a.parent_id FROM attempts a JOIN ancestors ON a.id = ancestors.id
      WHERE a.parent_id IS NOT NULL)
  SELECT id FROM ancestors
  ON CONFLICT DO NOTHING;
INSERT INTO x_runs SELECT DISTINCT run_id FROM attempts WHERE id IN (SELECT id FROM x_attempts);
INSERT INTO x_runs SELECT r.id FROM runs r JOIN tasks t ON t.id = r.task_id
  WHERE t.op_family = :family ON CONFLICT DO NOTHING;
INSERT INTO x_tasks SELECT id FROM tasks WHERE op_family = :family;
INSERT INTO x_tasks SELECT task_id FROM runs WHERE id IN (SELECT id FROM x_runs)
  ON CONFLICT DO NOTHING;
)sql";

constexpr const char* kDropSubgraphSql =
    "DROP TABLE IF EXISTS pg_temp.x_attempts; DROP TABLE IF EXISTS pg_temp.x_insights; "
    "DROP TABLE IF EXISTS pg_temp.x_runs; DROP TABLE IF EXISTS pg_temp.x_tasks;";

// Runs `sql` and hands each row to `emit`.
template <typename Emit>
Status EachRow(Db& db, const std::string& sql, Emit emit) {
  KOPE_ASSIGN_OR_RETURN(Query q, db.Prepare(sql));
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return Status::Ok();
    KOPE_RETURN_IF_ERROR(emit(q));
  }
}

// Which rows an export takes: all of them, or those of the subgraph's temp tables.
struct Scope {
  bool subgraph = false;
  std::string In(const char* column, const char* table) const {
    return subgraph ? std::string(" WHERE ") + column + " IN (SELECT id FROM pg_temp." + table + ")"
                    : std::string();
  }
  std::string Where(const std::string& clause) const {
    return subgraph ? " WHERE " + clause : std::string();
  }
};

// The subgraph of one op family, into temp tables (the family bound as a literal: the
// statements run once, through PQexec).
Status MakeSubgraph(Db& db, const std::string& op_family) {
  KOPE_RETURN_IF_ERROR(db.Exec(kDropSubgraphSql));
  std::string family;
  for (char c : op_family) family += c == '\'' ? std::string("''") : std::string(1, c);
  std::string sql = kSubgraphSql;
  for (size_t pos = sql.find(":family"); pos != std::string::npos; pos = sql.find(":family")) {
    sql.replace(pos, 7, "'" + family + "'");
  }
  return db.Exec(sql);
}

// Tasks, hardware, runs and sources, in id order.
Status ExportContext(Db& db, const Scope& in, GraphSink& sink) {
  KOPE_RETURN_IF_ERROR(EachRow(db,
                               "SELECT " + std::string(kTaskColumns) + " FROM tasks t" +
                                   in.In("t.id", "x_tasks") + " ORDER BY t.id",
                               [&](const Query& q) { return sink.OnTask(ReadTask(q, 0)); }));
  KOPE_RETURN_IF_ERROR(
      EachRow(db,
              "SELECT id, key, backend, device, arch, attrs, created_at FROM hardware" +
                  in.Where("id IN (SELECT hardware_id FROM runs WHERE id IN (SELECT id FROM "
                           "pg_temp.x_runs))") +
                  " ORDER BY id",
              [&](const Query& q) {
                return sink.OnHardware({q.Int(0), BlobToKey(q.Blob(1)), q.Text(2), q.Text(3),
                                        q.Text(4), q.Text(5), q.Int(6)});
              }));
  KOPE_RETURN_IF_ERROR(EachRow(
      db,
      "SELECT id, key, task_id, hardware_id, label, compiler, config, started_at FROM runs" +
          in.In("id", "x_runs") + " ORDER BY id",
      [&](const Query& q) {
        return sink.OnRun({q.Int(0), BlobToKey(q.Blob(1)), q.Int(2), q.Int(3), q.Text(4), q.Text(5),
                           q.Text(6), q.Int(7)});
      }));
  return EachRow(
      db,
      "SELECT hash, text FROM sources" +
          in.Where("id IN (SELECT source_id FROM attempts WHERE id IN (SELECT id FROM "
                   "pg_temp.x_attempts))") +
          " ORDER BY id",
      [&](const Query& q) { return sink.OnSource(BlobToKey(q.Blob(0)), q.TextView(1)); });
}

// Attempts, outcomes and insights, in id order.
Status ExportDecisions(Db& db, const Scope& in, GraphSink& sink) {
  KOPE_RETURN_IF_ERROR(EachRow(db,
                               "SELECT " + std::string(kAttemptColumns) +
                                   std::string(kAttemptFrom) + in.In("a.id", "x_attempts") +
                                   " ORDER BY a.id",
                               [&](const Query& q) { return sink.OnAttempt(ReadAttempt(q, 0)); }));
  KOPE_RETURN_IF_ERROR(EachRow(db,
                               "SELECT " + std::string(kOutcomeColumns) + " FROM outcomes o" +
                                   in.In("o.attempt_id", "x_attempts") + " ORDER BY o.id",
                               [&](const Query& q) { return sink.OnOutcome(ReadOutcome(q, 0)); }));
  return EachRow(db,
                 "SELECT " + std::string(kInsightColumns) + " FROM insights i" +
                     in.In("i.id", "x_insights") + " ORDER BY i.id",
                 [&](const Query& q) { return sink.OnInsight(ReadInsight(q, 0)); });
}

// Evidence and used edges.
Status ExportEdges(Db& db, const Scope& in, GraphSink& sink) {
  KOPE_RETURN_IF_ERROR(EachRow(
      db,
      "SELECT insight_id, outcome_id, relation, effect, created_at FROM insight_evidence" +
          in.In("insight_id", "x_insights") + " ORDER BY insight_id, outcome_id",
      [&](const Query& q) {
        return sink.OnEvidence(
            {q.Int(0), q.Int(1),
             q.Int(2) > 0 ? EvidenceRelation::kSupportedBy : EvidenceRelation::kContradictedBy,
             q.Double(3), q.Int(4)});
      }));
  const std::string used_filter =
      in.Where("attempt_id IN (SELECT id FROM pg_temp.x_attempts) AND ((target_kind = " +
               std::to_string(StoredKind(NodeKind::kInsight)) +
               " AND target_id IN (SELECT id FROM pg_temp.x_insights)) OR (target_kind = " +
               std::to_string(StoredKind(NodeKind::kAttempt)) +
               " AND target_id IN (SELECT id FROM pg_temp.x_attempts)))");
  return EachRow(db,
                 "SELECT attempt_id, target_kind, target_id, section, score, tokens, credit "
                 "FROM used" +
                     used_filter + " ORDER BY attempt_id, target_kind, target_id",
                 [&](const Query& q) {
                   UsedEdge e;
                   e.attempt_id = q.Int(0);
                   e.target = {KindFromStored(q.Int(1)), q.Int(2)};
                   e.section = q.Text(3);
                   e.score = q.Double(4);
                   e.tokens = q.Int(5);
                   e.credit = q.OptionalDouble(6);
                   return sink.OnUsed(e);
                 });
}

}  // namespace

Status PostgresStore::Export(const ExportFilter& filter, GraphSink& sink) {
  std::lock_guard lock(mu_);
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  const Scope scope{!filter.op_family.empty()};
  if (scope.subgraph) KOPE_RETURN_IF_ERROR(MakeSubgraph(*db_, filter.op_family));
  Status status = ExportContext(*db_, scope, sink);
  if (status.ok()) status = ExportDecisions(*db_, scope, sink);
  if (status.ok()) status = ExportEdges(*db_, scope, sink);
  if (scope.subgraph) {
    Status dropped = db_->Exec(kDropSubgraphSql);
    if (status.ok()) status = dropped;
  }
  return status;
}

}  // namespace kope::memory::postgres
