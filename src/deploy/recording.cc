#include "kope/deploy/recording.h"

#include <nlohmann/json.hpp>

#include "kope/base/hash.h"
#include "kope/record/graph_nodes.h"
#include "kope/task/task.h"

namespace kope::deploy {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

memory::WorkloadNode WorkloadNodeFor(const Workload& w, std::string_view workload_json) {
  memory::WorkloadNode node;
  node.name = w.name;
  node.workload_hash = ContentHash(workload_json);
  json requests = json::array();
  for (const RequestEntry& r : w.requests) {
    requests.push_back(
        {{"batch", r.batch}, {"prompt", r.prompt}, {"decode", r.decode}, {"weight", r.weight}});
  }
  json model = {{"source", ModelSourceName(w.model.source)}};
  if (!w.model.architecture.empty()) model["architecture"] = w.model.architecture;
  if (!w.model.path.empty()) model["path"] = w.model.path.string();
  node.attrs_json = json{{"file", w.file.string()},      {"model", model},
                         {"dtype", w.run.dtype},         {"device", w.run.device},
                         {"attention", w.run.attention}, {"mode", w.run.mode},
                         {"requests", requests}}
                        .dump();
  return node;
}

// One extracted task: its node as `kope optimize` writes it, with the workload in its attrs.
struct ExtractedTask {
  memory::TaskNode node;
  memory::FromWorkloadEdge edge;
};

Result<ExtractedTask> ExtractedTaskFor(const Opportunity& o, const Workload& w,
                                       const memory::WorkloadNode& workload,
                                       const fs::path& out_dir) {
  const fs::path dir = out_dir / *o.task;
  Result<Task> task = LoadTask(dir);
  if (!task.ok()) return task.status().WithContext("task " + o.name + " of the profile");
  // The language the task's episodes are recorded with: the backend's own.
  const std::string language = w.run.device == "cuda" ? "cuda" : "cpp";
  ExtractedTask out;
  KOPE_ASSIGN_OR_RETURN(out.node, record::TaskNodeFor(*task, language));
  json attrs = json::parse(out.node.attrs_json);
  attrs["workload"] = {{"name", workload.name}, {"hash", workload.workload_hash}};
  attrs["phases"] = o.phases;
  attrs["weight"] = o.share;
  out.node.attrs_json = attrs.dump();
  out.edge.phases = o.phases;
  out.edge.weight = o.share;
  out.edge.attrs_json = json{
      {"rank", o.rank},   {"opportunity", o.name},
      {"grain", o.grain}, {"module_type", o.module_type},
      {"score", o.score}, {"amdahl_ceiling", o.amdahl_ceiling},
      {"task", *o.task}}.dump();
  return out;
}

}  // namespace

Result<RecordedWorkload> RecordWorkloadTasks(memory::GraphStore& store, const Workload& workload,
                                             std::string_view workload_json, const Profile& profile,
                                             const fs::path& out_dir) {
  memory::WorkloadNode node = WorkloadNodeFor(workload, workload_json);
  // Every task is read before anything is written.
  std::vector<ExtractedTask> tasks;
  for (const Opportunity& o : profile.opportunities) {
    if (!o.task) continue;
    KOPE_ASSIGN_OR_RETURN(ExtractedTask t, ExtractedTaskFor(o, workload, node, out_dir));
    tasks.push_back(std::move(t));
  }
  RecordedWorkload recorded;
  KOPE_RETURN_IF_ERROR(store.Write([&](memory::GraphWriter& w) -> Status {
    recorded = {};
    KOPE_ASSIGN_OR_RETURN(recorded.workload_id, w.PutWorkload(node));
    for (ExtractedTask& t : tasks) {
      KOPE_ASSIGN_OR_RETURN(t.edge.task_id, w.PutTask(t.node));
      t.edge.workload_id = recorded.workload_id;
      KOPE_ASSIGN_OR_RETURN(bool added, w.AddFromWorkload(t.edge));
      recorded.task_ids.push_back(t.edge.task_id);
      recorded.new_edges += added;
    }
    return Status::Ok();
  }));
  return recorded;
}

}  // namespace kope::deploy
