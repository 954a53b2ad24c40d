#include "kope/memory/graph_store.h"

namespace kope::memory {

std::string_view SearchKindName(SearchKind kind) {
  switch (kind) {
    case SearchKind::kAttempt:
      return "attempt";
    case SearchKind::kInsight:
      return "insight";
    case SearchKind::kError:
      return "error";
    case SearchKind::kTask:
      return "task";
  }
  return "attempt";
}

}  // namespace kope::memory
