#include "retry.h"

#include <algorithm>
#include <thread>

namespace kope::llm {
namespace {

constexpr std::chrono::milliseconds kPollInterval{10};

bool Cancelled(const std::atomic<bool>* cancel) { return cancel != nullptr && cancel->load(); }

}  // namespace

std::chrono::milliseconds FullJitterBackoff(const BackoffPolicy& policy, int retry_index,
                                            std::mt19937_64& rng) {
  int64_t cap = std::max<int64_t>(0, policy.initial.count());
  for (int i = 0; i < retry_index && cap < policy.max.count(); ++i) cap *= 2;
  cap = std::min<int64_t>(cap, policy.max.count());
  if (cap <= 0) return std::chrono::milliseconds(0);
  std::uniform_int_distribution<int64_t> uniform(0, cap);
  return std::chrono::milliseconds(uniform(rng));
}

bool SleepUnlessCancelled(std::chrono::milliseconds duration, const std::atomic<bool>* cancel) {
  Clock::time_point end = Clock::now() + duration;
  while (true) {
    if (Cancelled(cancel)) return false;
    Clock::time_point now = Clock::now();
    if (now >= end) return true;
    std::this_thread::sleep_for(std::min<Clock::duration>(
        end - now, std::chrono::duration_cast<Clock::duration>(kPollInterval)));
  }
}

Status Semaphore::Acquire(const std::atomic<bool>* cancel, Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  while (free_ <= 0) {
    if (Cancelled(cancel)) return Status::Cancelled("cancelled while waiting for a request slot");
    Clock::time_point now = Clock::now();
    if (now >= deadline) {
      return Status::DeadlineExceeded("the timeout passed while waiting for a request slot");
    }
    Clock::time_point wake = std::min(deadline, now + kPollInterval);
    cv_.wait_until(lock, wake);
  }
  --free_;
  return Status::Ok();
}

void Semaphore::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++free_;
  }
  cv_.notify_one();
}

}  // namespace kope::llm
