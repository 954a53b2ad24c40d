// An "eval" job: evaluate one candidate on a task, as `kope eval` does, on whichever worker
// claims it. The payload carries everything the evaluator needs (the task's folder or problem
// file, as seen by the workers, the candidate's source and the evaluation options); the result
// is the outcome's JSON record (OutcomeToJson), and with `record` the worker also records the
// outcome in its experience store as `kope eval --record` would, under keys derived from the
// job's key (EvalJobKeys), so that a job run twice (its first worker died after recording)
// records the same nodes once.
#ifndef KOPE_QUEUE_EVAL_JOB_H_
#define KOPE_QUEUE_EVAL_JOB_H_

#include <string>
#include <string_view>

#include "kope/base/status.h"

namespace kope::queue {

inline constexpr std::string_view kEvalJobKind = "eval";
// A job that waits `ms` milliseconds and returns {"ms": ms}: for testing the queue and
// measuring its overhead.
inline constexpr std::string_view kNoopJobKind = "noop";

struct EvalJob {
  std::string task;              // task folder or KernelBench problem file
  std::string candidate_name;    // e.g. "optimized.cc"
  std::string candidate_source;  // the full source
  int trials = 5;
  double timeout_seconds = 10;
  bool confirm = false;
  bool no_bubblewrap = false;
  bool record = true;
  std::string decision;  // with record: what the candidate changes ("" : "evaluated by a worker")
  // A KernelBench problem travels as its text (file name and source), imported by the worker
  // into its own cache: no shared file system needed. Then `task` is for messages only.
  std::string problem_name;
  std::string problem_source;
};

std::string EvalJobToJson(const EvalJob& job);
// InvalidArgument naming what is missing or of the wrong type.
Result<EvalJob> EvalJobFromJson(std::string_view json);

// The keys an eval job's recorded nodes get: its run (one per batch and task), attempt and
// outcome (one per job), each 32 hex digits.
struct EvalJobKeys {
  std::string run, attempt, outcome;
};
EvalJobKeys KeysForEvalJob(std::string_view job_key, std::string_view batch, std::string_view task);

}  // namespace kope::queue

#endif  // KOPE_QUEUE_EVAL_JOB_H_
