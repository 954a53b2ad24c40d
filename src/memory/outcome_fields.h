// The outcome's own fields as a JSON value, private to the memory component: the writer behind
// OutcomeJson (kope/memory/outcome_json.h) that the export uses without going through text.
#ifndef KOPE_SRC_MEMORY_OUTCOME_FIELDS_H_
#define KOPE_SRC_MEMORY_OUTCOME_FIELDS_H_

#include <nlohmann/json.hpp>

#include "kope/memory/model.h"

namespace kope::memory {

// Every field of outcome_json.h's list, without references to other nodes.
nlohmann::json OutcomeFields(const OutcomeNode& outcome);

}  // namespace kope::memory

#endif  // KOPE_SRC_MEMORY_OUTCOME_FIELDS_H_
