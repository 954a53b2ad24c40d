// An "episode" job: one task's whole episode (proposing, evaluating, recording) run by the
// `kope worker` that claims it, in the shared store the queue lives in, under the run label
// `label` (a suite's "bench:NAME", so that a suite resumes whether its episodes ran here or on
// workers). The payload carries the task's path as the workers see it and the episode flags;
// the result is {"run": id} plus the episode's report (agent::EpisodeReportToJson). Internal to
// the kope command.
#ifndef KOPE_SRC_CLI_EPISODE_JOB_H_
#define KOPE_SRC_CLI_EPISODE_JOB_H_

#include <string>
#include <string_view>

#include "episode_flags.h"
#include "kope/base/status.h"

namespace kope::cli {

inline constexpr std::string_view kEpisodeJobKind = "episode";

struct EpisodeJob {
  std::string task;   // task folder or KernelBench problem file
  std::string label;  // the run's label
  // Budgets, stop rules, proposer, language and sandbox; its store, backend and workers are the
  // worker's own, and json/quiet do not apply.
  EpisodeFlags flags;
};

std::string EpisodeJobToJson(const EpisodeJob& job);
// InvalidArgument naming what is missing or of the wrong type.
Result<EpisodeJob> EpisodeJobFromJson(std::string_view json);

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_EPISODE_JOB_H_
