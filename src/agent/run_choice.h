// Which run an episode records into: the one asked for, the latest unfinished matching one, or a
// new one. Internal to src/agent.
#ifndef KOPE_SRC_AGENT_RUN_CHOICE_H_
#define KOPE_SRC_AGENT_RUN_CHOICE_H_

#include <optional>
#include <string>
#include <string_view>

#include "episode_state.h"
#include "kope/agent/episode.h"
#include "kope/base/status.h"
#include "kope/memory/graph_store.h"

namespace kope::agent::internal {

// The task and hardware nodes a run belongs to, and their names for messages.
struct RunOwner {
  memory::NodeId task_id = 0;
  memory::NodeId hardware_id = 0;
  std::string_view task_name;
  std::string_view backend;
};

struct RunChoice {
  memory::NodeId run_id = 0;  // 0: no run fits; a new one is started with `config`
  RunConfig config;           // the chosen run's own, else the one given
  bool resumed = false;
  // With `reuse_finished`, when the latest matching run is finished: its state and the stop rule
  // it met. The episode reports that run and does nothing.
  std::optional<EpisodeState> finished;
  std::string finished_stop;
};

// `options.run_id` when given (InvalidArgument unless it is a run of the owner's task and
// hardware); else, with `options.resume`, the latest run of the task and hardware with the same
// label, proposer and language, when no stop rule is met yet. `config` is what a new run starts
// with. The store's errors as they are.
Result<RunChoice> ChooseRun(memory::GraphStore& store, const EpisodeOptions& options,
                            const RunOwner& owner, RunConfig config);

}  // namespace kope::agent::internal

#endif  // KOPE_SRC_AGENT_RUN_CHOICE_H_
