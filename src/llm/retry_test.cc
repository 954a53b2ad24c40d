#include "retry.h"

#include <gtest/gtest.h>

#include <thread>

namespace kope::llm {
namespace {

using std::chrono::milliseconds;

TEST(BackoffTest, FullJitterStaysUnderTheGrowingCap) {
  std::mt19937_64 rng(7);
  BackoffPolicy policy{milliseconds(100), milliseconds(1000)};
  for (int retry = 0; retry < 8; ++retry) {
    milliseconds cap = std::min(milliseconds(100 << retry), milliseconds(1000));
    milliseconds largest{0};
    for (int i = 0; i < 500; ++i) {
      milliseconds wait = FullJitterBackoff(policy, retry, rng);
      ASSERT_GE(wait.count(), 0);
      ASSERT_LE(wait, cap);
      largest = std::max(largest, wait);
    }
    EXPECT_GT(largest, cap / 2) << "the waits should spread over [0, cap]";
  }
  EXPECT_EQ(FullJitterBackoff({milliseconds(0), milliseconds(0)}, 3, rng), milliseconds(0));
  EXPECT_LE(FullJitterBackoff(policy, 1000, rng), milliseconds(1000));  // no overflow
}

TEST(SemaphoreTest, BlocksBeyondItsSlotsUntilReleased) {
  Semaphore s(1);
  auto far = Clock::now() + std::chrono::hours(1);
  ASSERT_TRUE(s.Acquire(nullptr, far).ok());
  Status late = s.Acquire(nullptr, Clock::now() + milliseconds(20));
  EXPECT_EQ(late.code(), StatusCode::kDeadlineExceeded);

  std::atomic<bool> cancel{true};
  EXPECT_EQ(s.Acquire(&cancel, far).code(), StatusCode::kCancelled);

  std::thread releaser([&] { s.Release(); });
  EXPECT_TRUE(s.Acquire(nullptr, far).ok());
  releaser.join();
  s.Release();
}

TEST(SleepTest, CancelEndsTheWait) {
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(50));
    cancel = true;
  });
  EXPECT_FALSE(SleepUnlessCancelled(std::chrono::hours(1), &cancel));
  canceller.join();
  EXPECT_TRUE(SleepUnlessCancelled(milliseconds(1), nullptr));
}

}  // namespace
}  // namespace kope::llm
