// The LLM proposer, and the mixed proposer that lets the tuner sweep what the LLM leaves open.
//
// LLM proposer. It writes in the request's candidate language (a native kernel, or a ModelNew
// module for triton and torch: the prompt, the tunables paragraph and the reply format follow
// it). For each proposal it builds the prompt with the context manager
// (context::BuildContext: the task, the node being expanded, its lineage, the alternatives tried
// from it, the insights, exemplars and failure rules in scope, under a token budget), adds a
// paragraph on declaring tunables (tunables.h), sends it to the provider and parses the reply
// (llm::ParseProposal). A reply that cannot be parsed is answered once with the parser's reason
// ("Your reply could not be used: ...") and the model asked again; if that fails too the
// proposal is kFailed, with the tokens both calls spent. The candidate's decision, stated tags
// that are decision classes, and "llm:MODEL" as proposer are recorded; the context's items become
// `used` edges of the attempt (context::RecordInjection) so that they can be credited. Prompt
// token counts reported by the provider calibrate the token counter (context::TokenCalibration).
// Provider errors after the provider's own retries are returned as a Status (the episode stops,
// resumable); a cancelled request returns Cancelled.
//
// Mixed proposer. Expanding a node whose source declares tunables, it lets the tuner step
// (offline_proposer.h) when the node was written by the LLM (its first sweep) or is a tuner
// step that improved on its parent (the climb goes on), and when the tuner has an untried move
// left; otherwise the LLM proposes. Fresh starts go to the LLM.
//
// Thread safety: one episode, one thread (the provider itself may be shared).
#ifndef KOPE_AGENT_LLM_PROPOSER_H_
#define KOPE_AGENT_LLM_PROPOSER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kope/agent/proposer.h"
#include "kope/context/context_builder.h"
#include "kope/context/token_counter.h"
#include "kope/llm/provider.h"
#include "kope/llm/usage.h"

namespace kope::agent {

struct LlmProposerOptions {
  int64_t context_budget_tokens = 8000;  // the prompt's hard budget
  context::ContextMode mode = context::ContextMode::kActive;
  int parse_retries = 1;  // further calls after a reply that could not be parsed
  // Not owned; may be null. Used to count the prompt's tokens and updated with the provider's
  // reported counts.
  context::TokenCalibration* calibration = nullptr;
  llm::PriceTable prices;  // for the cost of each call
};

// `provider` is not owned and must outlive the proposer.
std::unique_ptr<Proposer> CreateLlmProposer(llm::LlmProvider& provider,
                                            LlmProposerOptions options = {});

// `llm` proposes structure, `tuner` (normally CreateOfflineProposer) the numbers. Both owned.
std::unique_ptr<Proposer> CreateMixedProposer(std::unique_ptr<Proposer> llm,
                                              std::unique_ptr<Proposer> tuner);

// The paragraph on tunables added to the LLM's system prompt, for candidates in `language`
// (candidate_language.h: the C form for cpp and cuda, the Python form for triton and torch).
std::string_view TunablesInstructions(std::string_view language = "cpp");

}  // namespace kope::agent

#endif  // KOPE_AGENT_LLM_PROPOSER_H_
