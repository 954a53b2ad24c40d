// The JSON form of experience-graph nodes that `kope memory show`, `lineage` and their --json
// print. Internal to the kope command.
#ifndef KOPE_SRC_CLI_MEMORY_NODES_H_
#define KOPE_SRC_CLI_MEMORY_NODES_H_

#include <nlohmann/json.hpp>

#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::cli {

// An attempt with its newest outcome (null when it has none).
nlohmann::json AttemptJson(const memory::AttemptView& view);

// One node as `kope memory show --json` prints it: an attempt with its diff (and its source when
// `with_source`), an insight with its evidence and usage, a task with its best attempts and
// similar tasks, a run with its attempt count, an outcome or hardware node as stored. The store's
// error when the node cannot be read; what only adds to the node (evidence, best attempts, ...)
// is left out when it cannot be read.
Result<nlohmann::json> NodeJson(memory::GraphStore& store, const memory::NodeRef& ref,
                                bool with_source);

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_MEMORY_NODES_H_
