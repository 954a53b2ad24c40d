// The experience graph's nodes as the API's JSON objects (docs/SERVE_API.md names the fields).
#ifndef KOPE_SRC_SERVE_NODE_JSON_H_
#define KOPE_SRC_SERVE_NODE_JSON_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kope/memory/graph_store.h"
#include "kope/memory/model.h"

namespace kope::serve::internal {

using nlohmann::json;

// A stored JSON text as an object; {} for anything that is not one.
json ParseObject(const std::string& text);

json TaskJson(const memory::TaskNode& task);
json HardwareJson(const memory::HardwareNode& hardware);
// With "proposer": the run's proposer as its configuration names it ("offline", or
// "llm:PROVIDER/MODEL").
json RunJson(const memory::RunNode& run);
std::string RunProposer(const memory::RunNode& run);
// Verdict, stage, flagged, speedup, roofline and time; null without an outcome.
json OutcomeBrief(const std::optional<memory::OutcomeNode>& outcome);
// Every field, evidence included (memory's OutcomeJson).
json OutcomeFull(const memory::OutcomeNode& outcome);
// The attempt without its diff, with its latest outcome's brief as "outcome".
json AttemptBrief(const memory::AttemptView& view);
json InsightJson(const memory::InsightNode& insight);
json WorkloadJson(const memory::WorkloadNode& workload);

}  // namespace kope::serve::internal

#endif  // KOPE_SRC_SERVE_NODE_JSON_H_
