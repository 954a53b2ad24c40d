// WorkerThread: jobs run in order on one long-lived thread; Wait and the destructor wait for them.
#include "kope/base/worker_thread.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>
#include <vector>

namespace kope {
namespace {

TEST(WorkerThreadTest, JobsRunInPostingOrderOnOneThreadThatIsNotTheCallers) {
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  WorkerThread worker;
  for (int i = 0; i < 20; ++i) {
    worker.Post([&, i] {
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
    });
  }
  worker.Wait();
  ASSERT_EQ(order.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  for (const auto& id : threads) {
    EXPECT_EQ(id, threads.front());
    EXPECT_NE(id, std::this_thread::get_id());
  }
}

TEST(WorkerThreadTest, WaitReturnsOnlyAfterARunningJobHasFinished) {
  std::atomic<bool> done{false};
  WorkerThread worker;
  worker.Post([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    done = true;
  });
  worker.Wait();
  EXPECT_TRUE(done);
  worker.Wait();  // nothing queued: returns at once
}

TEST(WorkerThreadTest, TheDestructorRunsEveryQueuedJob) {
  std::atomic<int> ran{0};
  {
    WorkerThread worker;
    for (int i = 0; i < 5; ++i) {
      worker.Post([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        ++ran;
      });
    }
  }
  EXPECT_EQ(ran, 5);
}

// The reason the class exists: a child that asks to die with its parent lives on after the job
// that started it returns, while the worker lives.
TEST(WorkerThreadTest, AChildStartedInAJobOutlivesTheJob) {
  pid_t child = -1;
  {
    WorkerThread worker;
    worker.Post([&] {
      child = fork();
      if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pause();
        _exit(0);
      }
    });
    worker.Wait();
    ASSERT_GT(child, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(kill(child, 0), 0);  // still alive: its parent thread is
    kill(child, SIGKILL);
  }
  int status = 0;
  waitpid(child, &status, 0);
}

}  // namespace
}  // namespace kope
