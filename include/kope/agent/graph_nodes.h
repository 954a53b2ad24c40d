// How the agent describes a task, a machine and an evaluator outcome as experience-graph nodes.
//
//   task      name, op family, description; size: elements of the largest tensor at the bench
//             sizes of the language; spec hash: ContentHash of task.toml's bytes (editing the
//             task makes a new task node); attrs: {"language", "bench": {sizes},
//             "signature": "f32/2,f32/1->f32/2" (dtype/rank of inputs, then outputs)}.
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
// Pure functions apart from reading task.toml; thread-safe.
#ifndef KOPE_AGENT_GRAPH_NODES_H_
#define KOPE_AGENT_GRAPH_NODES_H_

#include <string>
#include <string_view>

#include "kope/backend/hardware.h"
#include "kope/base/status.h"
#include "kope/eval/outcome.h"
#include "kope/memory/model.h"
#include "kope/task/task.h"

namespace kope::agent {

Result<memory::TaskNode> TaskNodeFor(const Task& task, std::string_view language);
memory::HardwareNode HardwareNodeFor(const HardwareInfo& hardware);
memory::OutcomeNode OutcomeNodeFor(const Outcome& outcome);

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

}  // namespace kope::agent

#endif  // KOPE_AGENT_GRAPH_NODES_H_
