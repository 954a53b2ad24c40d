#include "kope/memory/record.h"

namespace kope::memory {

Result<RecordedIds> RecordEvaluation(GraphWriter& writer, const EvaluationRecord& record) {
  RecordedIds ids;
  KOPE_ASSIGN_OR_RETURN(ids.task, writer.PutTask(record.task));
  KOPE_ASSIGN_OR_RETURN(ids.hardware, writer.PutHardware(record.hardware));
  if (record.run_id != 0) {
    ids.run = record.run_id;
  } else {
    RunNode run = record.run;
    run.task_id = ids.task;
    run.hardware_id = ids.hardware;
    KOPE_ASSIGN_OR_RETURN(ids.run, writer.PutRun(run));
  }
  AttemptNode attempt = record.attempt;
  attempt.run_id = ids.run;
  KOPE_ASSIGN_OR_RETURN(ids.attempt, writer.PutAttempt(attempt, record.source));
  OutcomeNode outcome = record.outcome;
  outcome.attempt_id = ids.attempt;
  KOPE_ASSIGN_OR_RETURN(ids.outcome, writer.PutOutcome(outcome));
  return ids;
}

Result<RecordedIds> RecordEvaluation(GraphStore& store, const EvaluationRecord& record) {
  RecordedIds ids;
  KOPE_RETURN_IF_ERROR(store.Write([&](GraphWriter& writer) -> Status {
    KOPE_ASSIGN_OR_RETURN(ids, RecordEvaluation(writer, record));
    return Status::Ok();
  }));
  return ids;
}

}  // namespace kope::memory
