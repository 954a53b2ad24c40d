#include "kope/base/worker_thread.h"

#include <utility>

namespace kope {

WorkerThread::WorkerThread() : thread_([this] { Run(); }) {}

WorkerThread::~WorkerThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void WorkerThread::Post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  changed_.notify_all();
}

void WorkerThread::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return jobs_.empty() && !running_job_; });
}

void WorkerThread::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and every queued job has run
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    running_job_ = true;
    lock.unlock();
    job();
    lock.lock();
    running_job_ = false;
    changed_.notify_all();
  }
}

}  // namespace kope
