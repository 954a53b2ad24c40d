// Retrieval: what the experience graph holds for a state. Internal to kope_context.
#ifndef KOPE_SRC_CONTEXT_RETRIEVAL_H_
#define KOPE_SRC_CONTEXT_RETRIEVAL_H_

#include <vector>

#include "candidate.h"
#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::context::internal {

// Resolves the request: the task (spec or node), the hardware and its node, the node with its
// lineage and source (or the baseline), the run, the state in words. NotFound for a node or task
// id that does not exist; InvalidArgument when neither a task nor a node is given, or there is no
// hardware.
Result<State> ResolveState(memory::GraphStore& store, const ContextRequest& request);

// Every candidate for the active context: lineage steps, alternatives, insights and failure rules
// in scope, exemplars, fixes of errors seen before, the current best. Each carries its relevance,
// evidence, text similarity (from FTS5 BM25 for insights) and timestamp; scoring is done later.
// Updates state.now with the newest timestamp seen.
Result<std::vector<Candidate>> Retrieve(memory::GraphStore& store, State& state);

}  // namespace kope::context::internal

#endif  // KOPE_SRC_CONTEXT_RETRIEVAL_H_
