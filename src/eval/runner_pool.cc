#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "runner_pool_impl.h"

namespace kope {

namespace fs = std::filesystem;

std::string RunnerPool::Impl::RunnerKind(const RunnerOptions& o) {
  const SandboxOptions& s = o.sandbox;
  const SandboxLimits& l = s.limits;
  std::string kind =
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", o.runner_exe.string(), o.device,
                  o.start_timeout_seconds, s.use_bubblewrap, l.cpu_seconds, l.max_file_bytes,
                  l.max_address_space_bytes, l.allow_network, l.writable_bytes, l.max_processes,
                  l.max_data_bytes, l.max_device_bytes, o.exe_args.size());
  for (const auto& a : o.exe_args) kind += "|a:" + a;
  for (const auto& p : s.read_only) kind += "|r:" + p.string();
  for (const auto& p : s.devices) kind += "|d:" + p.string();
  for (const auto& p : s.writable) kind += "|w:" + p.string();
  return kind;
}

RunnerPool::RunnerPool(RunnerPoolOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
RunnerPool::~RunnerPool() = default;

RunnerPool::Impl::~Impl() {
  WaitForPremaps();
  WaitForSpawns();
  kept_.clear();
  spares_.clear();
  root_ = TempFolder();  // removes the folder, after the processes that used it ended
}

Result<std::unique_ptr<KernelProcess>> RunnerPool::Impl::Spawn(const std::string& role,
                                                               RunnerOptions runner, Env& env) {
  if (root_.empty()) {
    KOPE_ASSIGN_OR_RETURN(root_, TempFolder::Create(options.scratch_root, "kope-runners"));
  }
  fs::path dir = root_.path() / fmt::format("{}-{}", role, next_folder_++);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create " + dir.string() + ": " + ec.message());
  runner.sandbox.scratch_dir = dir;
  auto process = KernelProcess::Spawn(role, runner, env);
  if (!process.ok()) {
    fs::remove_all(dir, ec);
    return process.status();
  }
  (*process)->own_folder(dir);
  return process;
}

Result<std::unique_ptr<KernelProcess>> RunnerPool::Impl::Start(const std::string& role,
                                                               RunnerOptions runner, Env& env,
                                                               bool* from_spare, size_t ahead) {
  *from_spare = false;
  WaitForPremaps();
  WaitForSpawns();
  const std::string kind = RunnerKind(runner);
  std::unique_ptr<KernelProcess> process;
  std::vector<std::unique_ptr<KernelProcess>>& waiting = spares_[kind];
  while (process == nullptr && !waiting.empty()) {
    std::unique_ptr<KernelProcess> spare = std::move(waiting.front());
    waiting.erase(waiting.begin());
    // A spare that died while it waited is replaced, not used.
    if (spare->alive()) {
      process = std::move(spare);
      *from_spare = true;
    }
  }
  if (process == nullptr) {
    KOPE_ASSIGN_OR_RETURN(process, Spawn(role, runner, env));
  }
  const size_t started = ++started_[kind];
  size_t& wanted = wanted_[kind];
  // A task has at most a reference, a baseline, a torch.compile point and a candidate.
  constexpr size_t kMostPerEvaluation = 4;
  ahead = std::clamp(ahead, size_t{1}, kMostPerEvaluation);
  wanted = options.spares_for_next_task
               ? std::clamp(std::max(wanted, started), ahead, kMostPerEvaluation)
               : ahead;
  // The next ones start now, in the background, while this evaluation runs (a start waits for
  // the runner's first message: up to a tenth of a second that no evaluation should wait for).
  // A failure to start shows when a runner of this kind is needed next; it is not this
  // evaluation's.
  if (options.spares && waiting.size() < wanted) {
    const size_t missing = wanted - waiting.size();
    spawner_.Post([this, &waiting, runner, &env, missing] {
      try {  // off the caller's thread, an exception (out of memory) is a spare not started
        for (size_t i = 0; i < missing; ++i) {
          auto next = Spawn("spare", runner, env);
          if (!next.ok()) break;
          waiting.push_back(std::move(next).value());
        }
      } catch (const std::exception&) {
      }
    });
  }
  return process;
}

size_t RunnerPool::Impl::spares_waiting() {
  WaitForSpawns();
  size_t n = 0;
  for (const auto& [kind, waiting] : spares_) n += waiting.size();
  return n;
}

std::unique_ptr<KernelProcess> RunnerPool::Impl::TakeKept(const std::string& key) {
  auto it = kept_.find(key);
  if (it == kept_.end()) return nullptr;
  std::unique_ptr<KernelProcess> p = std::move(it->second);
  kept_.erase(it);
  if (!p->alive()) return nullptr;
  p->ResetAccounting();
  return p;
}

void RunnerPool::Impl::Keep(
    std::vector<std::pair<std::string, std::unique_ptr<KernelProcess>>> runners,
    double cpu_limit_seconds) {
  kept_.clear();
  for (auto& [key, process] : runners) {
    if (process == nullptr || !process->alive()) continue;
    // RLIMIT_CPU counts a process's whole life: a runner near it would die mid-evaluation.
    if (process->cpu_seconds() > 0.5 * cpu_limit_seconds) continue;
    kept_[key] = std::move(process);
  }
}

void RunnerPool::Impl::WaitForPremaps() {
  if (premap_.valid()) premap_.get();
}

void RunnerPool::Impl::KeepArenas(const std::string& kind,
                                  std::vector<std::unique_ptr<SharedArena>> arenas) {
  WaitForPremaps();
  WaitForSpawns();
  arenas_ = std::move(arenas);
  auto it = spares_.find(kind);
  if (arenas_.empty() || it == spares_.end() || it->second.empty()) return;
  KernelProcess* spare = it->second.front().get();
  if (!spare->bridge()) return;  // kope-runner keeps one arena mapped: nothing to gain
  std::vector<const SharedArena*> to_map;
  for (const auto& a : arenas_) to_map.push_back(a.get());
  // A spare still importing PyTorch answers when it is ready; a failure shows at its next use.
  premap_ = std::async(std::launch::async, [spare, to_map] {
    for (const SharedArena* a : to_map) {
      if (!spare->PreMap(*a, 120).ok()) return;
    }
  });
}

std::vector<std::unique_ptr<SharedArena>> RunnerPool::Impl::TakeArenas() {
  WaitForPremaps();
  return std::move(arenas_);
}

}  // namespace kope
