// PostgresWriter, private to the PostgreSQL store: the GraphWriter that PostgresStore::Write
// hands its body, inside one write transaction. Nodes are written in pg_writer.cc, edges and
// sources in pg_writer_edges.cc, workloads in pg_workloads.cc. Used by one thread, within one
// Write.
#ifndef KOPE_SRC_MEMORY_POSTGRES_PG_WRITER_H_
#define KOPE_SRC_MEMORY_POSTGRES_PG_WRITER_H_

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "pg_store_impl.h"

namespace kope::memory::postgres {

inline Status CheckFinite(std::string_view what, std::optional<double> value) {
  if (!value.has_value() || std::isfinite(*value)) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + " must be a finite number");
}

inline UnixMillis OrNow(UnixMillis t) { return t != 0 ? t : NowMillis(); }

struct Inserted {
  NodeId id = 0;
  bool is_new = false;  // false: the key existed, `id` is the existing node's
};

// Runs an INSERT ... ON CONFLICT(key) DO NOTHING RETURNING id; when the key exists, looks it up.
Result<Inserted> InsertOrFind(Db& db, Query& insert, std::string_view table, std::string_view blob);

class PostgresWriter final : public GraphWriter {
 public:
  explicit PostgresWriter(PostgresStore& store) : store_(store), db_(*store.db_) {}

  Result<NodeId> PutTask(const TaskNode& task) override;
  Result<NodeId> PutHardware(const HardwareNode& hw) override;
  Result<NodeId> PutRun(const RunNode& run) override;
  Result<NodeId> PutAttempt(const AttemptNode& attempt, std::string_view source) override;
  Result<NodeId> PutOutcome(const OutcomeNode& o) override;
  Result<NodeId> PutInsight(const InsightNode& insight) override;
  Status UpdateInsightText(NodeId insight, std::string_view text) override;
  Result<bool> AddEvidence(const EvidenceEdge& e) override;
  Result<bool> AddUsed(const UsedEdge& e) override;
  Result<int> CreditUsed(NodeId attempt, double total_credit) override;
  Result<std::string> PutSource(std::string_view text) override;
  Result<NodeId> FindByKey(NodeKind kind, std::string_view key) override;
  Result<NodeId> PutWorkload(const WorkloadNode& workload) override;
  Result<bool> AddFromWorkload(const FromWorkloadEdge& edge) override;
  Result<NodeId> AddDeployment(const DeploymentRecord& deployment) override;

 private:
  Result<std::string> KeyOf(std::string_view table, NodeKind kind, NodeId id);
  Status Exists(std::string_view table, NodeKind kind, NodeId id);
  Result<NodeId> PutSource(const std::string& hash, std::string_view text);
  // The statements that every attempt and outcome runs (named as in the SQLite writer).
  enum HotStatement {
    kInsertSource,
    kInsertAttempt,
    kIndexAttempt,
    kInsertOutcome,
    kIndexError,
    kHotStatements
  };
  Result<Query> PrepareHot(HotStatement which, std::string_view sql);
  PostgresStore& store_;
  Db& db_;
};

}  // namespace kope::memory::postgres

#endif  // KOPE_SRC_MEMORY_POSTGRES_PG_WRITER_H_
