// JobQueue: the work queue in the shared PostgreSQL store's database.
//
// A job is a kind ("eval", "noop") and a JSON payload, in a batch (the label that the process
// that enqueued it collects by). Workers claim jobs with FOR UPDATE SKIP LOCKED (so that no two
// claim the same job and none waits for another), holding a lease that they renew by heartbeat.
// A job whose lease expires (its worker died or hung) is claimed again by the next worker that
// asks; after `max_claims` claims it fails instead (a job that kills every worker that runs it).
// Completing a job writes its result in the same statement, hence the same transaction, that
// marks it done, and only while the completing worker still holds the lease: a result is stored
// once, and a worker that lost its lease learns so (false) and stores nothing. A job's key (32
// hex digits, fixed at enqueue) names it everywhere, so that what a job records elsewhere (the
// experience graph) can be made idempotent: a job run twice records the same nodes.
//
// The table (kope_jobs) lives in the connection's current schema beside the store's tables and
// is created when missing. Time is the server's clock, so workers need no synchronized clocks.
// The queue's commits are asynchronous (synchronous_commit off): after a crash of the database
// server, the jobs claimed or completed in its last moments run again; nothing is lost, and
// what jobs record in the experience graph (synchronous commits) is recorded once.
// Thread-safe: calls on one JobQueue are serialized (one connection).
#ifndef KOPE_QUEUE_JOB_QUEUE_H_
#define KOPE_QUEUE_JOB_QUEUE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"

namespace kope::queue {

struct JobSpec {
  std::string kind;
  std::string payload_json = "{}";
  std::string batch;
};

struct ClaimedJob {
  int64_t id = 0;
  std::string key;
  std::string kind;
  std::string payload_json;
  std::string batch;
  int claims = 0;  // 1 the first time; more when an expired lease was taken over
};

enum class JobState { kQueued, kRunning, kDone, kFailed };
std::string_view JobStateName(JobState state);  // "queued", "running", "done", "failed"

struct JobRecord {
  int64_t id = 0;
  std::string key;
  std::string kind;
  std::string batch;
  JobState state = JobState::kQueued;
  std::string worker;  // the last worker that claimed it
  int claims = 0;
  std::optional<std::string> result_json;  // done: the result
  std::string error;                       // failed: why
};

// Jobs of a batch by state, and by worker (running and done ones).
struct BatchProgress {
  int64_t queued = 0, running = 0, done = 0, failed = 0;
  struct PerWorker {
    int64_t running = 0, done = 0, failed = 0;
  };
  std::map<std::string, PerWorker> workers;
  int64_t total() const { return queued + running + done + failed; }
  bool finished() const { return queued == 0 && running == 0; }
};

struct QueueOptions {
  int max_claims = 3;
};

class JobQueue {
 public:
  virtual ~JobQueue() = default;

  // Adds jobs in one transaction, and returns their ids in order.
  virtual Result<std::vector<int64_t>> Enqueue(const std::vector<JobSpec>& jobs) = 0;
  // The oldest claimable job (queued, or running with an expired lease), now leased to `worker`
  // for `lease_seconds`; nullopt when there is none. `kinds` empty: any kind.
  virtual Result<std::optional<ClaimedJob>> Claim(std::string_view worker, double lease_seconds,
                                                  const std::vector<std::string>& kinds = {}) = 0;
  // Extends the lease; false when `worker` no longer holds it.
  virtual Result<bool> Heartbeat(int64_t job, std::string_view worker, double lease_seconds) = 0;
  // Marks the job done with its result; false (and nothing written) when `worker` no longer
  // holds the lease.
  virtual Result<bool> Complete(int64_t job, std::string_view worker,
                                std::string_view result_json) = 0;
  // Marks the job failed with a message (a job that cannot run: a bad payload, a missing task).
  virtual Result<bool> Fail(int64_t job, std::string_view worker, std::string_view error) = 0;

  virtual Result<BatchProgress> Progress(std::string_view batch) = 0;
  // Every job of a batch, by id.
  virtual Result<std::vector<JobRecord>> Jobs(std::string_view batch) = 0;
  // One job; NotFound when the queue has no job of that id.
  virtual Result<JobRecord> Job(int64_t id) = 0;
};

// Connects to the database at `url` (a libpq URL, as for the store) and creates the table when
// missing.
Result<std::unique_ptr<JobQueue>> OpenJobQueue(std::string_view url,
                                               const QueueOptions& options = {});

}  // namespace kope::queue

#endif  // KOPE_QUEUE_JOB_QUEUE_H_
