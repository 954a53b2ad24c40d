// Active context management and injection: the prompt for one optimization step, built afresh
// from the most relevant experience under a fixed token budget.
//
// BuildContext reads the experience graph for the current state (the task, the attempt being
// expanded, the hardware) and returns the system and user prompts for an LLM proposer, with the
// list of items they hold. In the active mode it retrieves
//   - the lineage from the root to the node (decisions and their measured effects),
//   - the alternatives already tried from the node (so that they are not repeated),
//   - the insights in scope (op family, hardware, size regime), ranked by evidence,
//   - exemplar attempts from this and similar tasks (their decision and an excerpt of the code),
//   - failure rules (errors seen before, with the change that fixed them),
//   - the current best's timings and profile,
// ranks them by relevance x evidence x usefulness (credit earned through `used` edges, with an
// exploration bonus for rarely shown items) x recency, removes near-duplicates (maximal marginal
// relevance), and packs them into sections with quotas under one hard budget: greedy by score per
// token, shortening an item (full, summary, one line; code as its kernel body or diff hunks)
// before dropping it, unused quota flowing to the other sections. docs/CONTEXT.md gives the
// weights and quotas.
//
// In the passive mode (the ablation baseline) the prompt is the task followed by the episode's
// whole history, every attempt of the run with its full source and result, appended turn after
// turn; nothing is ranked or shortened, and only when the history outgrows the budget (the
// model's context window) are the oldest turns left out. With kUnboundedTokens as its budget
// (what `kope optimize --passive` and the ablations use) nothing is ever left out.
//
// Guarantees: the estimate of the returned prompts, with its safety margin
// (TokenCounter::Bound of the request's model), never exceeds the budget; a budget too small for
// the task itself is InvalidArgument, saying how many tokens the task needs. The same graph and
// request give the same context, byte for byte (ties are broken by node id; no clock is read).
// BuildContext only reads the store. NotFound when the node or the task id does not exist.
//
// Thread safety: BuildContext may run on several threads at once (GraphStore is thread-safe);
// the request's task and calibration must stay alive and unchanged during the call.
#ifndef KOPE_CONTEXT_CONTEXT_BUILDER_H_
#define KOPE_CONTEXT_CONTEXT_BUILDER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kope/backend/hardware.h"
#include "kope/base/status.h"
#include "kope/context/token_counter.h"
#include "kope/memory/graph_store.h"
#include "kope/memory/model.h"
#include "kope/task/task.h"

namespace kope::context {

enum class ContextMode { kActive, kPassive };

// A budget no prompt reaches: the passive mode's whole history, however long the run grows.
inline constexpr int64_t kUnboundedTokens = int64_t{1} << 40;
std::string_view ContextModeName(ContextMode mode);  // "active", "passive"

// The prompt's sections, in the order they are rendered.
enum class Section {
  kTask,          // the task, the hardware, the kernel being changed (always shown)
  kProfile,       // the current best's timings and profile
  kLineage,       // root to node
  kAlternatives,  // tried from the node
  kInsights,
  kExemplars,
  kFailureRules,
  kHistory,  // passive mode: the episode's turns
};
// "task", "profile", "lineage", "alternatives", "insights", "exemplars", "failure_rules",
// "history".
std::string_view SectionName(Section section);

// How far an item was shortened to fit.
enum class Fidelity { kFull, kSummary, kLine };
std::string_view FidelityName(Fidelity fidelity);  // "full", "summary", "line"

struct ContextRequest {
  // The loaded task (not owned). Null: the task is described from its node in the store.
  const Task* task = nullptr;
  // The task's node; 0: the node's task, else the newest stored task with the task's name and
  // family, else none (a task without history).
  memory::NodeId task_id = 0;
  // The attempt being expanded; 0: a fresh start from the task's baseline.
  memory::NodeId node = 0;
  // The episode whose history the passive mode shows; 0: the node's run.
  memory::NodeId run = 0;
  // The target machine. An empty backend: the node's hardware, as stored.
  HardwareInfo hardware;
  // The hard limit on the prompts' tokens (system + user, with the margin), not counting the
  // reply.
  int64_t budget_tokens = 8000;
  ContextMode mode = ContextMode::kActive;
  // What the proposer writes: "" (or "cpp", "cuda") a native kernel in the hardware's language;
  // "triton" or "torch" a ModelNew module (KernelBench's format) for a PyTorch task, which needs
  // `task` with a PyTorch baseline: the prompt then shows the ModelNew format and the problem's
  // source, and asks for a Python file (InvalidArgument for a task without one, or another name).
  std::string language;
  // The model the prompt is for, and the calibration its tokens are counted with (not owned;
  // null: TokenCounter's defaults).
  std::string model;
  const TokenCalibration* calibration = nullptr;
};

struct ContextItem {
  Section section = Section::kTask;
  // "task", "hardware", "kernel", "best", "step", "alternative", "insight", "failure_rule",
  // "fix", "exemplar", "turn".
  std::string kind;
  memory::NodeRef node;  // the node it came from; id 0 for the task's own files
  double score = 0;      // its ranking score; 0 for items shown unconditionally
  int64_t tokens = 0;    // TokenCounter::Bound of its text
  std::string text;      // as rendered into the prompt
  Fidelity fidelity = Fidelity::kFull;
};

struct SectionUsage {
  Section section = Section::kTask;
  int64_t quota = 0;   // tokens the section was allotted before unused quota flowed
  int64_t tokens = 0;  // tokens its items and heading take
  int items = 0;
  int shortened = 0;  // items shown as a summary or one line
  int dropped = 0;    // candidates left out
};

struct BuiltContext {
  ContextMode mode = ContextMode::kActive;
  std::string system_prompt;
  std::string user_prompt;
  std::vector<ContextItem> items;      // in prompt order
  std::vector<SectionUsage> sections;  // in prompt order; sections with candidates only
  int64_t budget_tokens = 0;
  // EstimateTokens(system_prompt) + EstimateTokens(user_prompt): record this against the
  // provider's reported prompt tokens (TokenCalibration::Record).
  int64_t raw_tokens = 0;
  int64_t expected_tokens = 0;  // TokenCounter::Expected(raw_tokens)
  int64_t total_tokens = 0;     // TokenCounter::Bound(raw_tokens); never above the budget
  int candidates = 0;           // items considered
  // The state the context was built for, as resolved (0: none).
  memory::NodeId task_id = 0;
  memory::NodeId hardware_id = 0;
  memory::NodeId node = 0;
  memory::NodeId run = 0;
};

Result<BuiltContext> BuildContext(memory::GraphStore& store, const ContextRequest& request);

// Records what `attempt`'s context held: one `used` edge (section, score, tokens) per item of the
// ranked sections (insights, exemplars, failure rules) that came from an insight or an attempt.
// Lineage, alternatives, the task and the profile are shown by construction and earn no credit.
// Call it in the transaction that stores the attempt (or after), and GraphWriter::CreditUsed once
// its outcome is known. Recording twice adds nothing.
Status RecordInjection(memory::GraphWriter& writer, memory::NodeId attempt,
                       const BuiltContext& context);

}  // namespace kope::context

#endif  // KOPE_CONTEXT_CONTEXT_BUILDER_H_
