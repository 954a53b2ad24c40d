// Rendering: the words and code the LLM proposer reads. Internal to kope_context.
//
// Every rendered piece ends with a newline, so that its token estimate adds up
// (EstimateTokens is additive over newline-terminated pieces).
#ifndef KOPE_SRC_CONTEXT_RENDER_H_
#define KOPE_SRC_CONTEXT_RENDER_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "candidate.h"
#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::context::internal {

using Forms = std::vector<std::pair<Fidelity, std::string>>;

// include/kope/kernel.h as it was when kope was built.
std::string_view KernelAbiHeader();

// The role, the backend's compiler and rules, the kernel ABI and the reply format.
std::string SystemPrompt(const State& state);
// The task (inputs, outputs, shapes, dtypes, sizes, tolerance, roofline) and the hardware.
std::string TaskText(const State& state);
// The kernel being changed (the node's or the baseline), with its decision and outcome: full
// source, an excerpt, or a line.
Forms KernelForms(const State& state);
// What the proposer is asked to do.
std::string Closing(const State& state);
// A section's heading (a blank line first).
std::string SectionHeading(Section section);

// Fills candidate.forms (reads exemplar sources from the store).
Status RenderForms(memory::GraphStore& store, const State& state, Candidate& candidate);

// "a42", "i7": the short reference the prompt uses.
std::string ShortRef(const memory::NodeRef& ref);
// An outcome in words: "valid, 1.42x over the baseline (1.18x over its parent), 35% of the
// roofline", "compile_error: <error>", "not evaluated". `detailed` adds the error's lines.
std::string OutcomeText(const std::optional<memory::OutcomeNode>& outcome,
                        std::optional<double> parent_speedup, bool detailed);
// Timings, profile metrics and resources from an outcome's evidence (the evaluator's record), in
// words; "" when it holds none. `detailed` adds the profile, resources and flags.
std::string EvidenceText(const memory::OutcomeNode& outcome, bool detailed);
// One turn of the passive history: the attempt's decision, full source and result.
std::string TurnText(const memory::AttemptView& view, std::string_view source,
                     std::string_view language);

}  // namespace kope::context::internal

#endif  // KOPE_SRC_CONTEXT_RENDER_H_
