// How an evaluation is described in the experience graph: the one translation from a task, a
// machine and an evaluator outcome to the graph's nodes, used by the agent's episodes, by
// `kope eval --record` and by the context manager (which compares sizes with stored tasks).
//
//   task      name, op family, description; size: TaskSize (elements of the largest tensor
//             at the bench sizes of the language); spec hash: ContentHash of task.toml's
//             bytes (editing the task makes a new task node); attrs: {"language", "bench":
//             {sizes}, "signature": "f32/2,f32/1->f32/2" (dtype/rank of inputs, then outputs)}.
//   hardware  backend, device, architecture; attrs: cores, bandwidth_bytes_per_s, peak_flops,
//             last_level_cache_bytes, memory_bytes, compiler, driver, measured_at (the field
//             names the context manager reads back).
//   outcome   stage "unit", the verdict, speedup, median time (ms), roofline fraction, flagged
//             when the evaluator flagged faster_than_roofline, or wall_clock_mismatch under the
//             confirming policy (a screening measurement on a busy machine trips the wall-clock
//             check now and then; the careful re-timing decides); other flags are audit notes,
//             kept in the evidence. The main error (the verdict's message, the
//             compiler's errors, the first mismatch or the runtime detail), and the evaluator's
//             full record (OutcomeToJson) as evidence.
//   attempt   (EvaluationRecordFor) one evaluation outside an episode: a root attempt with the
//             candidate's source, in a run of its own, with its outcome.
// Pure functions apart from reading task.toml; thread-safe.
#ifndef KOPE_RECORD_GRAPH_NODES_H_
#define KOPE_RECORD_GRAPH_NODES_H_

#include <string>
#include <string_view>

#include "kope/backend/hardware.h"
#include "kope/base/status.h"
#include "kope/eval/outcome.h"
#include "kope/memory/model.h"
#include "kope/memory/record.h"
#include "kope/task/task.h"

namespace kope::record {

// Elements of the task's largest tensor at its bench sizes for `language`; 0 when no shape
// resolves. The size regime a task node stores and an insight's scope is matched against.
double TaskSize(const Task& task, std::string_view language);

// IoError when task.toml cannot be read.
Result<memory::TaskNode> TaskNodeFor(const Task& task, std::string_view language);
memory::HardwareNode HardwareNodeFor(const HardwareInfo& hardware);
// The outcome node, its ids (id, attempt_id) and error signature left for the caller.
memory::OutcomeNode OutcomeNodeFor(const Outcome& outcome);

// One evaluation of `source` outside an episode, ready for memory::RecordEvaluation: the task
// and hardware nodes, a new run labelled `run_label` with the outcome's compiler, `attempt`
// (its decision, proposer and tokens; a root unless its parent_id is set) and the outcome.
Result<memory::EvaluationRecord> EvaluationRecordFor(const Task& task, std::string_view language,
                                                     const Outcome& outcome, std::string source,
                                                     memory::AttemptNode attempt,
                                                     std::string run_label);

// "f32/2,f32/1->f32/2": the kernel signature transfers must agree on.
std::string KernelSignature(const Task& task);
// The signature stored in a task node's attrs ("" when absent).
std::string SignatureOfNode(const memory::TaskNode& node);

// Whether an outcome's flags make it suspicious (never the best).
bool IsSuspicious(const Outcome& outcome);

// The outcome's main error in a few lines ("" for a valid outcome).
std::string OutcomeErrorText(const Outcome& outcome);

// The timing policy an outcome was measured with ("screen", "confirm"), from its evidence.
std::string TimingPolicyOf(const memory::OutcomeNode& outcome);

}  // namespace kope::record

#endif  // KOPE_RECORD_GRAPH_NODES_H_
