// What `kope optimize` and `kope bench` share: the flags that choose the proposer and set an
// episode's budgets, stop rules and sandbox, and cancelling by Ctrl-C. Internal to the kope
// command.
#ifndef KOPE_SRC_CLI_EPISODE_FLAGS_H_
#define KOPE_SRC_CLI_EPISODE_FLAGS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "kope/agent/episode.h"
#include "kope/agent/proposer_setup.h"
#include "kope/queue/job_queue.h"

namespace kope::cli {

struct EpisodeFlags {
  std::string store;
  std::string backend = "auto";
  std::string language;
  bool llm = false;  // --llm given, with or without a provider
  std::string provider;
  std::string llm_config;
  int attempts = 30;
  double time = 0;
  int64_t tokens = 0;
  int patience = 12;
  double sol = 0.9;
  bool fresh = false;
  bool no_transfer = false;
  bool no_confirm = false;
  bool passive = false;
  bool json = false;
  bool no_bubblewrap = false;
  bool quiet = false;
  std::string workers;  // --workers URL: evaluate on `kope worker` processes through its queue
};

// The proposer the flags choose; its context budget the default.
agent::ProposerChoice ProposerChoiceOf(const EpisodeFlags& flags,
                                       const std::string& store_location);

// Sets the budgets, stop rules, confirmation, candidate language and sandbox of `options`; leaves
// the rest as it is.
void ApplyEpisodeFlags(const EpisodeFlags& flags, agent::EpisodeOptions& options);

// With --workers: the queue that carries the episodes' evaluations to `kope worker` processes,
// and the evaluator that uses it for runs on `backend`'s hardware (null: --workers not given).
struct WorkerEvaluation {
  std::unique_ptr<queue::JobQueue> queue;
  std::unique_ptr<agent::CandidateEvaluator> evaluator;
};
Result<WorkerEvaluation> OpenWorkerEvaluation(const EpisodeFlags& flags, Backend& backend,
                                              std::string_view batch);

// While a guard lives, SIGINT and SIGTERM set the flag that `cancel()` returns instead of ending
// kope; a second one ends kope at once (the graph keeps everything recorded so far). The
// destructor restores the default handlers. One guard at a time, on the main thread.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // The flag episodes poll; it stays set once a signal came.
  static std::atomic<bool>* cancel();
};

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_EPISODE_FLAGS_H_
