#include "bench_workers.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "episode_flags.h"
#include "kope/base/file.h"
#include "kope/bench_suite/suite.h"
#include "kope/memory/model.h"
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

}  // namespace

int RunBenchOnWorkers(const BenchWorkersArgs& args) {
  const std::string suite =
      args.name.empty() ? fs::path(args.dir).lexically_normal().filename().string() : args.name;
  const std::string batch = "bench:" + suite + ":" + std::to_string(memory::NowMillis());
  std::vector<queue::JobSpec> jobs = SuiteJobs(args, batch);
  if (jobs.empty()) {
    std::cerr << "kope bench: no task in " << args.dir << " has a candidate file (looked for";
    for (const std::string& c : args.candidates) std::cerr << " " << c;
    std::cerr << ")\n";
    return 2;
  }
  Result<std::unique_ptr<queue::JobQueue>> opened = queue::OpenJobQueue(args.url);
  Result<std::vector<int64_t>> ids =
      opened.ok() ? (*opened)->Enqueue(jobs) : Result<std::vector<int64_t>>(opened.status());
  if (!ids.ok()) {
    std::cerr << "kope bench: " << ids.status().message() << "\n";
    return 1;
  }
  queue::JobQueue& jobs_queue = **opened;
  if (!args.quiet) std::cerr << "enqueued " << ids->size() << " evaluations as " << batch << "\n";
  InterruptGuard guard;
  const auto start = std::chrono::steady_clock::now();
  std::string last;
  while (true) {
    Result<queue::BatchProgress> progress = jobs_queue.Progress(batch);
    if (!progress.ok()) {
      std::cerr << "kope bench: " << progress.status().message() << "\n";
      return 1;
    }
    std::string line = ProgressLine(*progress);
    if (!args.quiet && line != last) std::cerr << line << "\n";
    last = line;
    if (progress->finished()) break;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (InterruptGuard::cancel()->load() || (args.wait_seconds > 0 && waited > args.wait_seconds)) {
      std::cerr << "kope bench: stopped waiting; the jobs stay queued for the workers (batch "
                << batch << ")\n";
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  Result<std::vector<queue::JobRecord>> done = jobs_queue.Jobs(batch);
  if (!done.ok()) {
    std::cerr << "kope bench: " << done.status().message() << "\n";
    return 1;
  }
  if (args.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const queue::JobRecord& j : *done) {
      out.push_back(
          {{"job", j.id},
           {"state", queue::JobStateName(j.state)},
           {"worker", j.worker},
           {"error", j.error},
           {"outcome", nlohmann::json::parse(j.result_json.value_or("null"), nullptr, false)}});
    }
    std::cout << out.dump(2) << "\n";
  } else {
    PrintResults(*done, std::cout);
  }
  for (const queue::JobRecord& j : *done) {
    if (j.state != queue::JobState::kDone) return 1;
  }
  return 0;
}

}  // namespace kope::cli
