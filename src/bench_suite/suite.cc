#include "kope/bench_suite/suite.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>
#include <thread>

#include "kope/agent/progress.h"
#include "kope/eval/runner_pool.h"
#include "kope/torch_bridge/bridge.h"

namespace kope::bench_suite {
namespace {

namespace fs = std::filesystem;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class Suite {
 public:
  Suite(memory::GraphStore& store, Backend& backend, const agent::ProposerSet& proposers,
        const SuiteOptions& options, std::string name)
      : store_(store),
        backend_(backend),
        proposers_(proposers),
        options_(options),
        name_(std::move(name)) {}

  // `pool`: the worker's runners, kept from one task to the next (PyTorch's import and CUDA
  // contexts of the next task's runners start during this one).
  void RunTask(TaskResult* result, const std::shared_ptr<RunnerPool>& pool) {
    Result<Task> task = LoadTaskOrProblem(result->dir);
    if (!task.ok()) {
      result->status = "error";
      result->error = task.status().message();
      Log(fmt::format("[{}] cannot load the task: {}", result->name, result->error));
      return;
    }
    result->name = task->name;
    result->family = task->family;
    std::unique_ptr<agent::Proposer> proposer = proposers_.Make();
    agent::EpisodeOptions episode = options_.episode;
    if (episode.eval.pool == nullptr) episode.eval.pool = pool;
    episode.label = "bench:" + name_;
    episode.resume = !options_.fresh;
    episode.reuse_finished = !options_.fresh;
    episode.run_id = 0;
    episode.prior_nodes = 0;
    std::unique_ptr<agent::EpisodeObserver> display;
    if (options_.log != nullptr) {
      agent::ProgressOptions progress;
      progress.prefix = "[" + task->name + "] ";
      progress.lock = &log_lock_;
      display = agent::CreateProgressDisplay(*options_.log, progress);
      episode.observer = display.get();
    }
    Result<agent::EpisodeReport> report =
        agent::RunEpisode(store_, backend_, *task, *proposer, episode);
    if (!report.ok()) {
      result->status = "error";
      result->error = report.status().message();
      Log(fmt::format("[{}] error: {}", task->name, result->error));
      return;
    }
    result->status = TaskStatusOf(*report);
    const bool recorded = result->status == "recorded";
    report->cost_usd = proposers_.CostUsd(report->prompt_tokens, report->completion_tokens);
    result->report = std::move(*report);
    const agent::EpisodeReport& r = *result->report;
    Log(fmt::format("[{}] {}: {} | {} attempts | stopped: {}{}", task->name,
                    recorded ? "recorded earlier" : "done",
                    r.best && r.best->speedup
                        ? fmt::format("best a{} {:.2f}x", r.best->id, *r.best->speedup)
                        : "no valid kernel",
                    r.attempts.size(), r.stop_reason, r.error.empty() ? "" : " (" + r.error + ")"));
  }

  void Log(const std::string& line) {
    if (options_.log == nullptr) return;
    std::lock_guard<std::mutex> lock(log_lock_);
    *options_.log << line << "\n" << std::flush;
  }

 private:
  memory::GraphStore& store_;
  Backend& backend_;
  const agent::ProposerSet& proposers_;
  const SuiteOptions& options_;
  std::string name_;
  std::mutex log_lock_;
};

}  // namespace

std::string TaskStatusOf(const agent::EpisodeReport& report) {
  const bool recorded = report.session_attempts == 0 && report.session_evaluations == 0 &&
                        report.resumed && report.stop_reason != "error";
  return recorded ? "recorded" : "ran";
}

std::string UtcNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

bool TaskResult::valid() const {
  return report && report->best && report->best->verdict == "valid" && report->best->speedup;
}

double TaskResult::speedup() const { return valid() ? *report->best->speedup : 0; }

std::vector<fs::path> FindSuiteTasks(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_regular_file(dir / "task.toml", ec)) return {dir};
  std::vector<fs::path> tasks;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if ((entry.is_directory(ec) && fs::is_regular_file(entry.path() / "task.toml", ec)) ||
        IsKernelBenchProblem(entry.path())) {
      tasks.push_back(entry.path());
    }
  }
  std::sort(tasks.begin(), tasks.end());
  return tasks;
}

Result<SuiteReport> RunSuite(memory::GraphStore& store, Backend& backend,
                             const agent::ProposerSet& proposers, const fs::path& dir,
                             const SuiteOptions& options) {
  const double start = Now();
  std::vector<fs::path> dirs = FindSuiteTasks(dir);
  if (dirs.empty()) {
    return Status::NotFound(
        "no task in " + dir.string() +
        " (a folder with task.toml, sub-folders with one, or KernelBench problem files)");
  }
  SuiteReport report;
  report.dir = dir;
  report.name = options.name;
  if (report.name.empty()) {
    report.name = fs::weakly_canonical(dir).filename().string();
    if (report.name.empty()) report.name = "suite";
  }
  report.proposer = proposers.description();
  report.backend = std::string(backend.name());
  KOPE_ASSIGN_OR_RETURN(HardwareInfo hardware, backend.Hardware());
  report.device = hardware.device;
  report.tasks.resize(dirs.size());
  for (size_t i = 0; i < dirs.size(); ++i) {
    report.tasks[i].dir = dirs[i];
    report.tasks[i].name = dirs[i].filename().string();
  }

  Suite suite(store, backend, proposers, options, report.name);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    // One pool per worker (a pool serves one evaluation at a time).
    RunnerPoolOptions pool_options;
    pool_options.spares = true;
    pool_options.spares_for_next_task = true;
    pool_options.scratch_root = options.episode.eval.scratch_root;
    auto pool = std::make_shared<RunnerPool>(pool_options);
    for (size_t i = next++; i < report.tasks.size(); i = next++) {
      if (options.episode.cancel != nullptr && options.episode.cancel->load()) break;
      suite.RunTask(&report.tasks[i], pool);
    }
  };
  const int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(dirs.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();

  for (TaskResult& t : report.tasks) {
    if (t.status.empty()) {
      t.status = "error";
      t.error = "not run (cancelled)";
    }
  }
  report.metrics = ComputeMetrics(report.tasks);
  report.date = UtcNow();
  report.wall_seconds = Now() - start;
  return report;
}

}  // namespace kope::bench_suite
