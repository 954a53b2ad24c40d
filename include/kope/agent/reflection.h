// Reflection: the lessons an outcome teaches, written into the experience graph as insights.
//
// After each screened outcome the episode calls Reflect inside the transaction that records the
// outcome, so that a lesson is never lost or counted twice by an interruption. The rules:
//
//   Effects. When the attempt and its parent are both valid, the effect is the ratio of their
//   speedups (each timed against the baseline in its own session). It counts only beyond the
//   noise: max(min_noise, spread/sqrt(samples) of the child plus that of the parent), the
//   spreads read from the outcomes' timing evidence.
//
//   Tuning lessons. A tuner step (decision "tune NAME A -> B", numeric values) supports or
//   contradicts the insight "Larger NAME is faster for FAMILY kernels": a larger value that was
//   faster, or a smaller one that was slower, supports it (effect: the factor in favour of the
//   larger value); the opposite contradicts it, and so does a step to a larger value that made
//   the kernel fail.
//
//   Decision lessons. Any other derived attempt supports, for each of its decision classes
//   (tune-parameters aside), the insight "CLASS helps FAMILY kernels" when it was faster than
//   its parent beyond the noise, and contradicts it when it was slower or failed.
//
//   Failure rules. An error signature (NormalizeError) seen at least twice in the family
//   becomes the failure rule "Recurring error: SIGNATURE", supported by each occurrence. When an
//   attempt derived from a failed one is valid, the change is added to the rule's text
//   ("Fixed by: DECISION"), creating the rule if needed.
//
//   Credit. The items the attempt's context held (used edges) share a credit of +1 when it
//   improved on its parent beyond the noise, else -0.25 (GraphWriter::CreditUsed).
//
// Insights are scoped to the op family, the backend, the device and architecture, the compiler
// and the task's size decade ([10^k, 10^(k+1)) elements), so evidence adds up across the tasks
// of a family of similar size on one machine. Near-duplicates do not arise: the insight's text is
// a function of its scope and classes, and the store upserts by that key.
// Thread safety: as GraphStore's; Reflect must run inside the Write body that owns `writer`.
#ifndef KOPE_AGENT_REFLECTION_H_
#define KOPE_AGENT_REFLECTION_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"
#include "kope/memory/graph_store.h"
#include "kope/memory/model.h"

namespace kope::agent {

struct ReflectionOptions {
  double min_noise = 0.03;     // relative effect below which nothing is learned
  double credit_gain = 1.0;    // shared by the used items of an attempt that improved
  double credit_loss = -0.25;  // shared by those of one that did not
};

struct ReflectionInput {
  memory::TaskNode task;
  memory::HardwareNode hardware;
  std::string compiler;  // the run's compiler, for the insight scope
  memory::AttemptNode attempt;
  memory::OutcomeNode outcome;                // the attempt's outcome just recorded
  std::optional<memory::AttemptView> parent;  // with its latest outcome; unset for a root
};

struct ReflectionResult {
  int supported = 0;                     // evidence edges added as support
  int contradicted = 0;                  // ... as contradiction
  int failure_rules = 0;                 // failure rules created or supported
  int fixes = 0;                         // fixes added to a rule's text
  int credited = 0;                      // used edges credited
  bool improved = false;                 // the attempt improved on its parent beyond the noise
  std::vector<memory::NodeId> insights;  // the insights touched
};

Result<ReflectionResult> Reflect(memory::GraphStore& store, memory::GraphWriter& writer,
                                 const ReflectionInput& input,
                                 const ReflectionOptions& options = {});

// The tuning insight's text, and the tunable an insight text is about (nullopt for others).
std::string TuningInsightText(std::string_view tunable, std::string_view op_family);
std::optional<std::string> TunableOfInsight(std::string_view text);

// The scope reflection gives insights for this task on this hardware.
memory::InsightScope ScopeFor(const memory::TaskNode& task, const memory::HardwareNode& hardware,
                              std::string_view compiler);

// The relative noise between two outcomes (see the rules above).
double RelativeNoise(const memory::OutcomeNode& a, const memory::OutcomeNode& b, double min_noise);

}  // namespace kope::agent

#endif  // KOPE_AGENT_REFLECTION_H_
