#include "kope/queue/worker.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
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

// Runs one claimed job to its end state.
Result<JobState> RunJob(JobQueue& queue, const JobRunner& run, const ClaimedJob& job,
                        const WorkerOptions& options, WorkerReport& report) {
  Result<std::string> result = [&] {
    Heartbeat heartbeat(queue, job.id, options.name, options.lease_seconds);
    return run(job);
  }();
  Result<bool> held = result.ok() ? queue.Complete(job.id, options.name, *result)
                                  : queue.Fail(job.id, options.name, result.status().message());
  KOPE_RETURN_IF_ERROR(held.status());
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
    KOPE_ASSIGN_OR_RETURN(std::optional<ClaimedJob> job,
                          queue.Claim(options.name, options.lease_seconds, options.kinds));
    if (!job.has_value()) {
      const double idle = std::chrono::duration<double>(Clock::now() - last_job).count();
      if (options.idle_exit_seconds > 0 && idle >= options.idle_exit_seconds) {
        report.stop_reason = "idle";
        return report;
      }
      // Sleep in small steps, so that a stop request is seen quickly.
      const auto until = Clock::now() + std::chrono::duration<double>(options.poll_seconds);
      while (Clock::now() < until && !Stopping(options)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      continue;
    }
    KOPE_ASSIGN_OR_RETURN(JobState state, RunJob(queue, run, *job, options, report));
    if (options.on_job) options.on_job(*job, state);
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
