// Retry timing and the concurrency limit of the HTTP providers. Internal.
//
// Backoff is exponential with full jitter: before retry n (0-based) the wait is
// uniform in [0, min(max, initial * 2^n)], unless the server said how long to
// wait (Retry-After), which is then honoured as given. Waits and the wait for a
// concurrency slot end early when the cancel flag is raised.
#ifndef KOPE_SRC_LLM_RETRY_H_
#define KOPE_SRC_LLM_RETRY_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>

#include "kope/base/status.h"

namespace kope::llm {

using Clock = std::chrono::steady_clock;

struct BackoffPolicy {
  std::chrono::milliseconds initial{1000};
  std::chrono::milliseconds max{60000};
};

// The wait before retry `retry_index` (0 for the first retry).
std::chrono::milliseconds FullJitterBackoff(const BackoffPolicy& policy, int retry_index,
                                            std::mt19937_64& rng);

// Waits `duration`; returns false as soon as `*cancel` is raised (checked every
// few milliseconds). Tests replace it to record the waits without sleeping.
using SleepFunction = std::function<bool(std::chrono::milliseconds, const std::atomic<bool>*)>;
bool SleepUnlessCancelled(std::chrono::milliseconds duration, const std::atomic<bool>* cancel);

// A counting semaphore whose waits can be cancelled and bounded by a deadline.
// Thread-safe.
class Semaphore {
 public:
  explicit Semaphore(int slots) : free_(slots) {}

  // Takes a slot; kCancelled or kDeadlineExceeded when it cannot before those.
  Status Acquire(const std::atomic<bool>* cancel, Clock::time_point deadline);
  void Release();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int free_;
};

// Holds a slot for its lifetime.
class SemaphoreSlot {
 public:
  explicit SemaphoreSlot(Semaphore& s) : s_(s) {}
  ~SemaphoreSlot() { s_.Release(); }
  SemaphoreSlot(const SemaphoreSlot&) = delete;
  SemaphoreSlot& operator=(const SemaphoreSlot&) = delete;

 private:
  Semaphore& s_;
};

}  // namespace kope::llm

#endif  // KOPE_SRC_LLM_RETRY_H_
