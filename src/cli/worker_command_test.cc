// `kope worker` processes against one database: every job done exactly once, also when a worker
// is killed (SIGKILL) in the middle of a job; `kope bench --workers` collects the verdicts, and an
// eval job is recorded once even when run twice; `kope optimize --workers` evaluates on them.
// KOPE_QUEUE_STRESS sets how many kill rounds to run (default 2; bench/queue/stress runs more).
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "../memory/testing/test_stores.h"
#include "../testing/test_paths.h"
#include "kope/base/file.h"
#include "kope/base/subprocess.h"
#include "kope/memory/store_location.h"
#include "kope/queue/eval_job.h"
#include "kope/queue/job_queue.h"

namespace kope {
namespace {

namespace fs = std::filesystem;
using queue::JobRecord;
using queue::JobState;

template <typename T>
T ValueOrDie(Result<T> result) {
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (!result.ok()) std::abort();
  return std::move(result).value();
}

class WorkerCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    memory::testing::TestStoreLocation where =
        memory::testing::NewStoreLocation(memory::testing::StoreKind::kPostgres, fs::path("/"));
    if (where.location.empty()) GTEST_SKIP() << where.skip_reason;
    url_ = where.location;
    queue_ = ValueOrDie(queue::OpenJobQueue(url_));
  }

  // Starts `kope worker` on the test's store; returns its pid.
  int StartWorker(const std::string& name, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {(fs::path(testing::BinaryDir()) / "kope").string(),
                                     "worker",
                                     "--store",
                                     url_,
                                     "--name",
                                     name,
                                     "-q"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    SpawnOptions options;
    options.env = {"HOME=/tmp", "PATH=/usr/bin:/bin", "PGAPPNAME=kope-test-worker",
                   "KOPE_CACHE_DIR=" + (fs::path(testing::BinaryDir()) / "test-cache").string()};
    return ValueOrDie(SpawnProcess(argv, options));
  }

  static int Wait(int pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::vector<JobRecord> Jobs(const std::string& batch) { return ValueOrDie(queue_->Jobs(batch)); }

  // Runs `sql` on a connection of its own; the integers of its first row (none for a command).
  std::vector<int64_t> Sql(const std::string& sql) {
    PGconn* conn = PQconnectdb(url_.c_str());
    PGresult* r = PQexec(conn, sql.c_str());
    std::vector<int64_t> row;
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
      ADD_FAILURE() << sql << ": " << PQerrorMessage(conn);
    } else if (PQntuples(r) > 0) {
      for (int c = 0; c < PQnfields(r); ++c) row.push_back(std::atoll(PQgetvalue(r, 0, c)));
    }
    PQclear(r);
    PQfinish(conn);
    return row;
  }

  // Waits up to 30 s for `n` jobs of `batch` to be done; false if they were not.
  bool AwaitDone(const std::string& batch, int n) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      int done = 0;
      for (const JobRecord& j : Jobs(batch)) done += j.state == JobState::kDone;
      if (done >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::string url_;
  std::unique_ptr<queue::JobQueue> queue_;
};

std::vector<queue::JobSpec> Noops(int n, int ms, const std::string& batch) {
  return std::vector<queue::JobSpec>(n, {"noop", nlohmann::json({{"ms", ms}}).dump(), batch});
}

TEST_F(WorkerCommandTest, SeveralWorkersDoEveryJobExactlyOnce) {
  constexpr int kJobs = 40;
  ValueOrDie(queue_->Enqueue(Noops(kJobs, 10, "many")));
  std::vector<int> pids;
  for (int w = 0; w < 4; ++w) {
    pids.push_back(StartWorker("w" + std::to_string(w), {"--idle-exit", "0.5"}));
  }
  for (int pid : pids) EXPECT_EQ(Wait(pid), 0);
  std::vector<JobRecord> jobs = Jobs("many");
  ASSERT_EQ(jobs.size(), static_cast<size_t>(kJobs));
  for (const JobRecord& j : jobs) {
    EXPECT_EQ(j.state, JobState::kDone) << j.id;
    EXPECT_EQ(j.claims, 1) << j.id;
    EXPECT_EQ(j.result_json.value_or(""), "{\"ms\":10}");
  }
}

TEST_F(WorkerCommandTest, AKilledWorkersJobIsRequeuedAndCompletedOnce) {
  const char* stress = std::getenv("KOPE_QUEUE_STRESS");
  const int rounds = stress != nullptr ? std::max(1, std::atoi(stress)) : 2;
  for (int round = 0; round < rounds; ++round) {
    const std::string batch = "kill" + std::to_string(round);
    // The first job takes long enough to be killed in; the others are quick.
    std::vector<queue::JobSpec> specs = Noops(1, 5000, batch);
    for (const queue::JobSpec& s : Noops(5, 1, batch)) specs.push_back(s);
    ValueOrDie(queue_->Enqueue(specs));
    const int victim = StartWorker("victim", {"--lease", "0.5", "--max-jobs", "1"});
    // Kill it once it holds the long job.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (Jobs(batch)[0].state != JobState::kRunning) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the victim never claimed a job";
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(victim, SIGKILL);
    Wait(victim);
    // The long job becomes a quick one for its second claim, so that the round stays short.
    Sql("UPDATE kope_jobs SET payload = '{\"ms\": 1}' WHERE batch = '" + batch + "'");
    const int rescuer = StartWorker("rescuer", {"--lease", "0.5", "--idle-exit", "1"});
    EXPECT_EQ(Wait(rescuer), 0);
    std::vector<JobRecord> jobs = Jobs(batch);
    ASSERT_EQ(jobs.size(), 6u);
    EXPECT_EQ(jobs[0].state, JobState::kDone);
    EXPECT_EQ(jobs[0].claims, 2) << "round " << round;
    EXPECT_EQ(jobs[0].worker, "rescuer");
    for (const JobRecord& j : jobs) {
      EXPECT_EQ(j.state, JobState::kDone) << "round " << round << " job " << j.id;
      EXPECT_TRUE(j.result_json.has_value());
      if (j.id != jobs[0].id) {
        EXPECT_EQ(j.claims, 1);
      }
    }
  }
}

// An eval job of a KernelBench problem carries the problem's text: the worker imports it into
// its own cache, and evaluates a ModelNew on it, with no path to the problem (no shared file
// system). Skips where the Python bridge (torch) is missing.
TEST_F(WorkerCommandTest, AProblemTravelsInItsEvalJob) {
  const fs::path data = fs::path(testing::SourceDir()) / "src" / "torch_bridge" / "testdata";
  queue::EvalJob job;
  job.task = "/nowhere/scaled_relu.py";
  job.problem_name = "scaled_relu.py";
  job.problem_source = ValueOrDie(ReadFileText(data / "problems" / "scaled_relu.py"));
  job.candidate_name = "candidate.py";
  job.candidate_source = ValueOrDie(ReadFileText(data / "candidates" / "scaled_relu_new.py"));
  job.no_bubblewrap = true;
  job.record = false;
  ValueOrDie(queue_->Enqueue({{"eval", queue::EvalJobToJson(job), "problem"}}));
  EXPECT_EQ(Wait(StartWorker("p", {"--backend", "cpu", "--max-jobs", "1"})), 0);
  const JobRecord done = Jobs("problem").at(0);
  if (done.error.find("no Python for the PyTorch bridge") != std::string::npos ||
      done.error.find("cannot import PyTorch") != std::string::npos) {
    GTEST_SKIP() << done.error;
  }
  ASSERT_EQ(done.state, JobState::kDone) << done.error;
  const nlohmann::json outcome = nlohmann::json::parse(done.result_json.value_or("{}"));
  EXPECT_EQ(outcome.value("verdict", ""), "valid") << outcome.dump();
  EXPECT_EQ(outcome.value("task", ""), "kb_scaled_relu");
}

// The Kubernetes recipe's container (deploy/kubernetes/kope-workers.yaml): its command and
// arguments, with the store's URL in KOPE_STORE as the manifest's Secret gives it, drain a queue,
// and SIGTERM (a pod's deletion) stops the worker cleanly. Kubernetes itself does not run here.
TEST_F(WorkerCommandTest, TheKubernetesContainersCommandDrainsAQueue) {
  const std::string manifest = ValueOrDie(
      ReadFileText(fs::path(testing::SourceDir()) / "deploy" / "kubernetes" / "kope-workers.yaml"));
  // `command: [...]` and `args: [...]` are flow lists: JSON arrays.
  auto list = [&](const std::string& key) {
    const size_t at = manifest.find(key + ": [");
    EXPECT_NE(at, std::string::npos) << key;
    const size_t open = manifest.find('[', at);
    return nlohmann::json::parse(manifest.substr(open, manifest.find(']', open) - open + 1));
  };
  const nlohmann::json command = list("command"), args = list("args");
  ASSERT_EQ(command, nlohmann::json({"kope", "worker"}));
  EXPECT_NE(manifest.find("name: KOPE_STORE"), std::string::npos);
  std::vector<std::string> argv = {(fs::path(testing::BinaryDir()) / "kope").string(), "worker"};
  for (const nlohmann::json& a : args) argv.push_back(a.get<std::string>());
  ValueOrDie(queue_->Enqueue(Noops(5, 10, "k8s")));
  SpawnOptions options;
  options.env = {"HOME=/tmp", "PATH=/usr/bin:/bin", "KOPE_STORE=" + url_,
                 "KOPE_CACHE_DIR=" + (fs::path(testing::BinaryDir()) / "test-cache").string()};
  const int worker = ValueOrDie(SpawnProcess(argv, options));
  ASSERT_TRUE(AwaitDone("k8s", 5)) << "the container's worker did not do the jobs";
  ::kill(worker, SIGTERM);
  EXPECT_EQ(Wait(worker), 0);
}

// The database drops every connection of the worker (as a server restart would) in the middle
// of its work: the worker reconnects and every job is still done, each once.
TEST_F(WorkerCommandTest, AWorkerReconnectsWhenItsConnectionsAreDropped) {
  constexpr int kJobs = 30;
  ValueOrDie(queue_->Enqueue(Noops(kJobs, 30, "dropped")));
  const int worker = StartWorker("rc", {"--idle-exit", "1.5", "--lease", "2", "--reconnect", "10"});
  ASSERT_TRUE(AwaitDone("dropped", 5)) << "the worker did no job";
  const std::vector<int64_t> terminated =
      Sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
          "current_database() AND application_name = 'kope-test-worker'");
  ASSERT_EQ(terminated.size(), 1u);
  EXPECT_GE(terminated[0], 2);  // the worker's queue and store connections
  EXPECT_EQ(Wait(worker), 0);
  std::vector<JobRecord> jobs = Jobs("dropped");
  ASSERT_EQ(jobs.size(), static_cast<size_t>(kJobs));
  for (const JobRecord& j : jobs) {
    EXPECT_EQ(j.state, JobState::kDone) << j.id;
    EXPECT_EQ(j.result_json.value_or(""), "{\"ms\":30}");
  }
}

TEST_F(WorkerCommandTest, BenchOnWorkersCollectsVerdictsRecordedOnceEvenWhenRunTwice) {
  // A suite of one task, evaluated by a worker for `kope bench --workers`.
  const fs::path suite = fs::temp_directory_path() / ("kope-suite-" + std::to_string(::getpid()));
  fs::create_directories(suite);
  fs::create_directory_symlink(fs::path(testing::SourceDir()) / "examples" / "softmax_rows",
                               suite / "softmax_rows");
  const int worker = StartWorker("e", {"--backend", "cpu", "--max-jobs", "1"});
  ProcessOptions options;
  options.timeout_seconds = 300;
  Result<ProcessResult> bench =
      RunProcess({(fs::path(testing::BinaryDir()) / "kope").string(), "bench", suite.string(),
                  "--workers", url_, "--candidate", "optimized.cc", "--no-bwrap"},
                 options);
  fs::remove_all(suite);
  ASSERT_TRUE(bench.ok()) << bench.status().ToString();
  EXPECT_EQ(bench->exit_code, 0) << bench->output;
  EXPECT_NE(bench->output.find("softmax_rows"), std::string::npos) << bench->output;
  EXPECT_NE(bench->output.find("valid"), std::string::npos) << bench->output;
  EXPECT_NE(bench->output.find("e: 1 done"), std::string::npos) << bench->output;
  EXPECT_EQ(Wait(worker), 0);

  // As if its first worker died after recording: the job runs again, and records nothing new.
  Sql("UPDATE kope_jobs SET state = 'queued'");
  EXPECT_EQ(Wait(StartWorker("e", {"--backend", "cpu", "--max-jobs", "1"})), 0);
  std::unique_ptr<memory::GraphStore> store = ValueOrDie(memory::OpenStore(url_));
  memory::StoreStats stats = ValueOrDie(store->Stats());
  EXPECT_EQ(stats.runs, 1);
  EXPECT_EQ(stats.attempts, 1);
  EXPECT_EQ(stats.outcomes, 1);
}

// `kope optimize --workers`: every candidate of the episode is
// evaluated by the worker (one eval job each, recording nothing in the queue's store), and the
// episode records their outcomes in its own store.
TEST_F(WorkerCommandTest, OptimizeOnWorkersEvaluatesEveryCandidateOnAWorker) {
  const fs::path dir = fs::temp_directory_path() / ("kope-optw-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string local = (dir / "graph.db").string();
  // Idle long enough for the episode's start (a first hardware probe on a fresh machine takes
  // seconds); stopped by SIGTERM at the end.
  const int worker = StartWorker("ow", {"--backend", "cpu", "--idle-exit", "120"});
  ProcessOptions options;
  options.timeout_seconds = 300;
  options.working_dir = dir.string();
  // The worker's cache: the hardware it measured once is the run's too.
  options.extra_env = {"KOPE_CACHE_DIR=" +
                       (fs::path(testing::BinaryDir()) / "test-cache").string()};
  Result<ProcessResult> run =
      RunProcess({(fs::path(testing::BinaryDir()) / "kope").string(), "optimize",
                  (fs::path(testing::SourceDir()) / "examples" / "gelu").string(), "--attempts",
                  "3", "--no-confirm", "--backend", "cpu", "--store", local, "--workers", url_,
                  "--no-bwrap", "--json", "-q"},
                 options);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->exit_code, 0) << run->output;
  const nlohmann::json report =
      nlohmann::json::parse(run->output.substr(run->output.find('{')), nullptr, false);
  ASSERT_TRUE(report.is_object()) << run->output;
  const int evaluations = report.value("session_evaluations", 0);
  EXPECT_EQ(evaluations, 3) << run->output;

  const std::vector<int64_t> jobs =
      Sql("SELECT count(*), count(*) FILTER (WHERE state = 'done' AND worker = 'ow' AND claims "
          "= 1) FROM kope_jobs WHERE batch LIKE 'optimize:gelu:%'");
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0], evaluations);
  EXPECT_EQ(jobs[1], evaluations);
  EXPECT_EQ(ValueOrDie(ValueOrDie(memory::OpenStore(url_))->Stats()).outcomes, 0);

  std::unique_ptr<memory::GraphStore> graph = ValueOrDie(memory::OpenStore(local));
  EXPECT_EQ(ValueOrDie(graph->Stats()).outcomes, evaluations);
  const int64_t run_id = report.value("run", int64_t{0});
  ASSERT_GT(run_id, 0) << run->output;
  for (const memory::AttemptView& v : ValueOrDie(graph->RunAttempts(run_id))) {
    ASSERT_TRUE(v.outcome.has_value());
    EXPECT_EQ(v.outcome->verdict, "valid") << v.outcome->error_message;
    const nlohmann::json evidence = nlohmann::json::parse(v.outcome->evidence_json);
    EXPECT_EQ(evidence.value("verdict", ""), "valid");
    EXPECT_FALSE(evidence.contains("recorded"));
  }
  ::kill(worker, SIGTERM);
  EXPECT_EQ(Wait(worker), 0);
  fs::remove_all(dir);
}

// `kope bench --workers --episodes-on-workers`: each task's whole episode runs on a worker and
// is recorded in the shared store under the suite's label; the suite's report is made from
// those runs, and a second pass finds them finished (recorded, nothing run again).
TEST_F(WorkerCommandTest, SuiteEpisodesRunOnWorkersAndResumeFromTheSharedStore) {
  const fs::path dir = fs::temp_directory_path() / ("kope-suitew-" + std::to_string(::getpid()));
  fs::create_directories(dir / "suite");
  for (const char* task : {"gelu", "row_sum"}) {
    fs::create_directory_symlink(fs::path(testing::SourceDir()) / "examples" / task,
                                 dir / "suite" / task);
  }
  std::vector<int> workers;
  for (const char* name : {"s1", "s2"}) {
    workers.push_back(StartWorker(name, {"--backend", "cpu", "--idle-exit", "120"}));
  }
  const std::vector<std::string> bench = {(fs::path(testing::BinaryDir()) / "kope").string(),
                                          "bench",
                                          (dir / "suite").string(),
                                          "--workers",
                                          url_,
                                          "--episodes-on-workers",
                                          "--attempts",
                                          "2",
                                          "--no-confirm",
                                          "--no-bwrap",
                                          "--out",
                                          (dir / "report").string(),
                                          "--json",
                                          "-q"};
  ProcessOptions options;
  options.timeout_seconds = 300;
  options.working_dir = dir.string();
  for (const char* pass : {"ran", "recorded"}) {
    Result<ProcessResult> run = RunProcess(bench, options);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    ASSERT_EQ(run->exit_code, 0) << run->output;
    const nlohmann::json report =
        nlohmann::json::parse(run->output.substr(run->output.find('{')), nullptr, false);
    ASSERT_TRUE(report.is_object()) << run->output;
    ASSERT_EQ(report["tasks"].size(), 2u) << run->output;
    for (const nlohmann::json& t : report["tasks"]) {
      EXPECT_EQ(t.value("status", ""), pass) << t.dump();
    }
    EXPECT_DOUBLE_EQ(report["metrics"].value("pass_rate", 0.0), 1.0) << run->output;
    EXPECT_TRUE(fs::exists(dir / "report" / "report.json"));
  }
  std::unique_ptr<memory::GraphStore> store = ValueOrDie(memory::OpenStore(url_));
  EXPECT_EQ(ValueOrDie(store->Stats()).runs, 2);
  for (int pid : workers) {
    ::kill(pid, SIGTERM);
    EXPECT_EQ(Wait(pid), 0);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kope
