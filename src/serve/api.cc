#include "kope/serve/api.h"

#include <exception>
#include <set>
#include <string_view>
#include <vector>

#include "api_params.h"
#include "views.h"

namespace kope::serve {
namespace {

using internal::View;
using memory::NodeKind;
using nlohmann::json;

// One endpoint: its path (":id" for a node id of `kind`), its view and the parameters it takes.
struct Route {
  std::vector<std::string_view> segments;
  NodeKind kind = NodeKind::kRun;
  View view;
  std::set<std::string_view> params;
};

const std::vector<Route>& Routes() {
  static const std::vector<Route> routes = {
      {{"stats"}, NodeKind::kRun, internal::StatsView, {}},
      {{"facets"}, NodeKind::kRun, internal::FacetsView, {}},
      {{"runs"},
       NodeKind::kRun,
       internal::RunsView,
       {"task", "family", "hardware", "proposer", "label", "since", "until", "limit", "offset"}},
      {{"runs", ":id"}, NodeKind::kRun, internal::RunView, {}},
      {{"suites"}, NodeKind::kRun, internal::SuitesView, {}},
      {{"runs", ":id", "tree"}, NodeKind::kRun, internal::RunTreeView, {}},
      {{"runs", ":id", "attempts"}, NodeKind::kRun, internal::RunAttemptsView, {"after"}},
      {{"runs", ":id", "charts"}, NodeKind::kRun, internal::RunChartsView, {"bins"}},
      {{"attempts", ":id"}, NodeKind::kAttempt, internal::AttemptDetailView, {}},
      {{"tasks"}, NodeKind::kTask, internal::TasksView, {"family"}},
      {{"tasks", ":id"}, NodeKind::kTask, internal::TaskView, {"limit"}},
      {{"insights"}, NodeKind::kInsight, internal::InsightsView, {"q", "family", "kind", "limit"}},
      {{"insights", ":id"}, NodeKind::kInsight, internal::InsightView, {"limit"}},
      {{"search"},
       NodeKind::kAttempt,
       internal::SearchView,
       {"q", "kinds", "family", "any", "limit"}},
      {{"workloads"}, NodeKind::kWorkload, internal::WorkloadsView, {}},
      {{"workloads", ":id"}, NodeKind::kWorkload, internal::WorkloadView, {}},
  };
  return routes;
}

ApiResponse Error(int status, const std::string& message) {
  return {status, "application/json",
          json{{"error", {{"status", status}, {"message", message}}}}.dump()};
}

int HttpStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// The route that `parts` (without the leading "api") names, and the id segment in it.
const Route* Match(const std::vector<std::string_view>& parts, std::string_view& id) {
  for (const Route& route : Routes()) {
    if (route.segments.size() != parts.size()) continue;
    bool same = true;
    for (size_t i = 0; i < parts.size() && same; ++i) {
      if (route.segments[i] == ":id") {
        id = parts[i];
      } else {
        same = route.segments[i] == parts[i];
      }
    }
    if (same) return &route;
  }
  return nullptr;
}

ApiResponse Answer(memory::GraphStore& store, const ApiRequest& request) {
  std::vector<std::string_view> parts = Split(request.path);
  if (parts.empty() || parts[0] != "api") return Error(404, "no such page: " + request.path);
  parts.erase(parts.begin());
  std::string_view id_text;
  const Route* route = Match(parts, id_text);
  if (route == nullptr) return Error(404, "no such endpoint: " + request.path);
  for (const auto& [name, value] : request.params) {
    if (route->params.count(name) == 0) {
      return Error(400, "unknown parameter '" + name + "' for " + request.path);
    }
  }
  memory::NodeId id = 0;
  if (!id_text.empty()) {
    Result<memory::NodeId> parsed = internal::ParseId(id_text, route->kind);
    if (!parsed.ok()) return Error(400, parsed.status().message());
    id = *parsed;
  }
  internal::Params params(request.params);
  Result<json> body = route->view(store, params, id);
  if (!body.ok()) return Error(HttpStatus(body.status()), body.status().message());
  // Invalid UTF-8 in a stored text (a compiler's output) is replaced, not an exception.
  return {200, "application/json", body->dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace

ApiResponse ServeApi::Handle(const ApiRequest& request) const {
  try {
    return Answer(store_, request);
  } catch (const std::exception& e) {
    return Error(500, std::string("internal error: ") + e.what());
  }
}

}  // namespace kope::serve
