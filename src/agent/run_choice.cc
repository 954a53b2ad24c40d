#include "run_choice.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace kope::agent::internal {
namespace {

// The latest matching run: continued when unfinished, reported with `reuse_finished` when not.
Result<RunChoice> LatestMatchingRun(memory::GraphStore& store, const EpisodeOptions& options,
                                    const RunOwner& owner, RunConfig config) {
  RunChoice choice;
  choice.config = std::move(config);
  KOPE_ASSIGN_OR_RETURN(std::vector<memory::RunNode> runs, store.ListRuns(owner.task_id));
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    RunConfig stored = ParseRunConfig(it->config_json);
    if (it->hardware_id != owner.hardware_id || it->label != options.label ||
        stored.proposer != choice.config.proposer || stored.language != choice.config.language) {
      continue;
    }
    EpisodeState latest(it->id, stored);
    KOPE_RETURN_IF_ERROR(latest.Load(store, owner.task_id, owner.hardware_id, options.prior_nodes));
    std::string stop = latest.ReplayStop(0, 0);
    if (stop.empty()) {
      choice.run_id = it->id;
      choice.config = std::move(stored);
      choice.resumed = true;
    } else if (options.reuse_finished) {
      choice.run_id = it->id;
      choice.resumed = true;
      choice.finished = std::move(latest);
      choice.finished_stop = std::move(stop);
    }
    break;
  }
  return choice;
}

}  // namespace

Result<RunChoice> ChooseRun(memory::GraphStore& store, const EpisodeOptions& options,
                            const RunOwner& owner, RunConfig config) {
  if (options.run_id != 0) {
    KOPE_ASSIGN_OR_RETURN(memory::RunNode run, store.GetRun(options.run_id));
    if (run.task_id != owner.task_id || run.hardware_id != owner.hardware_id) {
      return Status::InvalidArgument(
          fmt::format("run r{} is not a run of task {} (as it is now) on this {}", options.run_id,
                      owner.task_name, owner.backend));
    }
    RunChoice choice;
    choice.run_id = options.run_id;
    choice.config = ParseRunConfig(run.config_json);
    choice.resumed = true;
    return choice;
  }
  if (!options.resume) {
    RunChoice choice;
    choice.config = std::move(config);
    return choice;
  }
  return LatestMatchingRun(store, options, owner, std::move(config));
}

}  // namespace kope::agent::internal
