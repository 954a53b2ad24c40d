// SqliteWriter, private to the SQLite store: the GraphWriter that SqliteStore::Write hands its
// body, inside one write transaction. Nodes are written in sqlite_writer.cc, edges and sources
// in sqlite_writer_edges.cc, workloads in sqlite_workloads.cc. Used by one thread, within one
// Write.
#ifndef KOPE_SRC_MEMORY_SQLITE_SQLITE_WRITER_H_
#define KOPE_SRC_MEMORY_SQLITE_SQLITE_WRITER_H_

#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "sqlite_store_impl.h"

namespace kope::memory::sqlite {

inline Status CheckFinite(std::string_view what, std::optional<double> value) {
  if (!value.has_value() || std::isfinite(*value)) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + " must be a finite number");
}

inline UnixMillis OrNow(UnixMillis t) { return t != 0 ? t : NowMillis(); }

struct Inserted {
  NodeId id = 0;
  bool is_new = false;  // false: the key existed, `id` is the existing node's
};

// Runs an INSERT ... ON CONFLICT(key) DO NOTHING (one row, no RETURNING and no triggers, so that
// no statement transaction is needed); when the key exists, looks it up.
Result<Inserted> InsertOrFind(Db& db, Query& insert, std::string_view table, std::string_view blob);

class SqliteWriter final : public GraphWriter {
 public:
  explicit SqliteWriter(SqliteStore& store) : store_(store), db_(*store.db_) {}

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
  // The statements that every attempt and outcome runs, found in the connection's statement
  // cache once per Write rather than by their text at every row.
  enum HotStatement {
    kInsertSource,
    kInsertAttempt,
    kIndexAttempt,
    kInsertOutcome,
    kIndexError,
    kHotStatements
  };
  Result<Query> PrepareHot(HotStatement which, std::string_view sql);
  SqliteStore& store_;
  Db& db_;
  sqlite3_stmt* hot_[kHotStatements] = {};
};

}  // namespace kope::memory::sqlite

#endif  // KOPE_SRC_MEMORY_SQLITE_SQLITE_WRITER_H_
