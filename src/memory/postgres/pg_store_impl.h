// PostgresStore: the GraphStore over one PostgreSQL database. Private to the memory component; the
// public entry point is OpenPostgresStore (kope/memory/postgres/postgres_store.h).
//
// A port of the SQLite store (sqlite_store_impl.h), file for file, over pg_db.h's Query, which has
// the same interface as SQLite's; the SQL differs where the dialects do. One connection, guarded
// by a recursive mutex (a Write body may call the store's queries). The implementation is split
// by concern: pg_store.cc (single nodes, statistics), postgres_store.cc (opening), pg_writer.cc
// (Write and the writer), pg_queries.cc (graph queries), pg_search.cc (full-text search, similar
// tasks) and pg_export.cc (export).
#ifndef KOPE_SRC_MEMORY_POSTGRES_STORE_IMPL_H_
#define KOPE_SRC_MEMORY_POSTGRES_STORE_IMPL_H_

#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "../row_readers.h"
#include "kope/memory/graph_store.h"
#include "pg_db.h"

namespace kope::memory::postgres {

// Column lists shared by the queries, and readers for their rows.
inline constexpr std::string_view kAttemptColumns =
    "a.id, a.key, a.run_id, a.task_id, a.hardware_id, a.parent_id, s.hash, a.diff, a.decision, "
    "a.classes, a.proposer, a.prompt_tokens, a.completion_tokens, a.created_at, a.cost_usd";
inline constexpr int kAttemptColumnCount = 15;
inline constexpr std::string_view kAttemptFrom =
    " FROM attempts a JOIN sources s ON s.id = a.source_id";
inline constexpr std::string_view kOutcomeColumns =
    "o.id, o.key, o.attempt_id, o.stage, o.verdict, o.flagged, o.speedup, o.time_ms, o.roofline, "
    "o.error_message, o.error_signature, o.evidence, o.created_at, o.task_id, o.hardware_id, "
    "o.op_family";
inline constexpr std::string_view kInsightColumns =
    "i.id, i.key, i.kind, i.text, i.op_family, i.backend, i.device, i.arch, i.compiler, "
    "i.size_min, i.size_max, i.classes, i.support, i.contradiction, i.effect_size, i.created_at, "
    "i.updated_at";
inline constexpr std::string_view kTaskColumns =
    "t.id, t.key, t.name, t.op_family, t.description, t.size, t.spec_hash, t.attrs, t.created_at";

// Node kinds as stored in used.target_kind / usage.target_kind.
int StoredKind(NodeKind kind);
NodeKind KindFromStored(int64_t stored);
// Integers as a PostgreSQL array literal ("{1,2,3}"), bound as text and cast in the statement
// (`?::bigint[]`): a set-based query sends its whole list in one round trip.
std::string ArrayLiteral(const std::vector<int64_t>& values);
// The attempt views a query's rows hold: an attempt's columns (kAttemptColumns), then an
// outcome's (kOutcomeColumns, all NULL where the attempt has none).
Result<std::vector<AttemptView>> ReadViews(Query& q);

class PostgresStore final : public GraphStore {
 public:
  PostgresStore(std::unique_ptr<Db> db, std::string location)
      : db_(std::move(db)), location_(std::move(location)) {}

  Status Write(const std::function<Status(GraphWriter&)>& body) override;
  Result<TaskNode> GetTask(NodeId id) override;
  Result<HardwareNode> GetHardware(NodeId id) override;
  Result<RunNode> GetRun(NodeId id) override;
  Result<AttemptNode> GetAttempt(NodeId id) override;
  Result<OutcomeNode> GetOutcome(NodeId id) override;
  Result<InsightNode> GetInsight(NodeId id) override;
  Result<std::string> GetSource(std::string_view hash) override;
  Result<NodeId> FindByKey(NodeKind kind, std::string_view key) override;
  Result<std::vector<TaskNode>> ListTasks(std::string_view op_family) override;
  Result<std::vector<HardwareNode>> ListHardware() override;
  Result<std::vector<RunNode>> ListRuns(NodeId task_id) override;
  Result<std::vector<AttemptView>> Lineage(NodeId attempt) override;
  Result<std::vector<AttemptView>> Children(NodeId attempt) override;
  Result<std::vector<AttemptView>> RunAttempts(NodeId run) override;
  Result<std::vector<OutcomeNode>> Outcomes(NodeId attempt) override;
  Result<std::vector<AttemptView>> AttemptsWithSource(NodeId task_id, NodeId hardware_id,
                                                      std::string_view source_hash) override;
  Result<std::vector<AttemptView>> BestAttempts(const BestQuery& query) override;
  Result<std::vector<RankedInsight>> FindInsights(const InsightQuery& query) override;
  Result<std::vector<AttemptView>> AttemptsWithError(std::string_view error_signature,
                                                     std::string_view op_family,
                                                     int limit) override;
  Result<std::vector<SearchHit>> Search(const SearchQuery& query) override;
  Result<std::vector<double>> TextRelevance(SearchKind kind, const std::vector<NodeId>& ids,
                                            std::string_view text) override;
  Result<std::vector<SimilarTask>> SimilarTasks(NodeId task, int limit) override;
  Result<std::vector<EvidenceEdge>> Evidence(NodeId insight) override;
  Result<std::vector<UsedEdge>> UsedBy(NodeId attempt) override;
  Result<std::vector<UsageStats>> Usage(const std::vector<NodeRef>& targets) override;
  Result<WorkloadNode> GetWorkload(NodeId id) override;
  Result<std::vector<WorkloadNode>> ListWorkloads() override;
  Result<std::vector<FromWorkloadEdge>> WorkloadTasks(NodeId workload) override;
  Result<std::vector<FromWorkloadEdge>> TaskWorkloads(NodeId task) override;
  Result<std::vector<DeploymentRecord>> WorkloadDeployments(NodeId workload) override;
  Status Export(const ExportFilter& filter, GraphSink& sink) override;
  Result<StoreStats> Stats() override;
  Status CheckIntegrity() override;

 private:
  friend class PostgresWriter;

  // Facts about a run, or about a recently written attempt, that writes need again and again.
  struct RunFacts {
    std::string key;
    NodeId task_id = 0;
    NodeId hardware_id = 0;
    std::string op_family;
  };
  struct AttemptFacts {
    std::string key;
    std::string source_hash;
    std::shared_ptr<const std::string> source;  // shared: facts are copied often
    NodeId task_id = 0;
    NodeId hardware_id = 0;
    std::string op_family;
  };

  // The helpers below expect mu_ to be held.
  Result<AttemptNode> LoadAttempt(NodeId id);
  // The attempts `tail` selects (a WHERE and ORDER BY over `attempts a`, its one parameter
  // bound to `id`), each with its latest outcome: one statement.
  Result<std::vector<AttemptView>> SelectViews(std::string_view tail, NodeId id);
  // The outcomes of these ids, in this order, each with its attempt: one statement.
  Result<std::vector<AttemptView>> OutcomeViews(const std::vector<NodeId>& outcome_ids);
  // The facts are the caches' own: a run's stay valid until ForgetCaches, an attempt's until the
  // next Remember (which may evict it).
  Result<const RunFacts*> FactsOfRun(NodeId run);
  Result<const AttemptFacts*> FactsOfAttempt(NodeId attempt);
  const AttemptFacts* Remember(NodeId attempt, AttemptFacts facts);
  void ForgetCaches();

  std::unique_ptr<Db> db_;
  std::string location_;  // for messages: the database and host, never a password
  std::recursive_mutex mu_;
  bool in_write_ = false;
  std::unordered_map<NodeId, RunFacts> runs_;
  std::unordered_map<NodeId, AttemptFacts> recent_attempts_;
  std::deque<NodeId> recent_order_;
};

// NotFound for a node the store does not hold ("no t12 in the store").
Status NotFoundNode(NodeKind kind, NodeId id);

// One row by id through `sql` (which ends in "WHERE <table>.id = ?"), read by `read`.
template <typename Node, typename Reader>
Result<Node> OneById(Db& db, std::string_view sql, NodeKind kind, NodeId id, Reader read) {
  KOPE_ASSIGN_OR_RETURN(Query q, db.Prepare(sql));
  q.Bind(1, id);
  KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return NotFoundNode(kind, id);
  return read(q);
}

}  // namespace kope::memory::postgres

#endif  // KOPE_SRC_MEMORY_POSTGRES_STORE_IMPL_H_
