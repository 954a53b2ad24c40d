#include "kope/deploy/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <numeric>

#include "kope/base/file.h"

namespace kope::deploy {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// unit.json's kind when its unit is patchable; why not otherwise.
Result<std::string> PatchableKind(const fs::path& folder) {
  Result<std::string> text = ReadFileText(folder / "unit.json");
  if (!text.ok()) return Status::NotFound("no unit.json");
  json unit = json::parse(*text, nullptr, false);
  if (unit.is_discarded() || !unit.is_object()) return Status::InvalidArgument("bad unit.json");
  const std::string kind = unit.value("kind", std::string());
  if (!unit.value("patchable", false)) {
    return Status::FailedPrecondition("its unit (" + kind +
                                      ") is not patched by module replacement");
  }
  return kind;
}

}  // namespace

Result<TaskSelection> SelectTasks(const Profile& profile, const fs::path& out_dir, size_t max_tasks,
                                  const std::vector<std::string>& units) {
  TaskSelection selection;
  for (const Opportunity& o : profile.opportunities) {
    if (!o.task) continue;
    const fs::path folder = (out_dir / *o.task).lexically_normal();
    Result<std::string> kind = PatchableKind(folder);
    if (!kind.ok()) {
      selection.skipped.push_back(o.name + ": " + kind.status().message());
      continue;
    }
    if (!units.empty() && std::find(units.begin(), units.end(), *kind) == units.end()) {
      selection.skipped.push_back(o.name + ": its unit (" + *kind + ") is not among --units");
      continue;
    }
    if (selection.tasks.size() >= max_tasks) {
      selection.skipped.push_back(o.name + ": beyond the " + std::to_string(max_tasks) +
                                  " tasks optimized");
      continue;
    }
    selection.tasks.push_back({o.name, folder, *kind, o.share, o.phases, 0});
  }
  if (selection.tasks.empty()) {
    return Status::FailedPrecondition(
        "no extracted task can be patched into the model (profile more opportunities with "
        "--top; skipped: " +
        std::to_string(selection.skipped.size()) + ")");
  }
  return selection;
}

void SplitAttempts(int total, int minimum, std::vector<DeployTask>* tasks) {
  if (tasks->empty()) return;
  const int n = static_cast<int>(tasks->size());
  const int spare = std::max(0, total - minimum * n);
  double shares = 0;
  for (const DeployTask& t : *tasks) shares += std::max(t.share, 0.0);
  std::vector<double> exact(n);
  std::vector<int> order(n);
  int given = 0;
  for (int i = 0; i < n; ++i) {
    const double weight = shares > 0 ? std::max((*tasks)[i].share, 0.0) / shares : 1.0 / n;
    exact[i] = spare * weight;
    (*tasks)[i].attempts = minimum + static_cast<int>(std::floor(exact[i]));
    given += static_cast<int>(std::floor(exact[i]));
  }
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return exact[a] - std::floor(exact[a]) > exact[b] - std::floor(exact[b]);
  });
  for (int k = 0; k < spare - given; ++k) ++(*tasks)[order[k % n]].attempts;
}

std::vector<RuntimeDecision> RuntimeDecisions(const Workload& workload, const Profile& profile) {
  if (workload.run.device != "cuda" || workload.run.mode != "generate" ||
      workload.model.source == ModelSource::kScript) {
    return {};
  }
  double wall = 0, idle = 0;
  for (const PhaseProfile& p : profile.phases) {
    if (p.phase != "decode") continue;
    wall += p.weight * p.wall_ms;
    idle += p.weight * p.wall_ms * p.idle_fraction;
  }
  if (wall <= 0 || idle / wall < kHostBoundIdle) return {};
  int64_t longest = 0;
  for (const RequestEntry& r : workload.requests) longest = std::max(longest, r.prompt + r.decode);
  return {{"decode_graph",
           fmt::format("decode is host-bound: the GPU idle {:.0f}% of its time", 100 * idle / wall),
           longest + 1,
           {{"fused", true, true}, {"fused-step", true, false}, {"captured", false, false}}}};
}

std::string PlanJson(const fs::path& workload_json, const fs::path& out_dir,
                     const std::string& provenance_json, const std::vector<PlanTask>& tasks,
                     const std::vector<RuntimeDecision>& runtime) {
  json plan = {{"format", "kope-deploy-plan-1"},
               {"workload", workload_json.string()},
               {"out", out_dir.string()},
               {"provenance", json::parse(provenance_json, nullptr, false)},
               {"tasks", json::array()}};
  if (plan["provenance"].is_discarded()) plan["provenance"] = json::object();
  for (const PlanTask& t : tasks) {
    json candidates = json::array();
    for (const PlanCandidate& c : t.candidates) {
      json one = {{"attempt", c.attempt}, {"source", c.source.string()}};
      one["compiled"] = c.compiled.empty() ? json(nullptr) : json(c.compiled.string());
      one["speedup"] = c.speedup ? json(*c.speedup) : json(nullptr);
      candidates.push_back(std::move(one));
    }
    plan["tasks"].push_back({{"name", t.task.name},
                             {"folder", t.task.folder.string()},
                             {"unit", t.task.unit_kind},
                             {"share", t.task.share},
                             {"phases", t.task.phases},
                             {"candidates", std::move(candidates)}});
  }
  plan["runtime"] = json::array();
  for (const RuntimeDecision& d : runtime) {
    json variants = json::array();
    for (const RuntimeVariant& v : d.variants) {
      variants.push_back({{"name", v.name}, {"fuse", v.fuse}, {"fuse_prefill", v.fuse_prefill}});
    }
    plan["runtime"].push_back({{"name", d.name},
                               {"reason", d.reason},
                               {"max_cache_len", d.max_cache_len},
                               {"variants", std::move(variants)}});
  }
  return plan.dump(1);
}

}  // namespace kope::deploy
