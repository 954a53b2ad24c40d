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

// Starts a child that asks to be killed with its parent thread (as bubblewrap's
// --die-with-parent does) and returns once it has asked; the child then waits for a signal.
pid_t StartChildOfThisThread() {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(2);
    pause();
    _exit(0);
  }
  char byte = 0;
  if (child > 0 && read(ready[0], &byte, 1) != 1) child = -1;
  close(ready[0]);
  close(ready[1]);
  return child;
}

// The premise: a child that asked to die with its parent dies when the thread that started it
// ends, though the process lives on.
TEST(WorkerThreadTest, AChildDiesWithAShortLivedThreadThatStartedIt) {
  pid_t child = -1;
  std::thread([&] { child = StartChildOfThisThread(); }).join();
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

// Why the class exists: the same child, started in a job, outlives the job while the worker lives.
TEST(WorkerThreadTest, AChildStartedInAJobOutlivesTheJob) {
  pid_t child = -1;
  {
    WorkerThread worker;
    worker.Post([&] { child = StartChildOfThisThread(); });
    worker.Wait();
    ASSERT_GT(child, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int status = 0;
    EXPECT_EQ(waitpid(child, &status, WNOHANG), 0);  // still running (a zombie would be reaped)
    kill(child, SIGKILL);
  }
  int status = 0;
  waitpid(child, &status, 0);
}

}  // namespace
}  // namespace kope
