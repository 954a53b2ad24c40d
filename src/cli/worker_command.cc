// `kope worker --store URL`: claims jobs from the shared store's queue and runs them.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.h"
#include "episode_flags.h"
#include "episode_job.h"
#include "eval_backend.h"
#include "kope/agent/backend_choice.h"
#include "kope/agent/candidate_language.h"
#include "kope/agent/progress.h"
#include "kope/agent/proposer_setup.h"
#include "kope/backend/backend.h"
#include "kope/base/hash.h"
#include "kope/eval/evaluator.h"
#include "kope/eval/runner_pool.h"
#include "kope/memory/postgres/postgres_store.h"
#include "kope/memory/record.h"
#include "kope/memory/store_location.h"
#include "kope/queue/eval_job.h"
#include "kope/queue/job_queue.h"
#include "kope/queue/worker.h"
#include "kope/record/graph_nodes.h"
#include "kope/torch_bridge/bridge.h"
#include "queue_evaluator.h"

namespace kope::cli {
namespace {

namespace fs = std::filesystem;

struct WorkerArgs {
  std::string store;
  int gpu = -1;
  std::string backend = "auto";
  std::string name;
  double lease = 30;
  double idle_exit = 0;
  int max_jobs = 0;
  double reconnect = 300;
  bool quiet = false;
};

// Runs the jobs a worker claims: eval jobs on this machine's backends (one of each kind, kept),
// recording into the store the queue lives in; noop jobs by waiting.
class JobRunners {
 public:
  JobRunners(const WorkerArgs& args, memory::GraphStore& store, std::string location)
      : args_(args), store_(store), location_(std::move(location)) {}

  Result<std::string> Run(const queue::ClaimedJob& job) {
    if (job.kind == queue::kNoopJobKind) return RunNoop(job);
    if (job.kind == queue::kEvalJobKind) return RunEval(job);
    if (job.kind == kEpisodeJobKind) return RunEpisodeJob(job);
    return Status::InvalidArgument("this worker does not run '" + job.kind + "' jobs");
  }

 private:
  static Result<std::string> RunNoop(const queue::ClaimedJob& job) {
    nlohmann::json payload = nlohmann::json::parse(job.payload_json, nullptr, false);
    const int ms = payload.is_object() ? payload.value("ms", 0) : 0;
    if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return nlohmann::json({{"ms", ms}}).dump();
  }

  Result<Backend*> BackendFor(const queue::EvalJob& job, const Task& task) {
    KOPE_ASSIGN_OR_RETURN(std::string name,
                          EvalBackendName(args_.backend, job.candidate_name, task));
    auto it = backends_.find(name);
    if (it == backends_.end()) {
      KOPE_ASSIGN_OR_RETURN(std::unique_ptr<Backend> made, MakeEvalBackend(name));
      it = backends_.emplace(name, std::move(made)).first;
    }
    return it->second.get();
  }

  Result<std::string> RunEval(const queue::ClaimedJob& claimed) {
    KOPE_ASSIGN_OR_RETURN(queue::EvalJob job, queue::EvalJobFromJson(claimed.payload_json));
    KOPE_ASSIGN_OR_RETURN(std::string path, TaskPathOf(job));
    KOPE_ASSIGN_OR_RETURN(Task task, LoadTaskOrProblem(path));
    KOPE_ASSIGN_OR_RETURN(Backend * backend, BackendFor(job, task));
    EvalOptions options;
    options.trials = job.trials;
    options.call_timeout_seconds = job.timeout_seconds;
    options.use_bubblewrap = !job.no_bubblewrap;
    if (job.confirm) {
      options.timing = TimingPolicy::Confirm();
      options.timing_label = "confirm";
    }
    options.pool = PoolFor(job.task, *backend, task);
    Evaluator evaluator(*backend, options);
    KOPE_ASSIGN_OR_RETURN(Outcome outcome,
                          evaluator.Evaluate(task, job.candidate_source, job.candidate_name));
    if (job.record) {
      KOPE_RETURN_IF_ERROR(Record(claimed, job, task, backend->language(), outcome));
    }
    return EvalJobResult(outcome);
  }

  // Where the job's task is: its path, or a KernelBench problem it carries, written into this
  // worker's cache under its content hash (imported from there like any problem file).
  static Result<std::string> TaskPathOf(const queue::EvalJob& job) {
    if (job.problem_source.empty()) return job.task;
    const fs::path dir =
        DefaultCacheDir() / "worker-problems" / ContentHash(job.problem_source).substr(0, 16);
    const fs::path file = dir / job.problem_name;
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {  // written beside, then renamed: never half a file
      fs::create_directories(dir, ec);
      const fs::path partial = file.string() + ".partial-" + std::to_string(::getpid());
      std::ofstream out(partial, std::ios::binary | std::ios::trunc);
      out << job.problem_source;
      if (!out.flush()) return Status::IoError("cannot write " + partial.string());
      out.close();
      fs::rename(partial, file, ec);
      if (ec) return Status::IoError("cannot write " + file.string() + ": " + ec.message());
    }
    return file.string();
  }

  // A task's whole episode, as `kope bench` runs it, recorded in the worker's store (the
  // queue's): a job run again resumes its run.
  Result<std::string> RunEpisodeJob(const queue::ClaimedJob& claimed) {
    KOPE_ASSIGN_OR_RETURN(EpisodeJob job, EpisodeJobFromJson(claimed.payload_json));
    KOPE_ASSIGN_OR_RETURN(Task task, LoadTaskOrProblem(job.task));
    KOPE_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend,
                          agent::OpenBackend({args_.backend, &task, {}}));
    KOPE_ASSIGN_OR_RETURN(std::string language, agent::ResolveLanguageChoice(
                                                    job.flags.language, backend->language(), task));
    KOPE_ASSIGN_OR_RETURN(agent::ProposerSet proposers,
                          agent::OpenProposers(ProposerChoiceOf(job.flags, location_)));
    std::unique_ptr<agent::Proposer> proposer = proposers.Make();
    agent::EpisodeOptions options;
    ApplyEpisodeFlags(job.flags, options);
    options.label = job.label;
    options.language = language;
    options.resume = !job.flags.fresh;
    options.reuse_finished = !job.flags.fresh;
    options.prior_nodes = 0;
    options.config_json = proposers.config_json();
    options.cancel = InterruptGuard::cancel();
    KOPE_ASSIGN_OR_RETURN(agent::EpisodeReport report,
                          agent::RunEpisode(store_, *backend, task, *proposer, options));
    if (report.stop_reason == "cancelled") {
      // Stopped by SIGTERM: the job goes back to the queue at its lease's end, and the worker
      // that claims it then resumes the run.
      return Status::Cancelled("the worker was stopped; run r" + std::to_string(report.run_id) +
                               " resumes when the job is claimed again");
    }
    report.cost_usd = proposers.CostUsd(report.prompt_tokens, report.completion_tokens);
    return nlohmann::json({{"run", report.run_id},
                           {"report", nlohmann::json::parse(agent::EpisodeReportToJson(report))}})
        .dump();
  }

  // The runners of the task's last jobs stay loaded, as in a local episode: the next candidate
  // of an episode evaluated here starts no process and imports nothing again.
  std::shared_ptr<RunnerPool> PoolFor(const std::string& task_path, const Backend& backend,
                                      const Task& task) {
    constexpr size_t kPools = 4;
    const std::string key = task_path + "\n" + std::string(backend.name());
    auto it = pools_.find(key);
    if (it != pools_.end()) return it->second;
    if (pool_order_.size() >= kPools) {
      pools_.erase(pool_order_.front());
      pool_order_.erase(pool_order_.begin());
    }
    RunnerPoolOptions options;
    options.spares = backend.name() == "cuda" || task.torch.has_value();
    pool_order_.push_back(key);
    return pools_.emplace(key, std::make_shared<RunnerPool>(options)).first->second;
  }

  // As `kope eval --record`, under the job's keys: a job run again records nothing new.
  Status Record(const queue::ClaimedJob& claimed, const queue::EvalJob& job, const Task& task,
                std::string_view language, const Outcome& outcome) {
    memory::AttemptNode attempt;
    attempt.decision =
        job.decision.empty() ? "evaluated by a worker: " + job.candidate_name : job.decision;
    attempt.proposer = "human";
    KOPE_ASSIGN_OR_RETURN(
        memory::EvaluationRecord evaluation,
        record::EvaluationRecordFor(task, language, outcome, job.candidate_source,
                                    std::move(attempt), "worker:" + claimed.batch));
    const queue::EvalJobKeys keys = queue::KeysForEvalJob(claimed.key, claimed.batch, job.task);
    evaluation.run.key = keys.run;
    evaluation.attempt.key = keys.attempt;
    evaluation.outcome.key = keys.outcome;
    return memory::RecordEvaluation(store_, evaluation).status();
  }

  const WorkerArgs& args_;
  memory::GraphStore& store_;
  const std::string location_;
  std::map<std::string, std::unique_ptr<Backend>> backends_;
  std::map<std::string, std::shared_ptr<RunnerPool>> pools_;  // by task and backend
  std::vector<std::string> pool_order_;                       // oldest first
};

int RunWorkerCommand(const WorkerArgs& args) {
  Result<std::string> location = memory::ResolveStoreLocation(args.store);
  if (!location.ok() || !memory::IsPostgresLocation(*location)) {
    std::cerr << "kope worker: the queue lives in a shared PostgreSQL store: pass --store "
                 "postgresql://... (or set KOPE_STORE)\n";
    return 2;
  }
  if (args.gpu >= 0) ::setenv("CUDA_VISIBLE_DEVICES", std::to_string(args.gpu).c_str(), 1);
  Result<std::unique_ptr<memory::GraphStore>> store = memory::OpenStore(*location);
  Result<std::unique_ptr<queue::JobQueue>> jobs =
      store.ok() ? queue::OpenJobQueue(*location)
                 : Result<std::unique_ptr<queue::JobQueue>>(store.status());
  if (!jobs.ok()) {
    std::cerr << "kope worker: " << jobs.status().message() << "\n";
    return 1;
  }
  JobRunners runners(args, **store, *location);
  queue::WorkerOptions options;
  options.name = args.name.empty() ? queue::DefaultWorkerName(args.gpu) : args.name;
  options.lease_seconds = args.lease;
  options.idle_exit_seconds = args.idle_exit;
  options.max_jobs = args.max_jobs;
  options.reconnect_seconds = args.reconnect;
  options.stop = InterruptGuard::cancel();
  if (!args.quiet) {
    options.on_job = [&](const queue::ClaimedJob& job, queue::JobState state) {
      std::cerr << options.name << ": job " << job.id << " (" << job.kind << ") "
                << queue::JobStateName(state) << "\n";
    };
  }
  // An outage is worth a line even with -q: the worker looks idle while it lasts.
  options.on_outage = [&](std::string_view why) {
    if (why.empty()) {
      std::cerr << options.name << ": the database is reachable again\n";
    } else {
      std::cerr << options.name << ": the database is unreachable, retrying: " << why << "\n";
    }
  };
  InterruptGuard guard;
  Result<queue::WorkerReport> report = queue::RunWorker(
      **jobs, [&](const queue::ClaimedJob& job) { return runners.Run(job); }, options);
  if (!report.ok()) {
    std::cerr << "kope worker: " << report.status().message() << "\n";
    return 1;
  }
  if (!args.quiet) {
    std::cerr << options.name << ": " << report->done << " done, " << report->failed << " failed, "
              << report->lost << " lost; stopped: " << report->stop_reason << "\n";
  }
  return 0;
}

}  // namespace

void RegisterWorkerCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<WorkerArgs>();
  CLI::App* cmd = app.add_subcommand(
      "worker", "Claim and run jobs (evaluations) from a shared PostgreSQL store's queue");
  cmd->add_option("--store", args->store,
                  "The shared store and queue: postgresql://... (default: $KOPE_STORE)");
  cmd->add_option("--gpu", args->gpu, "Run on this GPU only (sets CUDA_VISIBLE_DEVICES)")
      ->check(CLI::Range(0, 1023));
  cmd->add_option("--backend", args->backend, "cpu, cuda, or auto (as for kope eval)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  cmd->add_option("--name", args->name, "The worker's name in the queue (default: HOST:PID)");
  cmd->add_option("--lease", args->lease,
                  "Seconds a claimed job stays this worker's without a heartbeat")
      ->check(CLI::Range(0.5, 86400.0));
  cmd->add_option("--idle-exit", args->idle_exit,
                  "Stop after this many seconds without a job (default 0: run until stopped)")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--max-jobs", args->max_jobs, "Stop after this many jobs (default 0: no limit)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--reconnect", args->reconnect,
                  "Seconds to keep retrying an unreachable database before giving up (default "
                  "300)")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_flag("-q,--quiet", args->quiet, "No line per job");
  cmd->callback([args, exit_code] { *exit_code = RunWorkerCommand(*args); });
}

}  // namespace kope::cli
