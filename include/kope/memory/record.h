// Recording one evaluation: the call `kope eval --record` (and anything else that evaluates a
// single candidate outside an episode) makes to put its verdict into the experience graph.
//
// RecordEvaluation writes, in one durable transaction, the task and hardware (upserted by
// content key), the run (the given one, or a new one when record.run.key is empty and
// record.run_id is 0), the attempt with its source, and the outcome. Either everything is
// stored or nothing is. The ids in the nested structs (run.task_id, attempt.run_id,
// outcome.attempt_id, ...) are filled in here and need not be set. Thread safety: as
// GraphStore's.
#ifndef KOPE_MEMORY_RECORD_H_
#define KOPE_MEMORY_RECORD_H_

#include <string>

#include "kope/base/status.h"
#include "kope/memory/graph_store.h"
#include "kope/memory/model.h"

namespace kope::memory {

struct EvaluationRecord {
  TaskNode task;
  HardwareNode hardware;
  // An existing run to add to (run_id != 0), or the run to create (run.label, run.compiler,
  // run.config_json; a fresh key unless run.key is set).
  NodeId run_id = 0;
  RunNode run;
  AttemptNode attempt;  // decision, proposer, tokens, parent_id (0: a root), classes
  std::string source;   // the candidate's full source
  OutcomeNode outcome;  // verdict and evidence
};

struct RecordedIds {
  NodeId task = 0;
  NodeId hardware = 0;
  NodeId run = 0;
  NodeId attempt = 0;
  NodeId outcome = 0;
};

Result<RecordedIds> RecordEvaluation(GraphStore& store, const EvaluationRecord& record);

// The same inside a caller's transaction (for batches: many records, one commit).
Result<RecordedIds> RecordEvaluation(GraphWriter& writer, const EvaluationRecord& record);

}  // namespace kope::memory

#endif  // KOPE_MEMORY_RECORD_H_
