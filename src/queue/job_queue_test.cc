// The queue's contract on a real PostgreSQL (the test cluster): claims, leases, completion.
#include "kope/queue/job_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "../memory/testing/test_stores.h"
#include "kope/queue/worker.h"

namespace kope::queue {
namespace {

using memory::testing::NewStoreLocation;
using memory::testing::StoreKind;

template <typename T>
T ValueOrDie(Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (!result.ok()) std::abort();
  return std::move(result).value();
}

class JobQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    memory::testing::TestStoreLocation where =
        NewStoreLocation(StoreKind::kPostgres, std::filesystem::temp_directory_path());
    if (where.location.empty()) GTEST_SKIP() << where.skip_reason;
    url_ = where.location;
    queue_ = ValueOrDie(OpenJobQueue(url_));
  }

  std::vector<int64_t> EnqueueNoops(int n, const std::string& batch) {
    std::vector<JobSpec> jobs(n, JobSpec{std::string(kNoop), "{}", batch});
    return ValueOrDie(queue_->Enqueue(jobs));
  }

  static constexpr std::string_view kNoop = "noop";
  std::string url_;
  std::unique_ptr<JobQueue> queue_;
};

TEST_F(JobQueueTest, ConcurrentWorkersDoEveryJobExactlyOnce) {
  constexpr int kJobs = 120, kWorkers = 4;
  EnqueueNoops(kJobs, "b");
  std::mutex mu;
  std::map<int64_t, int> runs;  // job id -> times run to completion
  auto worker = [&](int w) {
    std::unique_ptr<JobQueue> own = ValueOrDie(OpenJobQueue(url_));
    WorkerOptions options;
    options.name = "w" + std::to_string(w);
    options.idle_exit_seconds = 0.2;
    options.poll_seconds = 0.05;
    JobRunner run = [&](const ClaimedJob& job) -> Result<std::string> {
      std::lock_guard lock(mu);
      ++runs[job.id];
      return std::string("{\"by\": \"") + options.name + "\"}";
    };
    WorkerReport report = ValueOrDie(RunWorker(*own, run, options));
    EXPECT_EQ(report.stop_reason, "idle");
    EXPECT_EQ(report.lost, 0);
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) threads.emplace_back(worker, w);
  for (std::thread& t : threads) t.join();

  EXPECT_EQ(runs.size(), static_cast<size_t>(kJobs));
  for (const auto& [id, n] : runs) EXPECT_EQ(n, 1) << "job " << id;
  BatchProgress progress = ValueOrDie(queue_->Progress("b"));
  EXPECT_EQ(progress.done, kJobs);
  EXPECT_TRUE(progress.finished());
  int64_t by_workers = 0;
  for (const auto& [name, w] : progress.workers) by_workers += w.done;
  EXPECT_EQ(by_workers, kJobs);
  for (const JobRecord& r : ValueOrDie(queue_->Jobs("b"))) {
    EXPECT_EQ(r.state, JobState::kDone);
    EXPECT_EQ(r.claims, 1);
    ASSERT_TRUE(r.result_json.has_value());
    EXPECT_NE(r.result_json->find(r.worker), std::string::npos);  // written by its claimer
  }
}

TEST_F(JobQueueTest, AnExpiredLeaseIsTakenOverAndTheFirstWorkerCannotComplete) {
  const int64_t id = EnqueueNoops(1, "lease").front();
  ClaimedJob first = *ValueOrDie(queue_->Claim("a", 0.2));
  EXPECT_EQ(first.id, id);
  EXPECT_EQ(first.claims, 1);
  EXPECT_FALSE(ValueOrDie(queue_->Claim("b", 0.2)).has_value());  // leased to a
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  ClaimedJob second = *ValueOrDie(queue_->Claim("b", 30));
  EXPECT_EQ(second.id, id);
  EXPECT_EQ(second.key, first.key);
  EXPECT_EQ(second.claims, 2);
  EXPECT_FALSE(ValueOrDie(queue_->Heartbeat(id, "a", 30)));
  EXPECT_FALSE(ValueOrDie(queue_->Complete(id, "a", "{\"by\": \"a\"}")));
  EXPECT_TRUE(ValueOrDie(queue_->Heartbeat(id, "b", 30)));
  EXPECT_TRUE(ValueOrDie(queue_->Complete(id, "b", "{\"by\": \"b\"}")));
  EXPECT_FALSE(ValueOrDie(queue_->Complete(id, "b", "{\"again\": 1}")));  // once
  std::vector<JobRecord> jobs = ValueOrDie(queue_->Jobs("lease"));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].state, JobState::kDone);
  EXPECT_EQ(jobs[0].worker, "b");
  EXPECT_EQ(jobs[0].result_json.value_or(""), "{\"by\": \"b\"}");
}

TEST_F(JobQueueTest, AJobWhoseWorkersKeepDyingFails) {
  queue_ = ValueOrDie(OpenJobQueue(url_, QueueOptions{2}));
  EnqueueNoops(1, "poison");
  ASSERT_TRUE(ValueOrDie(queue_->Claim("a", 0.05)).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  ASSERT_TRUE(ValueOrDie(queue_->Claim("b", 0.05)).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(ValueOrDie(queue_->Claim("c", 0.05)).has_value());
  std::vector<JobRecord> jobs = ValueOrDie(queue_->Jobs("poison"));
  EXPECT_EQ(jobs[0].state, JobState::kFailed);
  EXPECT_NE(jobs[0].error.find("expired 2 times"), std::string::npos) << jobs[0].error;
}

TEST_F(JobQueueTest, KindsFilterClaimsAndErrorsFailTheJob) {
  ValueOrDie(queue_->Enqueue({{"eval", "{}", "k"}, {"noop", "{}", "k"}}));
  ClaimedJob noop = *ValueOrDie(queue_->Claim("w", 30, {"noop"}));
  EXPECT_EQ(noop.kind, "noop");
  EXPECT_FALSE(ValueOrDie(queue_->Claim("w", 30, {"noop"})).has_value());
  WorkerOptions options;
  options.name = "w2";
  options.max_jobs = 1;
  JobRunner failing = [](const ClaimedJob&) -> Result<std::string> {
    return Status::InvalidArgument("no such task");
  };
  WorkerReport report = ValueOrDie(RunWorker(*queue_, failing, options));
  EXPECT_EQ(report.failed, 1);
  BatchProgress progress = ValueOrDie(queue_->Progress("k"));
  EXPECT_EQ(progress.failed, 1);
  EXPECT_EQ(progress.running, 1);
  EXPECT_EQ(progress.workers["w2"].failed, 1);
  EXPECT_EQ(ValueOrDie(queue_->Jobs("k"))[0].error, "no such task");
}

}  // namespace
}  // namespace kope::queue
