// A profile's extracted tasks in the experience graph, the same store `kope optimize` uses.
//
// Each task folder the profile names (opportunities with a task) becomes the task node that
// `kope optimize` and `kope eval --record` would write for it (record::TaskNodeFor: same key,
// so that later episodes on the folder add to this node), its attrs extended with the workload
// (name and workload.json's hash), the phases and the weight (the opportunity's phase-weighted
// share of the workload's time). A workload node (name, hash of workload.json) gets a
// `from_workload` edge to each task, carrying the phases, the weight and the ranking.
//
// Idempotent: recording the same workload and tasks again finds the nodes and edges and adds
// nothing. Everything is written in one transaction: a task folder that does not load (bad
// task.toml) fails the whole recording and writes nothing.
#ifndef KOPE_DEPLOY_RECORDING_H_
#define KOPE_DEPLOY_RECORDING_H_

#include <filesystem>
#include <string_view>
#include <vector>

#include "kope/base/status.h"
#include "kope/deploy/profile.h"
#include "kope/deploy/workload.h"
#include "kope/memory/graph_store.h"

namespace kope::deploy {

struct RecordedWorkload {
  memory::NodeId workload_id = 0;
  std::vector<memory::NodeId> task_ids;  // in the profile's ranking order
  int new_edges = 0;                     // from_workload edges added by this call
};

// `workload_json` is the text written to DIR/workload.json (its hash identifies the workload);
// `out_dir` is DIR, against which the opportunities' task folders are resolved.
Result<RecordedWorkload> RecordWorkloadTasks(memory::GraphStore& store, const Workload& workload,
                                             std::string_view workload_json, const Profile& profile,
                                             const std::filesystem::path& out_dir);

}  // namespace kope::deploy

#endif  // KOPE_DEPLOY_RECORDING_H_
