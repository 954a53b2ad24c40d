// Assembling the prompt from its parts, for both modes. Internal to kope_context.
#ifndef KOPE_SRC_CONTEXT_ASSEMBLY_H_
#define KOPE_SRC_CONTEXT_ASSEMBLY_H_

#include <string>
#include <utility>

#include "candidate.h"
#include "kope/base/status.h"
#include "kope/memory/graph_store.h"
#include "render.h"

namespace kope::context::internal {

// The parts every prompt has: the system prompt, the task, the kernel to change and the ask.
struct FixedParts {
  std::string system;
  std::string task;
  std::pair<Fidelity, std::string> kernel;  // in the form chosen
  std::string closing;
  int64_t tokens = 0;  // Bound of all four
};

// The kernel is shown in the richest form with which the fixed parts stay within `share` of the
// budget (its shortest form when none does). InvalidArgument when even that exceeds the budget.
Result<FixedParts> MakeFixedParts(const State& state, double share);

// An item of the task section ("system", "task", "kernel", "ask").
ContextItem FixedItem(const State& state, std::string kind, std::string text, Fidelity fidelity);

// Drops the forms that save no tokens over the richer form before them; returns the Bound of
// each form kept.
std::vector<int64_t> CollapseForms(Forms& forms, const TokenCounter& counter);

// Fills the totals and the resolved state; Internal if the budget were exceeded (it cannot be).
Status Finish(const State& state, BuiltContext& built);

// A context in `mode` that starts with the fixed parts' system prompt and task: their items, the
// task section's usage, and the task as the user prompt's beginning.
BuiltContext StartContext(const State& state, const FixedParts& fixed, ContextMode mode,
                          int candidates);

// Ends the user prompt with the kernel to change and the ask (and their items), then Finish.
Status EndContext(const State& state, const FixedParts& fixed, BuiltContext& built);

Result<BuiltContext> BuildActive(memory::GraphStore& store, State& state);
Result<BuiltContext> BuildPassive(memory::GraphStore& store, State& state);

}  // namespace kope::context::internal

#endif  // KOPE_SRC_CONTEXT_ASSEMBLY_H_
