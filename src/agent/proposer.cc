#include "kope/agent/proposer.h"

#include <vector>

#include "kope/base/hash.h"
#include "kope/memory/graph_store.h"

namespace kope::agent {

Result<bool> SourceTried(const ProposalRequest& request, std::string_view source) {
  KOPE_ASSIGN_OR_RETURN(
      std::vector<memory::AttemptView> found,
      request.store->AttemptsWithSource(request.task_id, request.hardware_id, ContentHash(source)));
  return !found.empty();
}

}  // namespace kope::agent
