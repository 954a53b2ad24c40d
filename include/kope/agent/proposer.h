// Proposer: where candidate kernels come from.
//
// An episode picks a node to expand (a recorded attempt, or nothing for a fresh start) and asks
// its proposer for one candidate derived from it. Implementations:
//   - the offline proposer (offline_proposer.h): tunes the parameters a kernel declares
//     (tunables.h) and transfers the best recorded kernels of the same op family; no LLM;
//   - the LLM proposer (llm_proposer.h): a prompt from the context manager, the reply parsed
//     into a decision and a source;
//   - the mixed proposer (llm_proposer.h): the LLM chooses the structure, the tuner sweeps the
//     numbers the LLM's kernels declare.
// A proposer reads the experience graph but never writes it: the episode records what it
// proposes (and calls Candidate::on_recorded inside that transaction). A proposer never
// evaluates anything: every candidate goes through the evaluator.
//
// Failures: a proposer that has nothing new to offer from a node answers kExhausted; one whose
// attempt to produce a candidate failed in a way worth counting (a reply that could not be
// parsed) answers kFailed with the reason and the tokens it spent. A Status error means the
// proposer cannot go on (the provider is unreachable after its retries, the store fails, the
// request was cancelled). A proposer is used by one episode, from one thread at a time.
#ifndef KOPE_AGENT_PROPOSER_H_
#define KOPE_AGENT_PROPOSER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/backend/hardware.h"
#include "kope/base/status.h"
#include "kope/memory/graph_store.h"
#include "kope/task/task.h"

namespace kope::agent {

struct ProposalRequest {
  const Task* task = nullptr;  // not owned; outlives the call
  std::string language;        // the backend's task language: "cpp" or "cuda"
  // What to write this proposal in (candidate_language.h): `language`, "triton" or "torch".
  // "" means `language`. A tuner step keeps its parent's language whatever this says.
  std::string candidate_language;
  HardwareInfo hardware;
  memory::GraphStore* store = nullptr;  // not owned; read only
  memory::NodeId task_id = 0;
  memory::NodeId hardware_id = 0;
  memory::NodeId run_id = 0;
  // The node to expand, with its latest outcome; unset for a fresh start.
  std::optional<memory::AttemptView> parent;
  std::string parent_source;  // the parent's full source ("" for a fresh start)
  // Whether the parent improved on its own parent (a root: whether it is valid).
  bool parent_improved = false;
  // Raised to abandon the call (an LLM request in flight returns Cancelled).
  const std::atomic<bool>* cancel = nullptr;
};

struct Candidate {
  std::string source;
  std::string decision;              // what changed and why, in words
  std::vector<std::string> classes;  // decision classes the proposer states (may be empty)
  std::string proposer;              // recorded on the attempt: "tuner", "seed", "llm:MODEL", ...
  // The language it is written in (candidate_language.h); "": its parent's when the source has
  // the parent's format, else what the source reads as. The episode adds it to the proposer.
  std::string language;
  // Called in the transaction that records the attempt, with its id (e.g. to record which
  // experience the prompt held). May be empty.
  std::function<Status(memory::GraphWriter&, memory::NodeId attempt)> on_recorded;
};

// What producing one proposal cost.
struct ProposalUsage {
  int calls = 0;  // model calls that reached a model now
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double cost_usd = 0;
  double model_seconds = 0;  // waiting for the model (not the proposer's own work)
  int64_t tokens() const { return prompt_tokens + completion_tokens; }
};

struct ProposeResult {
  enum class Kind { kCandidate, kExhausted, kFailed };
  Kind kind = Kind::kExhausted;
  Candidate candidate;  // kCandidate
  std::string reason;   // kExhausted, kFailed: why, in one line
  ProposalUsage usage;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Recorded in the run's configuration: "offline", "llm:NAME/MODEL", ...
  virtual std::string name() const = 0;
  // Whether a fresh start (no parent) may still give a candidate not tried before.
  virtual Result<bool> CanStartFresh(const ProposalRequest& request) = 0;
  virtual Result<ProposeResult> Propose(const ProposalRequest& request) = 0;
  // The model proposals are priced and calibrated for ("" when no model is involved).
  virtual std::string model() const { return ""; }
};

// Whether a candidate with this source has been recorded for the request's task and hardware
// (by any run): proposers use it so as not to propose what the graph already holds.
Result<bool> SourceTried(const ProposalRequest& request, std::string_view source);

}  // namespace kope::agent

#endif  // KOPE_AGENT_PROPOSER_H_
