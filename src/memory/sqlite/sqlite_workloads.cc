// Deployment workloads in the SQLite store: the workload nodes, their from_workload edges to the
// tasks extracted from them (schema version 4) and their deployment reports (version 5),
// written by SqliteWriter, read by SqliteStore.
#include <cmath>

#include "../json_object.h"
#include "../node_checks.h"
#include "sqlite_store_impl.h"
#include "sqlite_writer.h"

namespace kope::memory::sqlite {
namespace {

constexpr std::string_view kWorkloadSql =
    "SELECT id, key, name, workload_hash, attrs, created_at FROM workloads";
constexpr std::string_view kDeploymentSql =
    "SELECT id, key, workload_id, report, created_at FROM deployments";
constexpr std::string_view kEdgeSql =
    "SELECT workload_id, task_id, phases, weight, attrs, created_at FROM from_workload";

Result<std::vector<FromWorkloadEdge>> Edges(Db& db, std::string_view where, NodeId id) {
  KOPE_ASSIGN_OR_RETURN(Query q, db.Prepare(std::string(kEdgeSql) + std::string(where)));
  q.Bind(1, id);
  return ReadRows<FromWorkloadEdge>(q, ReadEdge<Query>);
}

}  // namespace

Result<NodeId> SqliteWriter::PutWorkload(const WorkloadNode& w) {
  KOPE_RETURN_IF_ERROR(CheckWorkload(w));
  const std::string blob = KeyToBlob(w.key.empty() ? WorkloadKey(w.name, w.workload_hash) : w.key);
  KOPE_ASSIGN_OR_RETURN(
      Query q, db_.Prepare("INSERT INTO workloads(key, name, workload_hash, attrs, created_at) "
                           "VALUES (?, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING"));
  q.BindBlob(1, blob).Bind(2, w.name).Bind(3, w.workload_hash).Bind(4, w.attrs_json);
  q.Bind(5, OrNow(w.created_at));
  KOPE_ASSIGN_OR_RETURN(Inserted row, InsertOrFind(db_, q, "workloads", blob));
  return row.id;
}

Result<bool> SqliteWriter::AddFromWorkload(const FromWorkloadEdge& e) {
  if (!std::isfinite(e.weight) || e.weight < 0 || e.weight > 1) {
    return Status::InvalidArgument("a from_workload weight must be in [0, 1]");
  }
  if (!IsJsonObject(e.attrs_json)) {
    return Status::InvalidArgument("from_workload attrs must be a JSON object");
  }
  KOPE_RETURN_IF_ERROR(Exists("workloads", NodeKind::kWorkload, e.workload_id));
  KOPE_RETURN_IF_ERROR(Exists("tasks", NodeKind::kTask, e.task_id));
  KOPE_ASSIGN_OR_RETURN(
      Query add,
      db_.Prepare("INSERT INTO from_workload(workload_id, task_id, phases, weight, "
                  "attrs, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"));
  add.Bind(1, e.workload_id).Bind(2, e.task_id).Bind(3, JoinClasses(e.phases));
  add.Bind(4, e.weight).Bind(5, e.attrs_json).Bind(6, OrNow(e.created_at));
  KOPE_RETURN_IF_ERROR(add.Run());
  return add.Changes() == 1;
}

Result<NodeId> SqliteWriter::AddDeployment(const DeploymentRecord& d) {
  KOPE_RETURN_IF_ERROR(CheckDeployment(d));
  KOPE_ASSIGN_OR_RETURN(std::string workload_key,
                        KeyOf("workloads", NodeKind::kWorkload, d.workload_id));
  const std::string blob =
      KeyToBlob(d.key.empty() ? DeploymentKey(workload_key, d.report_json) : d.key);
  KOPE_ASSIGN_OR_RETURN(Query q,
                        db_.Prepare("INSERT INTO deployments(key, workload_id, report, created_at) "
                                    "VALUES (?, ?, ?, ?) ON CONFLICT(key) DO NOTHING"));
  q.BindBlob(1, blob).Bind(2, d.workload_id).Bind(3, d.report_json).Bind(4, OrNow(d.created_at));
  KOPE_ASSIGN_OR_RETURN(Inserted row, InsertOrFind(db_, q, "deployments", blob));
  return row.id;
}

Result<WorkloadNode> SqliteStore::GetWorkload(NodeId id) {
  std::lock_guard lock(mu_);
  static const std::string sql = std::string(kWorkloadSql) + " WHERE id = ?";
  return OneById<WorkloadNode>(*db_, sql, NodeKind::kWorkload, id, ReadWorkload<Query>);
}

Result<std::vector<WorkloadNode>> SqliteStore::ListWorkloads() {
  std::lock_guard lock(mu_);
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(std::string(kWorkloadSql) + " ORDER BY id"));
  return ReadRows<WorkloadNode>(q, ReadWorkload<Query>);
}

Result<std::vector<FromWorkloadEdge>> SqliteStore::WorkloadTasks(NodeId workload) {
  std::lock_guard lock(mu_);
  return Edges(*db_, " WHERE workload_id = ? ORDER BY task_id", workload);
}

Result<std::vector<FromWorkloadEdge>> SqliteStore::TaskWorkloads(NodeId task) {
  std::lock_guard lock(mu_);
  return Edges(*db_, " WHERE task_id = ? ORDER BY workload_id", task);
}

Result<std::vector<DeploymentRecord>> SqliteStore::WorkloadDeployments(NodeId workload) {
  std::lock_guard lock(mu_);
  KOPE_ASSIGN_OR_RETURN(
      Query q, db_->Prepare(std::string(kDeploymentSql) + " WHERE workload_id = ? ORDER BY id"));
  q.Bind(1, workload);
  return ReadRows<DeploymentRecord>(q, ReadDeployment<Query>);
}

}  // namespace kope::memory::sqlite
