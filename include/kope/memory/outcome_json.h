// An outcome node as JSON: the one writer of an outcome's fields, for every place that shows or
// exports outcomes (`kope memory show` and the JSON-lines export).
//
// The fields are the node's own: key, stage, verdict, flagged, speedup, time_ms and roofline
// (null when absent), error_message, error_signature, evidence (the evidence text as a JSON
// object; the store accepts no other, and a text that is not one is written as {}) and
// created_at. References to other nodes are written in the reader's terms: OutcomeJson, for
// readers of one store, adds the store ids ("id", and "attempt": the attempt's id); the
// export, whose lines leave the store, names the attempt by its content key instead.
//
// The writer lives in memory, beside OutcomeNode, because both of its users can reach it here:
// the export is memory's own, and memory depends on nothing but base (not on eval, which makes
// outcomes, nor on the cli, which shows them). Strings that are not valid UTF-8 are written with
// U+FFFD in place of the bad bytes. Pure; thread-safe.
#ifndef KOPE_MEMORY_OUTCOME_JSON_H_
#define KOPE_MEMORY_OUTCOME_JSON_H_

#include <string>

#include "kope/memory/model.h"

namespace kope::memory {

// One line of JSON, keys in alphabetical order.
std::string OutcomeJson(const OutcomeNode& outcome);

}  // namespace kope::memory

#endif  // KOPE_MEMORY_OUTCOME_JSON_H_
