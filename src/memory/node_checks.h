// The checks a store makes before writing a node or a record, private to the memory component:
// one definition for both stores.
#ifndef KOPE_SRC_MEMORY_NODE_CHECKS_H_
#define KOPE_SRC_MEMORY_NODE_CHECKS_H_

#include <string>
#include <string_view>

#include "kope/base/status.h"
#include "kope/memory/model.h"

namespace kope::memory {

// A key given on write: empty (the store derives it) or 32 lowercase hex digits. `what` names
// the node in the message.
Status CheckKey(std::string_view what, const std::string& key);
inline Status CheckKey(NodeKind kind, const std::string& key) {
  return CheckKey(NodeKindName(kind), key);
}

// A name and a workload hash, a well-formed key where one is given, attrs a JSON object.
Status CheckWorkload(const WorkloadNode& workload);
// A well-formed key where one is given, the report a JSON object. (That the workload exists is
// the store's to check.)
Status CheckDeployment(const DeploymentRecord& deployment);

}  // namespace kope::memory

#endif  // KOPE_SRC_MEMORY_NODE_CHECKS_H_
