// WorkerThread: one thread that runs posted jobs in order, for as long as the object lives.
//
// For work that must happen off the caller's thread but on a thread that outlives it: a child
// process started with PR_SET_PDEATHSIG (bubblewrap's --die-with-parent) is killed when the
// *thread* that started it ends, so runners started ahead of time are started here, not on a
// std::async thread. Post() queues a job and returns; Wait() returns once every job posted
// before it has finished. The destructor waits for the queued jobs, then joins. Jobs run one at
// a time, in posting order; a job must not call Post() or Wait() on its own worker, nor throw
// (an exception ends the program, as on any std::thread).
// Thread-safe.
#ifndef KOPE_BASE_WORKER_THREAD_H_
#define KOPE_BASE_WORKER_THREAD_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace kope {

class WorkerThread {
 public:
  WorkerThread();
  ~WorkerThread();
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  void Post(std::function<void()> job);
  void Wait();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> jobs_;
  bool running_job_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after the fields above exist
};

}  // namespace kope

#endif  // KOPE_BASE_WORKER_THREAD_H_
