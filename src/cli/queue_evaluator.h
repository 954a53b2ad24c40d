// `--workers URL` for episodes: each candidate evaluated by a `kope worker` process through the
// shared store's queue (an eval job that records nothing: the episode records its outcome), and
// the format of an eval job's result that carries the outcome back (the outcome's JSON record
// with the graph's view of it under "recorded"). Internal to the kope command.
#ifndef KOPE_SRC_CLI_QUEUE_EVALUATOR_H_
#define KOPE_SRC_CLI_QUEUE_EVALUATOR_H_

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

#include "kope/agent/candidate_evaluator.h"
#include "kope/eval/outcome.h"
#include "kope/queue/job_queue.h"

namespace kope::cli {

// An eval job's result: OutcomeToJson(outcome) with "recorded", the node the graph records
// (record::OutcomeNodeFor: stage, verdict, flagged, speedup, time, roofline, error message).
std::string EvalJobResult(const Outcome& outcome);
// The node an eval job's result records; its evidence is the outcome's JSON record as the
// worker wrote it. InvalidArgument for a result that is not one.
Result<memory::OutcomeNode> OutcomeNodeOfEvalJobResult(std::string_view result_json);

class QueueEvaluator final : public agent::CandidateEvaluator {
 public:
  // `jobs` (not owned, thread-safe) holds the queue; jobs go in `batch`; `device` is the run's
  // hardware (an outcome a worker measured elsewhere is refused); `cancel` (may be null) stops
  // the wait, leaving the job queued.
  QueueEvaluator(queue::JobQueue& jobs, std::string batch, std::string device,
                 const std::atomic<bool>* cancel)
      : jobs_(jobs), batch_(std::move(batch)), device_(std::move(device)), cancel_(cancel) {}

  Result<memory::OutcomeNode> Evaluate(const Task& task, std::string_view source,
                                       std::string_view name, const EvalOptions& options) override;

 private:
  Result<queue::JobRecord> WaitFor(int64_t id, const EvalOptions& options);

  queue::JobQueue& jobs_;
  const std::string batch_;
  const std::string device_;
  const std::atomic<bool>* cancel_;
};

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_QUEUE_EVALUATOR_H_
