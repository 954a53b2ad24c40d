#include "kope/queue/worker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace kope::queue {
namespace {

using Clock = std::chrono::steady_clock;

// Renews a job's lease every third of the lease until destroyed.
class Heartbeat {
 public:
  Heartbeat(JobQueue& queue, int64_t job, const std::string& worker, double lease_seconds)
      : thread_([this, &queue, job, worker, lease_seconds] {
          const auto period = std::chrono::duration<double>(lease_seconds / 3);
          std::unique_lock lock(mu_);
          while (!cv_.wait_for(lock, period, [this] { return done_; })) {
            lock.unlock();
            (void)queue.Heartbeat(job, worker, lease_seconds);  // a miss: the next one retries
            lock.lock();
          }
        }) {}
  ~Heartbeat() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

bool Stopping(const WorkerOptions& options) {
  return options.stop != nullptr && options.stop->load();
}

// Sleeps in small steps, so that a stop request is seen quickly.
void Pause(double seconds, const WorkerOptions& options) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until && !Stopping(options)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The database unreachable since `start_`: each Wait pauses a little longer (0.5 s to 5 s),
// and fails with the last error once the outage has lasted options.reconnect_seconds.
class Outage {
 public:
  explicit Outage(const WorkerOptions& options) : options_(options) {}

  Status Wait(const Status& error, WorkerReport& report) {
    if (!start_) {
      start_ = Clock::now();
      pause_ = 0.5;
      ++report.outages;
      if (options_.on_outage) options_.on_outage(error.message());
    }
    if (std::chrono::duration<double>(Clock::now() - *start_).count() >=
        options_.reconnect_seconds) {
      return error.WithContext("the database stayed unreachable for " +
                               std::to_string(static_cast<int>(options_.reconnect_seconds)) + " s");
    }
    Pause(pause_, options_);
    pause_ = std::min(pause_ * 2, 5.0);
    return Status::Ok();
  }

  void Over() {
    if (start_ && options_.on_outage) options_.on_outage("");
    start_.reset();
  }

 private:
  const WorkerOptions& options_;
  std::optional<Clock::time_point> start_;
  double pause_ = 0.5;
};

bool Unreachable(const Status& status) { return status.code() == StatusCode::kUnavailable; }

// Runs one claimed job to its end state. A job its runner gave up because the worker was
// stopped (Cancelled) is left to its lease's end, so that another claim runs it again; a
// result that cannot be stored yet is stored once the database is back, while the lease is
// still this worker's, unless the worker is stopped first (the job then runs again elsewhere).
Result<JobState> RunJob(JobQueue& queue, const JobRunner& run, const ClaimedJob& job,
                        const WorkerOptions& options, Outage& outage, WorkerReport& report) {
  Result<std::string> result = [&] {
    Heartbeat heartbeat(queue, job.id, options.name, options.lease_seconds);
    return run(job);
  }();
  if (!result.ok() && result.status().code() == StatusCode::kCancelled) {
    ++report.lost;
    return JobState::kRunning;
  }
  Result<bool> held = false;
  while (true) {
    held = result.ok() ? queue.Complete(job.id, options.name, *result)
                       : queue.Fail(job.id, options.name, result.status().message());
    if (held.ok() || !Unreachable(held.status())) break;
    if (Stopping(options)) {
      ++report.lost;
      return JobState::kRunning;
    }
    KOPE_RETURN_IF_ERROR(outage.Wait(held.status(), report));
  }
  KOPE_RETURN_IF_ERROR(held.status());
  outage.Over();
  if (!*held) {
    ++report.lost;
    return JobState::kRunning;  // another worker has it now
  }
  if (result.ok()) {
    ++report.done;
    return JobState::kDone;
  }
  ++report.failed;
  return JobState::kFailed;
}

}  // namespace

Result<WorkerReport> RunWorker(JobQueue& queue, const JobRunner& run,
                               const WorkerOptions& options) {
  WorkerReport report;
  Outage outage(options);
  auto last_job = Clock::now();
  while (true) {
    if (Stopping(options)) {
      report.stop_reason = "stopped";
      return report;
    }
    if (options.max_jobs > 0 && report.done + report.failed + report.lost >= options.max_jobs) {
      report.stop_reason = "max-jobs";
      return report;
    }
    Result<std::optional<ClaimedJob>> job =
        queue.Claim(options.name, options.lease_seconds, options.kinds);
    if (!job.ok()) {
      if (!Unreachable(job.status())) return job.status();
      KOPE_RETURN_IF_ERROR(outage.Wait(job.status(), report));
      continue;
    }
    outage.Over();
    if (!job->has_value()) {
      const double idle = std::chrono::duration<double>(Clock::now() - last_job).count();
      if (options.idle_exit_seconds > 0 && idle >= options.idle_exit_seconds) {
        report.stop_reason = "idle";
        return report;
      }
      Pause(options.poll_seconds, options);
      continue;
    }
    KOPE_ASSIGN_OR_RETURN(JobState state, RunJob(queue, run, **job, options, outage, report));
    if (options.on_job) options.on_job(**job, state);
    last_job = Clock::now();
  }
}

std::string DefaultWorkerName(int gpu) {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::string name =
      std::string(host[0] != '\0' ? host : "worker") + ":" + std::to_string(::getpid());
  if (gpu >= 0) name += ":gpu" + std::to_string(gpu);
  return name;
}

}  // namespace kope::queue
