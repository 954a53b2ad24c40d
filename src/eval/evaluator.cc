#include "kope/eval/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <sstream>

#include "kope/base/file.h"
#include "kope/base/hash.h"
#include "kope/base/temp_folder.h"
#include "kope/torch_bridge/bridge.h"
#include "runner_pool_impl.h"
#include "session.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Compiles a task-owned kernel (baseline or reference); failures are the task's fault.
Result<CompiledKernel> CompileTaskKernel(Backend& backend, const KernelSource& source,
                                         const std::string& role) {
  KOPE_ASSIGN_OR_RETURN(std::string text, ReadFileText(source.path));
  KOPE_ASSIGN_OR_RETURN(CompiledKernel compiled,
                        backend.Compile(text, source.path.filename().string()));
  if (!compiled.ok()) {
    std::string first = compiled.diagnostics.empty()
                            ? compiled.log
                            : compiled.diagnostics[0].file + ":" +
                                  std::to_string(compiled.diagnostics[0].line) + ": " +
                                  compiled.diagnostics[0].message;
    return Status::FailedPrecondition("the task's " + role + " " + source.path.string() +
                                      " does not compile: " + first);
  }
  return compiled;
}

// The tensors' dtypes and shapes at one size set, for the backend's tools.
Result<LaunchShapes> ShapesAt(const Task& task, const SizeSet& set) {
  KOPE_ASSIGN_OR_RETURN(ArenaLayout layout, ArenaLayout::Build(task, set, 1));
  LaunchShapes shapes;
  shapes.label = set.label;
  for (const auto& t : layout.inputs) shapes.inputs.push_back({t.dtype, t.shape});
  for (const auto& t : layout.outputs) shapes.outputs.push_back({t.dtype, t.shape});
  return shapes;
}

// Timed calls faster than this share of the fastest verified call are flagged.
constexpr double kTimedVerifiedRatio = 0.2;

// Speedups, the roofline and the flags, from the timing. `fastest_verified_s`: the candidate's
// fastest verified call at the bench size; judged against the timed median from
// `shortest_judged_s` up (see below).
void DecideTiming(const Task& task, const SizeSet& bench, double fastest_verified_s,
                  double shortest_judged_s, Outcome& outcome) {
  const TimingSummary& c = *outcome.candidate_time;
  const TimingSummary& b = *outcome.baseline_time;
  outcome.speedup = c.median_s > 0 ? b.median_s / c.median_s : 0;
  if (outcome.compiled_time && c.median_s > 0) {
    outcome.speedup_over_compiled = outcome.compiled_time->median_s / c.median_s;
  }
  std::optional<double> bytes, flops;
  if (task.bytes) {
    auto v = task.bytes->Evaluate(bench.sizes);
    if (v.ok()) bytes = static_cast<double>(*v);
  }
  if (task.flops) {
    auto v = task.flops->Evaluate(bench.sizes);
    if (v.ok()) flops = static_cast<double>(*v);
  }
  outcome.roofline_floor_s = RooflineFloorSeconds(outcome.hardware, bytes, flops);
  if (outcome.roofline_floor_s && c.median_s > 0) {
    outcome.roofline_fraction = *outcome.roofline_floor_s / c.median_s;
    outcome.baseline_roofline_fraction = *outcome.roofline_floor_s / b.median_s;
    // Faster than physics is a measurement or correctness error (2% for the floor's own error).
    if (c.median_s < 0.98 * *outcome.roofline_floor_s) {
      outcome.flags.emplace_back(kFlagFasterThanRoofline);
    }
  }
  if (outcome.speedup > 10) outcome.flags.emplace_back(kFlagSpeedupAbove10x);
  if (c.spread > 0.05 || b.spread > 0.05) outcome.flags.emplace_back(kFlagUnstableTiming);
  // A difference inside the spread of the measurements themselves is noise.
  double noise = std::max(c.spread, b.spread);
  if (std::fabs(outcome.speedup - 1.0) <= noise) outcome.flags.emplace_back(kFlagWithinNoise);
  // A kernel that can tell its verified calls from its timed ones (a ModelNew shares the
  // harness's Python process) may do its work only when checked. Its fastest verified call
  // bounds what a timed call can take (timed calls also have their caches flushed), but an
  // isolated call also pays for its start: a cold interpreter and caches, a GPU launch, CPU
  // threads waking up on a busy machine (on the 2-core VM an 18 us kernel's verified calls
  // each took over twice its timed median, a 138 us matmul's too). Hence a wide margin, and
  // calls long enough for their start to be small: the caller's floor is 200 us of device time
  // for a native kernel on a GPU, 1 ms where the clock also counts the host's delays (on the
  // CPU, and for a ModelNew on a GPU, whose Python launch is inside its timed region: on the
  // H200 a correct 5,000-element x.mul(s) timed at 35 us took 176 to 440 us in each of its 39
  // verified calls, every one made by a process that had waited for its request).
  if (fastest_verified_s >= shortest_judged_s &&
      c.median_s < kTimedVerifiedRatio * fastest_verified_s) {
    outcome.flags.emplace_back(kFlagTimedFasterThanVerified);
  }
}

}  // namespace

Evaluator::Evaluator(Backend& backend, EvalOptions options)
    : backend_(backend), options_(std::move(options)) {}

Result<Outcome> Evaluator::Evaluate(const Task& task, std::string_view candidate_source,
                                    std::string_view candidate_name) {
  const double start_time = Now();
  // (Declared before the session: the runners it holds end before their folders go.)
  // Without a pool of the caller's, this evaluation's runners end with it.
  std::optional<RunnerPool> own_pool;
  if (options_.pool == nullptr) {
    RunnerPoolOptions own;
    own.scratch_root = options_.scratch_root;
    own_pool.emplace(own);
  }
  RunnerPool::Impl& pool = options_.pool != nullptr ? options_.pool->impl() : own_pool->impl();
  pool.BeginEvaluation();
  EvalSession s(task, options_, std::string(backend_.language()));
  Outcome& out = s.outcome;
  out.task = task.name;
  out.candidate_name = std::string(candidate_name);
  out.candidate_hash = ContentHash(candidate_source);
  out.trials = options_.trials;
  out.timing_policy = options_.timing_label;
  // The task's runners: kept loaded from an earlier evaluation of the same task (with a pool),
  // else started in this one; filled when they start.
  struct TaskRunner {
    std::string role;
    std::string key;  // role, the artifact's content, the runner's settings
    std::unique_ptr<KernelProcess>* slot;
    const CompiledKernel* kernel;
    const KernelSource* source;  // null: the torch.compile reference point
    bool loaded = false;
  };
  std::vector<TaskRunner> task_runners;
  std::string candidate_kind;  // the candidate runner's RunnerKind, once it started
  // Wall time by phase: each call books the time since the previous one.
  double phase_start = start_time;
  auto phase = [&](const char* name) {
    const double now = Now();
    out.phase_seconds[name] += now - phase_start;
    phase_start = now;
  };
  auto finish = [&]() -> Result<Outcome> {
    out.eval_seconds = Now() - start_time;
    const std::pair<const char*, KernelProcess*> processes[] = {{"reference", s.reference.get()},
                                                                {"baseline", s.baseline.get()},
                                                                {"candidate", s.candidate.get()},
                                                                {"compiled", s.compiled.get()}};
    for (const auto& [role, p] : processes) {
      if (p == nullptr) continue;
      const double overhead = p->request_seconds() - p->kernel_seconds();
      out.kernel_seconds += p->kernel_seconds();
      out.runner_overhead_seconds[role] = overhead;
      if (!p->bridge()) continue;
      out.bridge_overhead_seconds += overhead;
      for (const auto& [request, seconds] : p->overhead_seconds()) {
        out.bridge_overhead_by_request[request] += seconds;
      }
    }
    out.bridge_overhead_seconds = std::max(0.0, out.bridge_overhead_seconds);
    // The task's runners stay loaded for the pool's next evaluation of this task.
    std::vector<std::pair<std::string, std::unique_ptr<KernelProcess>>> keep;
    for (TaskRunner& r : task_runners) keep.emplace_back(r.key, std::move(*r.slot));
    pool.Keep(std::move(keep), static_cast<double>(options_.limits.cpu_seconds));
    if (s.candidate != nullptr) {
      pool.KeepArenas(candidate_kind, s.candidate->ReleaseArenas());
    }
    return out;
  };

  const std::string& language = s.language;
  // The task's kernels in the backend's language; a PyTorch problem stands in for both.
  auto pick = [&](const std::map<std::string, KernelSource>& m) -> const KernelSource* {
    auto it = m.find(language);
    if (it == m.end()) it = m.find("torch");
    return it == m.end() ? nullptr : &it->second;
  };
  const KernelSource* baseline_src = pick(task.baselines);
  if (baseline_src == nullptr) {
    return Status::InvalidArgument("task " + task.name + " has no baseline for the " +
                                   std::string(backend_.name()) + " backend (language '" +
                                   language + "')");
  }
  const KernelSource* own_reference = pick(task.references);
  const KernelSource& reference_src =
      own_reference != nullptr && (own_reference->language == baseline_src->language ||
                                   baseline_src->language == "torch")
          ? *own_reference
          : *baseline_src;
  const bool separate_baseline = reference_src.path != baseline_src->path;
  const bool torch_candidate = IsTorchCandidateName(candidate_name);
  const bool torch_task = task.torch.has_value() && task.baselines.count("torch") > 0;
  if (torch_candidate && !torch_task) {
    return Status::InvalidArgument("'" + std::string(candidate_name) +
                                   "' is a KernelBench-format candidate (.py), but task " +
                                   task.name + " has no PyTorch baseline");
  }
  std::optional<TorchBridge> bridge;
  if (torch_candidate || baseline_src->language == "torch" || reference_src.language == "torch") {
    KOPE_ASSIGN_OR_RETURN(bridge, FindTorchBridge());
  }

  KOPE_ASSIGN_OR_RETURN(out.hardware, backend_.Hardware());
  // A private scratch folder for this evaluation, removed when it ends.
  KOPE_ASSIGN_OR_RETURN(TempFolder scratch, TempFolder::Create(options_.scratch_root, "kope-eval"));

  // The candidate compiles while the task's kernels are compiled (cached) and their
  // runners start: the backend is thread-safe, and runners are started from this thread.
  // (An early return waits for the compile: the future's destructor blocks.)
  // A PyTorch kernel is not compiled: its artifact describes it to the bridge.
  auto task_kernel = [&](const KernelSource& src, TorchMode mode,
                         const std::string& role) -> Result<CompiledKernel> {
    if (src.language != "torch") return CompileTaskKernel(backend_, src, role);
    CompiledKernel k;
    KOPE_ASSIGN_OR_RETURN(
        k.artifact, WriteTorchArtifact(task, mode, "", *bridge, scratch.path(), role + ".json"));
    return k;
  };
  s.Progress("compile candidate");
  std::future<Result<CompiledKernel>> cand_future =
      std::async(std::launch::async,
                 [&, source = std::string(candidate_source),
                  name = std::string(candidate_name)]() -> Result<CompiledKernel> {
                   if (!torch_candidate) return backend_.Compile(source, name);
                   CompiledKernel k;
                   KOPE_ASSIGN_OR_RETURN(
                       k.artifact, WriteTorchArtifact(task, TorchMode::kModelNew, source, *bridge,
                                                      scratch.path(), "candidate.json"));
                   return k;
                 });
  KOPE_ASSIGN_OR_RETURN(CompiledKernel ref,
                        task_kernel(reference_src, TorchMode::kEager, "reference"));
  std::optional<CompiledKernel> base;
  if (separate_baseline) {
    KOPE_ASSIGN_OR_RETURN(base, task_kernel(*baseline_src, TorchMode::kEager, "baseline"));
  }
  std::optional<CompiledKernel> compiled;
  if (baseline_src->language == "torch" && options_.torch_compile_reference) {
    KOPE_ASSIGN_OR_RETURN(compiled, task_kernel(*baseline_src, TorchMode::kCompile, "compiled"));
  }

  RunnerOptions ropts;
  if (options_.runner_exe.empty()) {
    KOPE_ASSIGN_OR_RETURN(ropts.runner_exe, FindRunnerExecutable());
  } else {
    ropts.runner_exe = options_.runner_exe;
  }
  ropts.sandbox.limits = options_.limits;
  ropts.sandbox.use_bubblewrap = options_.use_bubblewrap;
  ropts.device = backend_.runner_device();
  auto runner_options = [&](bool torch, bool task_runner) {
    RunnerOptions o = ropts;
    if (torch) {
      UseTorchBridge(*bridge, &o, task_runner);
      o.start_timeout_seconds = std::max(o.start_timeout_seconds, 60.0);
      // torch.compile and extension builds write precompiled headers and objects of
      // hundreds of megabytes into the sandbox's private tmpfs.
      SandboxLimits& l = o.sandbox.limits;
      l.max_file_bytes = std::max<uint64_t>(l.max_file_bytes, 2ull << 30);
      l.writable_bytes = std::max<uint64_t>(l.writable_bytes, 4ull << 30);
      l.cpu_seconds = std::max<uint64_t>(l.cpu_seconds, 1800);
    }
    return o;
  };
  auto start = [&](const std::string& role, const RunnerOptions& o,
                   size_t ahead = 1) -> Result<std::unique_ptr<KernelProcess>> {
    bool from_spare = false;
    auto process = pool.Start(role, o, &from_spare, ahead);
    if (process.ok() && from_spare) out.runners_from_spares++;
    return process;
  };
  const double timeout = options_.call_timeout_seconds;
  // Loading a PyTorch kernel builds the model (and a candidate's extensions): minutes at most.
  auto load_timeout = [&](const KernelSource* src) {
    return src == nullptr || src->language == "torch" ? std::max(timeout, 900.0) : timeout;
  };

  // Every runner starts before any kernel loads: GPU runners set their devices up in
  // parallel, with each other and with the candidate's compile.
  s.Progress("start runners");
  auto add_task_runner = [&](const std::string& role, const CompiledKernel& kernel,
                             const KernelSource* source, std::unique_ptr<KernelProcess>* slot,
                             RunnerOptions o) -> Status {
    KOPE_ASSIGN_OR_RETURN(std::string artifact, ReadFileText(kernel.artifact));
    // A runner started with other settings (limits, sandbox) is not the same runner.
    TaskRunner r{
        role,
        role + ":" + ContentHash(artifact) + ":" + ContentHash(RunnerPool::Impl::RunnerKind(o)),
        slot, &kernel, source};
    *slot = pool.TakeKept(r.key);
    if (*slot != nullptr) {
      r.loaded = true;
      out.runners_reused++;
    } else {
      KOPE_ASSIGN_OR_RETURN(*slot, start(role, o));
      (*slot)->keep_arena();
    }
    task_runners.push_back(std::move(r));
    return Status::Ok();
  };
  // A PyTorch task's runners run task code only: torch.compile's caches persist between
  // evaluations for them (the compiled reference point's, the reference's comparisons).
  auto task_runner_options = [&](bool torch) {
    RunnerOptions o = runner_options(torch, /*task=*/true);
    std::error_code ec;
    if (torch && fs::is_directory(TorchCompileCacheDir(), ec)) {
      o.sandbox.writable.push_back(TorchCompileCacheDir());
    }
    return o;
  };
  KOPE_RETURN_IF_ERROR(add_task_runner("reference", ref, &reference_src, &s.reference,
                                       task_runner_options(reference_src.language == "torch")));
  if (base) {
    KOPE_RETURN_IF_ERROR(add_task_runner("baseline", *base, baseline_src, &s.baseline,
                                         task_runner_options(baseline_src->language == "torch")));
  }
  if (compiled) {
    KOPE_RETURN_IF_ERROR(
        add_task_runner("compiled", *compiled, nullptr, &s.compiled, task_runner_options(true)));
  }
  pool.EndUnclaimedKept();  // another task's: ended before this task's kernels load and map
  const RunnerOptions candidate_runner = runner_options(torch_candidate, /*task=*/false);
  pool.WaitForSpawns();  // the task runners' spares: not the candidate's wait
  const double candidate_start = Now();
  // A PyTorch candidate's runner takes seconds to start (PyTorch's import): candidates that
  // come faster than that find two spares started ahead.
  KOPE_ASSIGN_OR_RETURN(std::unique_ptr<KernelProcess> candidate_process,
                        start("candidate", candidate_runner, torch_candidate ? 2 : 1));
  candidate_kind = RunnerPool::Impl::RunnerKind(candidate_runner);
  // The last candidate's arenas (its process has ended), for this one's sizes that match them.
  candidate_process->AdoptArenas(pool.TakeArenas());
  candidate_process->retain_arenas();
  // Its start (a spare's mapping of those arenas included) is waited for like its load.
  candidate_process->AccountWait("load", Now() - candidate_start);
  // The task's kernels load at once, each in its own runner (building a PyTorch model takes
  // seconds); the results are taken in order.
  std::vector<std::future<Status>> loads;
  for (TaskRunner& r : task_runners) {
    if (r.loaded) continue;
    KernelProcess* p = r.slot->get();
    loads.push_back(std::async(std::launch::async, [p, &r, &load_timeout] {
      return p->Load(r.kernel->artifact, load_timeout(r.source));
    }));
  }
  size_t next_load = 0;
  for (TaskRunner& r : task_runners) {
    if (r.loaded) continue;
    KernelProcess& p = **r.slot;
    Status loaded = loads[next_load++].get();
    if (r.source == nullptr) {  // a reference point that fails to load is dropped, with a note
      if (!loaded.ok() || !p.load_outcome().ok()) {
        out.compiled_note = "torch.compile was not timed: " +
                            (loaded.ok() ? p.load_outcome().detail : loaded.message());
        r.slot->reset();
      }
      continue;
    }
    KOPE_RETURN_IF_ERROR(loaded);
    if (!p.load_outcome().ok()) {
      return Status::FailedPrecondition("the task's " + r.role +
                                        " does not load: " + p.load_outcome().detail);
    }
  }

  phase("start");
  KOPE_ASSIGN_OR_RETURN(CompiledKernel cand, cand_future.get());
  phase("compile");
  out.compile_seconds = cand.seconds;
  out.compile_cache_hit = cand.cache_hit;
  out.diagnostics = cand.diagnostics;
  out.resources = cand.resources;
  if (!cand.ok()) {
    out.verdict = Verdict::kCompileError;
    out.message = cand.diagnostics.empty() ? "the candidate does not compile"
                                           : cand.diagnostics[0].message.substr(
                                                 0, cand.diagnostics[0].message.find('\n'));
    return finish();
  }
  s.candidate = std::move(candidate_process);
  s.check_in_reference = s.reference->bridge() && s.candidate->bridge();
  KOPE_RETURN_IF_ERROR(
      s.candidate->Load(cand.artifact, torch_candidate ? load_timeout(nullptr) : timeout));
  out.protection = s.candidate->protection().Describe();
  if (torch_candidate && s.candidate->load_outcome().kind == CallOutcome::Kind::kKernelError &&
      s.candidate->load_outcome().rc == 0) {
    // A ModelNew that does not build (syntax error, missing class, failing extension build)
    // is the Python candidate's compile error.
    out.verdict = Verdict::kCompileError;
    out.message = s.candidate->load_outcome().detail.substr(0, 400);
    out.runtime_detail = s.candidate->load_outcome().detail;
    return finish();
  }
  phase("load");
  if (!s.CandidateCallOk(s.candidate->load_outcome(), "loading the kernel")) return finish();

  KOPE_ASSIGN_OR_RETURN(bool verified,
                        s.Verify(SizeSetsFor(task, language), options_.trials, "value"));
  phase("verify");
  if (!verified) return finish();
  // The first pass gave the candidate arenas of exactly its sizes (a write past the end faults);
  // timing and the second pass may map its bench arena again instead of populating a new one.
  s.candidate->keep_arena();
  if (options_.sanitize) {
    // Memory and race checkers as a gate, on the check sizes (they are slow).
    s.Progress("sanitize");
    std::vector<LaunchShapes> shapes;
    for (const SizeSet& set : task.checks) {
      KOPE_ASSIGN_OR_RETURN(LaunchShapes l, ShapesAt(task, set));
      shapes.push_back(std::move(l));
    }
    Result<SanitizerReport> report = backend_.Sanitize(cand, shapes);
    out.sanitizer =
        report.ok() ? *report : SanitizerReport{{}, true, "", report.status().message()};
    if (!out.sanitizer->clean) {
      out.verdict = Verdict::kIncorrect;
      out.message = "the sanitizer found an error: " +
                    out.sanitizer->first_error.substr(0, out.sanitizer->first_error.find('\n'));
      Mismatch m;
      m.reason = "sanitizer";
      m.size_set = "check";
      out.mismatch = m;
      return finish();
    }
  }
  if (options_.sanitize) phase("sanitize");
  KOPE_ASSIGN_OR_RETURN(bool timed, s.Time());
  phase("time");
  if (!timed) return finish();
  // Fresh inputs after the timing loop catch kernels that replay or drift.
  s.Progress("verify again after timing");
  std::vector<SizeSet> again = {task.checks.front(), BenchSizes(task, language)};
  KOPE_ASSIGN_OR_RETURN(bool still, s.Verify(again, 2, "after_timing"));
  phase("verify_again");
  if (!still) return finish();

  out.verdict = Verdict::kValid;
  if (s.fastest_verified_bench_s > 0) out.fastest_verified_bench_s = s.fastest_verified_bench_s;
  const bool host_clocked = backend_.runner_device().empty() || torch_candidate;
  DecideTiming(task, BenchSizes(task, language), s.fastest_verified_bench_s,
               host_clocked ? 1e-3 : 200e-6, out);
  out.message = "valid";
  if (options_.profile) {
    s.Progress("profile");
    KOPE_ASSIGN_OR_RETURN(LaunchShapes shapes, ShapesAt(task, BenchSizes(task, language)));
    Result<KernelProfile> profile = backend_.Profile(cand, shapes);
    out.profile = profile.ok() ? *profile : KernelProfile{};
    if (!profile.ok()) out.profile->note = profile.status().message();
    phase("profile");
  }
  return finish();
}

}  // namespace kope
