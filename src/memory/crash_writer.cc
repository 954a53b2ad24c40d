// A writer process for crash_soak_test: records an episode's attempts and outcomes the way
// `kope optimize` does (the attempt in one transaction, its outcome in the next), and resumes
// its run when started again: an attempt recorded without its outcome gets the outcome, the
// next attempt continues where the run stopped, and nothing is recorded twice.
//
//   memory_crash_writer STORE LABEL COUNT      (STORE: a SQLite file or a PostgreSQL URL)
//
// Prints "attempt KEY" and "outcome KEY" (flushed) once each write's commit has returned: the
// acknowledgements. Exit status 0 once the run holds COUNT attempts with their outcomes, 1 on the
// first failure (the message on stderr).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kope/memory/store_location.h"

namespace kope::memory {
namespace {

Status Acknowledge(GraphStore& store, const char* what, NodeKind kind, NodeId id) {
  std::string key;
  if (kind == NodeKind::kAttempt) {
    KOPE_ASSIGN_OR_RETURN(AttemptNode a, store.GetAttempt(id));
    key = a.key;
  } else {
    KOPE_ASSIGN_OR_RETURN(OutcomeNode o, store.GetOutcome(id));
    key = o.key;
  }
  std::printf("%s %s\n", what, key.c_str());
  std::fflush(stdout);
  return Status::Ok();
}

// The run labelled `label`, created on first use.
Result<RunNode> FindOrCreateRun(GraphStore& store, const std::string& label) {
  NodeId task_id = 0, hw_id = 0;
  KOPE_RETURN_IF_ERROR(store.Write([&](GraphWriter& w) -> Status {
    TaskNode task;
    task.name = "crash_soak";
    task.op_family = "crash_soak";
    KOPE_ASSIGN_OR_RETURN(task_id, w.PutTask(task));
    HardwareNode hw;
    hw.backend = "cpu";
    hw.device = "crash soak";
    KOPE_ASSIGN_OR_RETURN(hw_id, w.PutHardware(hw));
    return Status::Ok();
  }));
  KOPE_ASSIGN_OR_RETURN(std::vector<RunNode> runs, store.ListRuns(task_id));
  for (const RunNode& r : runs) {
    if (r.label == label) return r;
  }
  NodeId run_id = 0;
  KOPE_RETURN_IF_ERROR(store.Write([&](GraphWriter& w) -> Status {
    RunNode r;
    r.task_id = task_id;
    r.hardware_id = hw_id;
    r.label = label;
    KOPE_ASSIGN_OR_RETURN(run_id, w.PutRun(r));
    return Status::Ok();
  }));
  return store.GetRun(run_id);
}

Status RecordOutcome(GraphStore& store, NodeId attempt, size_t step) {
  NodeId id = 0;
  KOPE_RETURN_IF_ERROR(store.Write([&](GraphWriter& w) -> Status {
    OutcomeNode o;
    o.attempt_id = attempt;
    o.verdict = step % 4 == 0 ? "compile_error" : "valid";
    if (step % 4 == 0) {
      o.error_message = "kernel.cc:" + std::to_string(step) + ": error: expected ';'";
    } else {
      o.speedup = 1.0 + static_cast<double>(step % 50) / 50.0;
    }
    KOPE_ASSIGN_OR_RETURN(id, w.PutOutcome(o));
    return Status::Ok();
  }));
  return Acknowledge(store, "outcome", NodeKind::kOutcome, id);
}

Status RecordAttempt(GraphStore& store, const RunNode& run, NodeId parent, long step, NodeId* id) {
  KOPE_RETURN_IF_ERROR(store.Write([&](GraphWriter& w) -> Status {
    AttemptNode a;
    a.run_id = run.id;
    a.parent_id = parent;
    a.decision = run.label + " step " + std::to_string(step);
    a.proposer = "crash_writer";
    const std::string source = "// " + a.decision + "\n" + std::string(800, 'k') + "\n";
    KOPE_ASSIGN_OR_RETURN(*id, w.PutAttempt(a, source));
    return Status::Ok();
  }));
  return Acknowledge(store, "attempt", NodeKind::kAttempt, *id);
}

Status Run(const std::string& location, const std::string& label, long count) {
  KOPE_ASSIGN_OR_RETURN(std::unique_ptr<GraphStore> store, OpenStore(location));
  KOPE_ASSIGN_OR_RETURN(RunNode run, FindOrCreateRun(*store, label));
  KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> done, store->RunAttempts(run.id));
  NodeId parent = 0;
  for (size_t step = 0; step < done.size(); ++step) {
    // Resuming: the attempt whose evaluation the kill cut short gets its outcome now.
    const AttemptView& v = done[step];
    if (!v.outcome) KOPE_RETURN_IF_ERROR(RecordOutcome(*store, v.attempt.id, step));
    parent = v.attempt.id;
  }
  for (long step = static_cast<long>(done.size()); step < count; ++step) {
    NodeId id = 0;
    KOPE_RETURN_IF_ERROR(RecordAttempt(*store, run, step % 5 == 0 ? 0 : parent, step, &id));
    KOPE_RETURN_IF_ERROR(RecordOutcome(*store, id, static_cast<size_t>(step)));
    parent = id;
  }
  return Status::Ok();
}

}  // namespace
}  // namespace kope::memory

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s STORE LABEL COUNT\n", argv[0]);
    return 2;
  }
  kope::Status status = kope::memory::Run(argv[1], argv[2], std::strtol(argv[3], nullptr, 10));
  if (!status.ok()) {
    std::fprintf(stderr, "memory_crash_writer: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
