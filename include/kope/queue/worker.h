// RunWorker: the loop of a `kope worker`: claim a job, run it, complete it, until told to stop
// or idle for a while.
//
// While a job runs, a heartbeat thread renews its lease every third of the lease, so that only
// a worker that died or hung loses its job to another. A stop request (`stop` set, e.g. by
// SIGTERM) is honoured between jobs: the job in flight runs to its end and is completed first.
// A runner's error Status fails the job with that message (a bad payload, a task that does not
// load); what a job finds (a kernel that does not compile) is its result, not an error. When the
// worker loses a job's lease before completing it (it hung past the lease), the result is
// dropped: the job belongs to the worker that took it over. Errors of the queue itself (the
// database is unreachable) end the loop with that status.
#ifndef KOPE_QUEUE_WORKER_H_
#define KOPE_QUEUE_WORKER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kope/base/status.h"
#include "kope/queue/job_queue.h"

namespace kope::queue {

// Runs one job and returns its result (a JSON document).
using JobRunner = std::function<Result<std::string>(const ClaimedJob& job)>;

struct WorkerOptions {
  std::string name;  // the worker's name in the queue: host, pid, GPU
  double lease_seconds = 30;
  double poll_seconds = 0.05;      // wait between empty claims (one indexed query each)
  double idle_exit_seconds = 0;    // 0: never; else stop after this long without a job
  int max_jobs = 0;                // 0: no limit
  std::vector<std::string> kinds;  // the kinds this worker runs; empty: all
  const std::atomic<bool>* stop = nullptr;
  // A database that cannot be reached (restarting, a network cut) is waited for this long,
  // retrying with a growing pause (0.5 s to 5 s), before the worker gives up with its error.
  double reconnect_seconds = 300;
  // Called when the database becomes unreachable (with why) and reachable again (with "").
  std::function<void(std::string_view why)> on_outage;
  // Called after each job with its id, kind and the state it ended in.
  std::function<void(const ClaimedJob& job, JobState state)> on_job;
};

struct WorkerReport {
  int64_t done = 0;
  int64_t failed = 0;
  int64_t lost = 0;         // leases lost before completion, or jobs left to their lease's end
  int64_t outages = 0;      // times the database could not be reached
  std::string stop_reason;  // "stopped", "idle", "max-jobs"
};

// Thread-safe as far as `queue` is; `run` is called from the calling thread.
Result<WorkerReport> RunWorker(JobQueue& queue, const JobRunner& run, const WorkerOptions& options);

// "<host>:<pid>" or "<host>:<pid>:gpu<N>" when gpu >= 0.
std::string DefaultWorkerName(int gpu);

}  // namespace kope::queue

#endif  // KOPE_QUEUE_WORKER_H_
