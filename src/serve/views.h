// The API's views: each answers one endpoint (docs/SERVE_API.md) from the store's queries.
// `id` is the path's node id (0 for the endpoints without one). NotFound and InvalidArgument
// statuses become 404 and 400 responses.
#ifndef KOPE_SRC_SERVE_VIEWS_H_
#define KOPE_SRC_SERVE_VIEWS_H_

#include <nlohmann/json.hpp>
#include <vector>

#include "api_params.h"
#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::serve::internal {

using View = Result<nlohmann::json> (*)(memory::GraphStore& store, const Params& params,
                                        memory::NodeId id);

// run_views.cc
Result<nlohmann::json> StatsView(memory::GraphStore& store, const Params& params, memory::NodeId);
Result<nlohmann::json> FacetsView(memory::GraphStore& store, const Params& params, memory::NodeId);
Result<nlohmann::json> RunsView(memory::GraphStore& store, const Params& params, memory::NodeId);
Result<nlohmann::json> SuitesView(memory::GraphStore& store, const Params& params, memory::NodeId);
Result<nlohmann::json> RunView(memory::GraphStore& store, const Params& params, memory::NodeId id);
Result<nlohmann::json> RunTreeView(memory::GraphStore& store, const Params& params,
                                   memory::NodeId id);
Result<nlohmann::json> RunAttemptsView(memory::GraphStore& store, const Params& params,
                                       memory::NodeId id);
Result<nlohmann::json> RunChartsView(memory::GraphStore& store, const Params& params,
                                     memory::NodeId id);

// attempt_views.cc
Result<nlohmann::json> AttemptDetailView(memory::GraphStore& store, const Params& params,
                                         memory::NodeId id);
Result<nlohmann::json> TasksView(memory::GraphStore& store, const Params& params, memory::NodeId);
Result<nlohmann::json> TaskView(memory::GraphStore& store, const Params& params, memory::NodeId id);

// insight_views.cc
Result<nlohmann::json> InsightsView(memory::GraphStore& store, const Params& params,
                                    memory::NodeId);
Result<nlohmann::json> InsightView(memory::GraphStore& store, const Params& params,
                                   memory::NodeId id);
Result<nlohmann::json> SearchView(memory::GraphStore& store, const Params& params, memory::NodeId);
Result<nlohmann::json> WorkloadsView(memory::GraphStore& store, const Params& params,
                                     memory::NodeId);
Result<nlohmann::json> WorkloadView(memory::GraphStore& store, const Params& params,
                                    memory::NodeId id);

// Every insight of the store: FindInsights for each op family that a task has, and for the
// general ones; by id.
Result<std::vector<memory::InsightNode>> AllInsights(memory::GraphStore& store);

}  // namespace kope::serve::internal

#endif  // KOPE_SRC_SERVE_VIEWS_H_
