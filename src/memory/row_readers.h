// How a row of either store becomes a node, private to the memory component: one definition
// for both stores. `Row` is a store's query positioned on a row (sqlite::Query,
// postgres::Query), read by column: Int, Double, OptionalDouble, Text, TextView, Blob. The
// readers with a `c` read the node's columns from column c on (their column lists are the
// stores' k*Columns), the others from column 0; ReadRows reads every row of a query.
#ifndef KOPE_SRC_MEMORY_ROW_READERS_H_
#define KOPE_SRC_MEMORY_ROW_READERS_H_

#include <vector>

#include "kope/base/status.h"
#include "kope/memory/model.h"
#include "stored_form.h"

namespace kope::memory {

template <typename Row>
AttemptNode ReadAttempt(const Row& q, int c) {
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

template <typename Row>
OutcomeNode ReadOutcome(const Row& q, int c) {
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

template <typename Row>
InsightNode ReadInsight(const Row& q, int c) {
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

template <typename Row>
TaskNode ReadTask(const Row& q, int c) {
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

template <typename Row>
HardwareNode ReadHardware(const Row& q) {
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

template <typename Row>
RunNode ReadRun(const Row& q) {
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

template <typename Row>
WorkloadNode ReadWorkload(const Row& q) {
  WorkloadNode w;
  w.id = q.Int(0);
  w.key = BlobToKey(q.Blob(1));
  w.name = q.Text(2);
  w.workload_hash = q.Text(3);
  w.attrs_json = q.Text(4);
  w.created_at = q.Int(5);
  return w;
}

template <typename Row>
FromWorkloadEdge ReadEdge(const Row& q) {
  FromWorkloadEdge e;
  e.workload_id = q.Int(0);
  e.task_id = q.Int(1);
  e.phases = SplitClasses(q.TextView(2));
  e.weight = q.Double(3);
  e.attrs_json = q.Text(4);
  e.created_at = q.Int(5);
  return e;
}

template <typename Row>
DeploymentRecord ReadDeployment(const Row& q) {
  DeploymentRecord d;
  d.id = q.Int(0);
  d.key = BlobToKey(q.Blob(1));
  d.workload_id = q.Int(2);
  d.report_json = q.Text(3);
  d.created_at = q.Int(4);
  return d;
}

// Every remaining row of `q`, each read by `read` (one of the readers above).
template <typename Node, typename Row, typename Reader>
Result<std::vector<Node>> ReadRows(Row& q, Reader read) {
  std::vector<Node> out;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    out.push_back(read(q));
  }
}

}  // namespace kope::memory

#endif  // KOPE_SRC_MEMORY_ROW_READERS_H_
