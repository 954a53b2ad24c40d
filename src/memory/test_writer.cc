// A writer process for durability_test: writes attempts with outcomes to a store, one
// transaction each, and acknowledges each committed write by printing the attempt's key on a
// line of its own (flushed) only after the commit returned.
//
//   memory_test_writer STORE FIRST COUNT
//
// Exit status 0 when all COUNT writes are done, 1 on the first failure (the message on stderr).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kope/memory/sqlite/sqlite_store.h"

namespace kope::memory {
namespace {

Status WriteAll(const std::string& path, long first, long count) {
  KOPE_ASSIGN_OR_RETURN(std::unique_ptr<GraphStore> store, OpenSqliteStore(path));
  NodeId run = 0;
  KOPE_RETURN_IF_ERROR(store->Write([&](GraphWriter& w) -> Status {
    TaskNode task;
    task.name = "durability";
    task.op_family = "durability";
    KOPE_ASSIGN_OR_RETURN(NodeId task_id, w.PutTask(task));
    HardwareNode hw;
    hw.backend = "cpu";
    hw.device = "test";
    KOPE_ASSIGN_OR_RETURN(NodeId hw_id, w.PutHardware(hw));
    RunNode r;
    r.task_id = task_id;
    r.hardware_id = hw_id;
    r.label = "writer " + std::to_string(first);
    KOPE_ASSIGN_OR_RETURN(run, w.PutRun(r));
    return Status::Ok();
  }));
  NodeId parent = 0;
  std::string filler(1500, 'k');
  for (long i = first; i < first + count; ++i) {
    std::string key;
    NodeId id = 0;
    Status written = store->Write([&](GraphWriter& w) -> Status {
      AttemptNode a;
      a.run_id = run;
      a.parent_id = parent;
      a.decision = "write " + std::to_string(i) + (i % 3 == 0 ? " with float4 loads" : "");
      a.proposer = "test_writer";
      std::string source = "// attempt " + std::to_string(i) + "\n" + filler + "\n";
      KOPE_ASSIGN_OR_RETURN(id, w.PutAttempt(a, source));
      OutcomeNode o;
      o.attempt_id = id;
      o.verdict = i % 4 == 0 ? "compile_error" : "valid";
      if (i % 4 == 0) {
        o.error_message = "kernel.cu(" + std::to_string(i) + "): error: expected ';'";
      } else {
        o.speedup = 1.0 + static_cast<double>(i % 100) / 100.0;
      }
      KOPE_ASSIGN_OR_RETURN(NodeId outcome, w.PutOutcome(o));
      if (i % 10 == 0) {
        InsightNode insight;
        insight.text = "lesson from write " + std::to_string(i / 100);
        insight.scope.op_family = "durability";
        KOPE_ASSIGN_OR_RETURN(NodeId insight_id, w.PutInsight(insight));
        KOPE_RETURN_IF_ERROR(
            w.AddEvidence({insight_id, outcome, EvidenceRelation::kSupportedBy, 1.1, 0}).status());
      }
      return Status::Ok();
    });
    KOPE_RETURN_IF_ERROR(written);
    KOPE_ASSIGN_OR_RETURN(AttemptNode stored, store->GetAttempt(id));
    std::printf("%s\n", stored.key.c_str());
    std::fflush(stdout);
    parent = i % 7 == 0 ? 0 : id;
  }
  return Status::Ok();
}

}  // namespace
}  // namespace kope::memory

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s STORE FIRST COUNT\n", argv[0]);
    return 2;
  }
  kope::Status status = kope::memory::WriteAll(argv[1], std::strtol(argv[2], nullptr, 10),
                                               std::strtol(argv[3], nullptr, 10));
  if (!status.ok()) {
    std::fprintf(stderr, "memory_test_writer: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
