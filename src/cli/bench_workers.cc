#include "bench_workers.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "episode_flags.h"
#include "episode_job.h"
#include "kope/agent/episode.h"
#include "kope/base/file.h"
#include "kope/bench_suite/suite.h"
#include "kope/memory/model.h"
#include "kope/memory/store_location.h"
#include "kope/queue/eval_job.h"
#include "kope/queue/job_queue.h"

namespace kope::cli {
namespace {

namespace fs = std::filesystem;

// One eval job per task folder and candidate file found in it.
std::vector<queue::JobSpec> SuiteJobs(const BenchWorkersArgs& args, const std::string& batch) {
  std::vector<queue::JobSpec> jobs;
  for (const fs::path& task : bench_suite::FindSuiteTasks(args.dir)) {
    for (const std::string& name : args.candidates) {
      Result<std::string> source = ReadFileText(task / name);
      if (!source.ok()) continue;
      queue::EvalJob job;
      job.task = fs::absolute(task).string();
      job.candidate_name = name;
      job.candidate_source = *source;
      job.trials = args.trials;
      job.no_bubblewrap = args.no_bubblewrap;
      job.decision = "bench " + batch + ": " + name;
      jobs.push_back({std::string(queue::kEvalJobKind), queue::EvalJobToJson(job), batch});
    }
  }
  return jobs;
}

std::string ProgressLine(const queue::BatchProgress& p) {
  std::string line = "queued " + std::to_string(p.queued) + "  running " +
                     std::to_string(p.running) + "  done " + std::to_string(p.done) + "  failed " +
                     std::to_string(p.failed);
  for (const auto& [worker, w] : p.workers) {
    line += " | " + worker + ": " + std::to_string(w.done) + " done";
    if (w.running > 0) line += ", running";
    if (w.failed > 0) line += ", " + std::to_string(w.failed) + " failed";
  }
  return line;
}

// The verdicts, one line per job.
void PrintResults(const std::vector<queue::JobRecord>& jobs, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof(line), "  %-28s %-16s %-14s %8s  %s\n", "task", "candidate", "verdict",
                "speedup", "worker");
  out << line;
  for (const queue::JobRecord& j : jobs) {
    nlohmann::json r = nlohmann::json::parse(j.result_json.value_or("{}"), nullptr, false);
    const bool ok = r.is_object();
    std::string verdict = j.state == queue::JobState::kDone && ok
                              ? r.value("verdict", std::string("?"))
                              : std::string(queue::JobStateName(j.state));
    std::string speedup = "-";
    if (ok && r.contains("speedup") && r["speedup"].is_number()) {
      char s[32];
      std::snprintf(s, sizeof(s), "%.2fx", r["speedup"].get<double>());
      speedup = s;
    }
    std::string task = ok ? r.value("task", std::string()) : std::string();
    std::string candidate = ok && r.contains("candidate") && r["candidate"].is_object()
                                ? r["candidate"].value("name", std::string())
                                : std::string();
    std::snprintf(line, sizeof(line), "  %-28s %-16s %-14s %8s  %s%s\n", task.c_str(),
                  candidate.c_str(), verdict.c_str(), speedup.c_str(), j.worker.c_str(),
                  j.error.empty() ? "" : ("  " + j.error).c_str());
    out << line;
  }
}

// Enqueues `jobs` as `batch` and waits for every one to end, printing progress unless quiet;
// the jobs as they ended, or an exit code (a message printed) when they could not be run or the
// wait was stopped.
struct BatchResult {
  std::vector<queue::JobRecord> jobs;
  int exit_code = 0;
};

BatchResult RunBatch(const std::string& url, const std::vector<queue::JobSpec>& jobs,
                     const std::string& batch, std::string_view what, bool quiet,
                     double wait_seconds) {
  Result<std::unique_ptr<queue::JobQueue>> opened = queue::OpenJobQueue(url);
  Result<std::vector<int64_t>> ids =
      opened.ok() ? (*opened)->Enqueue(jobs) : Result<std::vector<int64_t>>(opened.status());
  if (!ids.ok()) {
    std::cerr << "kope bench: " << ids.status().message() << "\n";
    return {{}, 1};
  }
  queue::JobQueue& queue = **opened;
  if (!quiet) std::cerr << "enqueued " << ids->size() << " " << what << " as " << batch << "\n";
  InterruptGuard guard;
  const auto start = std::chrono::steady_clock::now();
  std::string last;
  while (true) {
    Result<queue::BatchProgress> progress = queue.Progress(batch);
    if (!progress.ok()) {
      std::cerr << "kope bench: " << progress.status().message() << "\n";
      return {{}, 1};
    }
    std::string line = ProgressLine(*progress);
    if (!quiet && line != last) std::cerr << line << "\n";
    last = line;
    if (progress->finished()) break;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (InterruptGuard::cancel()->load() || (wait_seconds > 0 && waited > wait_seconds)) {
      std::cerr << "kope bench: stopped waiting; the jobs stay queued for the workers (batch "
                << batch << ")\n";
      return {{}, 1};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  Result<std::vector<queue::JobRecord>> done = queue.Jobs(batch);
  if (!done.ok()) {
    std::cerr << "kope bench: " << done.status().message() << "\n";
    return {{}, 1};
  }
  return {std::move(*done), 0};
}

std::string SuiteName(const std::string& name, const std::string& dir) {
  return name.empty() ? fs::path(dir).lexically_normal().filename().string() : name;
}

// A task's result from its episode job: the run's report, read from the shared store.
bench_suite::TaskResult TaskResultOf(const fs::path& dir, const queue::JobRecord& job,
                                     memory::GraphStore& store) {
  bench_suite::TaskResult t;
  t.dir = dir;
  t.name = dir.filename().string();
  t.status = "error";
  if (job.state != queue::JobState::kDone) {
    t.error = job.error.empty() ? std::string(queue::JobStateName(job.state)) : job.error;
    return t;
  }
  const nlohmann::json result = nlohmann::json::parse(job.result_json.value_or(""), nullptr, false);
  const int64_t run = result.is_object() ? result.value("run", int64_t{0}) : 0;
  Result<agent::EpisodeReport> report = agent::ReadRunReport(store, run);
  if (!report.ok()) {
    t.error = "worker " + job.worker + " ran it, but its run: " + report.status().message();
    return t;
  }
  // What the worker's session did, which the graph does not keep.
  const auto found = result.find("report");
  const nlohmann::json session =
      found != result.end() && found->is_object() ? *found : nlohmann::json::object();
  report->cost_usd = session.value("cost_usd", 0.0);
  report->session_attempts = session.value("session_attempts", 0);
  report->session_evaluations = session.value("session_evaluations", 0);
  report->resumed = session.value("resumed", false);
  t.name = report->task;
  t.family = report->family;
  t.status = bench_suite::TaskStatusOf(*report);
  t.report = std::move(*report);
  return t;
}

}  // namespace

int RunSuiteOnWorkers(const SuiteOnWorkersArgs& args) {
  const double start = memory::NowMillis() / 1000.0;
  const std::vector<fs::path> tasks = bench_suite::FindSuiteTasks(args.dir);
  if (tasks.empty()) {
    std::cerr << "kope bench: no task in " << args.dir << "\n";
    return 2;
  }
  Result<std::unique_ptr<memory::GraphStore>> store = memory::OpenStore(args.url);
  if (!store.ok()) {
    std::cerr << "kope bench: " << store.status().message() << "\n";
    return 1;
  }
  bench_suite::SuiteReport report;
  report.name = SuiteName(args.name, args.dir);
  report.dir = args.dir;
  const std::string batch = "bench:" + report.name + ":" + std::to_string(memory::NowMillis());
  std::vector<queue::JobSpec> jobs;
  for (const fs::path& task : tasks) {
    EpisodeJob job{fs::absolute(task).string(), "bench:" + report.name, args.flags};
    jobs.push_back({std::string(kEpisodeJobKind), EpisodeJobToJson(job), batch});
  }
  BatchResult ran = RunBatch(args.url, jobs, batch, "episodes", args.flags.quiet, 0);
  if (ran.exit_code != 0) return ran.exit_code;
  for (size_t i = 0; i < tasks.size() && i < ran.jobs.size(); ++i) {
    report.tasks.push_back(TaskResultOf(tasks[i], ran.jobs[i], **store));
    const bench_suite::TaskResult& t = report.tasks.back();
    if (t.report && report.backend.empty()) {
      report.proposer = t.report->proposer;
      report.backend = t.report->backend;
      report.device = t.report->device;
    }
  }
  report.metrics = bench_suite::ComputeMetrics(report.tasks);
  report.date = bench_suite::UtcNow();
  report.wall_seconds = memory::NowMillis() / 1000.0 - start;
  const std::string out = args.out.empty() ? "kope-bench-" + report.name : args.out;
  Status written = bench_suite::WriteSuiteReport(report, out);
  if (!written.ok()) {
    std::cerr << "kope bench: " << written.message() << "\n";
    return 1;
  }
  if (args.flags.json) {
    std::cout << bench_suite::SuiteReportToJson(report) << "\n";
  } else {
    std::cout << bench_suite::FormatSuiteSummary(report);
    std::cout << "report: " << out << "/report.json, report.csv, speedup.svg\n";
  }
  for (const bench_suite::TaskResult& t : report.tasks) {
    if (t.status == "error" || (t.report && t.report->stop_reason == "error")) return 1;
  }
  return 0;
}

int RunBenchOnWorkers(const BenchWorkersArgs& args) {
  const std::string suite = SuiteName(args.name, args.dir);
  const std::string batch = "bench:" + suite + ":" + std::to_string(memory::NowMillis());
  std::vector<queue::JobSpec> jobs = SuiteJobs(args, batch);
  if (jobs.empty()) {
    std::cerr << "kope bench: no task in " << args.dir << " has a candidate file (looked for";
    for (const std::string& c : args.candidates) std::cerr << " " << c;
    std::cerr << ")\n";
    return 2;
  }
  BatchResult ran = RunBatch(args.url, jobs, batch, "evaluations", args.quiet, args.wait_seconds);
  if (ran.exit_code != 0) return ran.exit_code;
  const std::vector<queue::JobRecord>& done = ran.jobs;
  if (args.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const queue::JobRecord& j : done) {
      out.push_back(
          {{"job", j.id},
           {"state", queue::JobStateName(j.state)},
           {"worker", j.worker},
           {"error", j.error},
           {"outcome", nlohmann::json::parse(j.result_json.value_or("null"), nullptr, false)}});
    }
    std::cout << out.dump(2) << "\n";
  } else {
    PrintResults(done, std::cout);
  }
  for (const queue::JobRecord& j : done) {
    if (j.state != queue::JobState::kDone) return 1;
  }
  return 0;
}

}  // namespace kope::cli
