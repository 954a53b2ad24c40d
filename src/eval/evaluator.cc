#include "kope/eval/evaluator.h"

#include <algorithm>

#include "decide_timing.h"
#include "evaluation.h"
#include "kope/base/hash.h"

namespace kope {
namespace {

// The caller's pool, else `own`, made here.
RunnerPool::Impl& PoolFor(const EvalOptions& options, std::optional<RunnerPool>* own) {
  if (options.pool != nullptr) return options.pool->impl();
  RunnerPoolOptions own_options;
  own_options.scratch_root = options.scratch_root;
  return own->emplace(own_options).impl();
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

// The first line of a compiler's first diagnostic.
std::string FirstDiagnosticLine(const CompiledKernel& kernel) {
  if (kernel.diagnostics.empty()) return "the candidate does not compile";
  const std::string& message = kernel.diagnostics[0].message;
  return message.substr(0, message.find('\n'));
}

}  // namespace

Evaluator::Evaluator(Backend& backend, EvalOptions options)
    : backend_(backend), options_(std::move(options)) {}

Result<Outcome> Evaluator::Evaluate(const Task& task, std::string_view candidate_source,
                                    std::string_view candidate_name) {
  Evaluation evaluation(backend_, options_, task, candidate_source, candidate_name);
  return evaluation.Run();
}

Status Evaluator::Prebuild(const Task& task, std::string_view candidate_source,
                           std::string_view candidate_name, std::atomic<int>* runner_group) {
  KOPE_ASSIGN_OR_RETURN(KernelKinds kinds,
                        KernelKinds::Choose(task, backend_, candidate_name, /*compiled=*/false));
  const KernelKind& kind = kinds.candidate();
  KOPE_ASSIGN_OR_RETURN(RunnerOptions common, CommonRunnerOptions(backend_, options_));
  const std::optional<RunnerOptions> own = kind.CandidateRecipe(common, candidate_source);
  if (!own) return Status::Ok();  // its load builds nothing that is kept
  KOPE_ASSIGN_OR_RETURN(TempFolder scratch,
                        TempFolder::Create(options_.scratch_root, "kope-build"));
  KOPE_ASSIGN_OR_RETURN(CompiledKernel kernel,
                        kind.BuildCandidate(candidate_source, candidate_name, scratch.path()));
  if (kernel.artifact.empty()) return Status::Ok();  // it does not compile: its evaluation says so
  // A pool of its own gives the runner its folder (before the process: it ends after it).
  RunnerPoolOptions pool_options;
  pool_options.scratch_root = options_.scratch_root;
  RunnerPool pool(pool_options);
  bool from_spare = false;
  KOPE_ASSIGN_OR_RETURN(std::unique_ptr<KernelProcess> process,
                        pool.impl().Start("prebuild", *own, EnvOf(options_), &from_spare, 0));
  // A load that fails (or is ended) is the evaluation's to report: it builds again, and tells why.
  int idle = 0;
  if (runner_group != nullptr &&
      !runner_group->compare_exchange_strong(idle, process->process_group())) {
    return Status::Ok();  // ended before its load began
  }
  Status loaded = process->Load(kernel.artifact, kind.LoadTimeout(options_.call_timeout_seconds));
  if (runner_group != nullptr) runner_group->store(0);
  return loaded;
}

Evaluation::Evaluation(Backend& backend, const EvalOptions& options, const Task& task,
                       std::string_view candidate_source, std::string_view candidate_name)
    : backend_(backend),
      options_(options),
      task_(task),
      candidate_source_(candidate_source),
      candidate_name_(candidate_name),
      env_(EnvOf(options)),
      start_time_(env_.NowSeconds()),
      phase_start_(start_time_),
      pool_(PoolFor(options, &own_pool_)),
      session_(task, options, std::string(backend.language())),
      out_(session_.outcome) {
  pool_.BeginEvaluation();
  out_.task = task.name;
  out_.candidate_name = candidate_name_;
  out_.candidate_hash = ContentHash(candidate_source);
  out_.trials = options.trials;
  out_.timing_policy = options.timing_label;
}

Result<Outcome> Evaluation::Run() {
  KOPE_RETURN_IF_ERROR(PrepareKernels());
  KOPE_RETURN_IF_ERROR(StartRunners());
  KOPE_RETURN_IF_ERROR(LoadTaskKernels());
  Phase("start");
  using Step = Result<bool> (Evaluation::*)();
  for (Step step : {&Evaluation::CompileCandidate, &Evaluation::LoadCandidate, &Evaluation::Verify,
                    &Evaluation::Sanitize, &Evaluation::Time, &Evaluation::VerifyAgain}) {
    KOPE_ASSIGN_OR_RETURN(bool go_on, (this->*step)());
    if (!go_on) return Finish();
  }
  KOPE_RETURN_IF_ERROR(Decide());
  return Finish();
}

void Evaluation::Phase(const char* name) {
  const double now = env_.NowSeconds();
  out_.phase_seconds[name] += now - phase_start_;
  phase_start_ = now;
}

Status Evaluation::PrepareKernels() {
  KOPE_ASSIGN_OR_RETURN(KernelKinds kinds, KernelKinds::Choose(task_, backend_, candidate_name_,
                                                               options_.torch_compile_reference));
  kinds_.emplace(std::move(kinds));
  KOPE_ASSIGN_OR_RETURN(out_.hardware, backend_.Hardware());
  // A private scratch folder for this evaluation, removed when it ends.
  KOPE_ASSIGN_OR_RETURN(scratch_, TempFolder::Create(options_.scratch_root, "kope-eval"));
  // The candidate compiles while the task's kernels are compiled (cached) and their runners
  // start: the backend is thread-safe, and runners are started from this thread.
  session_.Progress("compile candidate");
  candidate_build_ = std::async(std::launch::async, [this]() -> Result<CompiledKernel> {
    return kinds_->candidate().BuildCandidate(candidate_source_, candidate_name_, scratch_.path());
  });
  return BuildTaskKernels();
}

Status Evaluation::BuildTaskKernels() {
  const KernelKinds& k = *kinds_;
  KOPE_ASSIGN_OR_RETURN(
      reference_,
      k.reference().BuildTaskKernel(k.reference_source(), KernelRole::kReference, scratch_.path()));
  if (k.separate_baseline()) {
    KOPE_ASSIGN_OR_RETURN(
        baseline_,
        k.baseline().BuildTaskKernel(k.baseline_source(), KernelRole::kBaseline, scratch_.path()));
  }
  if (k.compiled() != nullptr) {
    KOPE_ASSIGN_OR_RETURN(
        compiled_,
        k.compiled()->BuildTaskKernel(k.baseline_source(), KernelRole::kCompiled, scratch_.path()));
  }
  return Status::Ok();
}

Result<bool> Evaluation::CompileCandidate() {
  KOPE_ASSIGN_OR_RETURN(candidate_, candidate_build_.get());
  Phase("compile");
  out_.compile_seconds = candidate_.seconds;
  out_.compile_cache_hit = candidate_.cache_hit;
  out_.diagnostics = candidate_.diagnostics;
  out_.resources = candidate_.resources;
  if (candidate_.ok()) return true;
  out_.verdict = Verdict::kCompileError;
  out_.message = FirstDiagnosticLine(candidate_);
  return false;
}

Result<bool> Evaluation::LoadCandidate() {
  const KernelKind& kind = kinds_->candidate();
  EvalSession& s = session_;
  s.candidate = std::move(candidate_process_);
  s.UseCheckSite(ChecksInReference(kinds_->reference(), kind));
  KOPE_RETURN_IF_ERROR(
      s.candidate->Load(candidate_.artifact, kind.LoadTimeout(options_.call_timeout_seconds)));
  out_.protection = s.candidate->protection().Describe();
  const CallOutcome& loaded = s.candidate->load_outcome();
  if (kind.LoadFailureIsCompileError() && loaded.kind == CallOutcome::Kind::kKernelError &&
      loaded.rc == 0) {
    out_.verdict = Verdict::kCompileError;
    out_.message = loaded.detail.substr(0, 400);
    out_.runtime_detail = loaded.detail;
    return false;
  }
  Phase("load");
  return s.CandidateCallOk(loaded, "loading the kernel");
}

Result<bool> Evaluation::Verify() {
  KOPE_ASSIGN_OR_RETURN(bool verified, session_.Verify(SizeSetsFor(task_, session_.language),
                                                       options_.trials, "value"));
  Phase("verify");
  // The first pass gave the candidate arenas of exactly its sizes (a write past the end faults);
  // timing and the second pass may map its bench arena again instead of populating a new one.
  if (verified) session_.candidate->keep_arena();
  return verified;
}

// Memory and race checkers as a gate, on the check sizes (they are slow).
Result<bool> Evaluation::Sanitize() {
  if (!options_.sanitize) return true;
  session_.Progress("sanitize");
  std::vector<LaunchShapes> shapes;
  for (const SizeSet& set : task_.checks) {
    KOPE_ASSIGN_OR_RETURN(LaunchShapes l, ShapesAt(task_, set));
    shapes.push_back(std::move(l));
  }
  Result<SanitizerReport> report = backend_.Sanitize(candidate_, shapes);
  out_.sanitizer = report.ok() ? *report : SanitizerReport{{}, true, "", report.status().message()};
  if (!out_.sanitizer->clean) {
    out_.verdict = Verdict::kIncorrect;
    out_.message = "the sanitizer found an error: " +
                   out_.sanitizer->first_error.substr(0, out_.sanitizer->first_error.find('\n'));
    Mismatch m;
    m.reason = "sanitizer";
    m.size_set = "check";
    out_.mismatch = m;
    return false;
  }
  Phase("sanitize");
  return true;
}

Result<bool> Evaluation::Time() {
  KOPE_ASSIGN_OR_RETURN(bool timed, session_.Time());
  Phase("time");
  return timed;
}

// Fresh inputs after the timing loop catch kernels that replay or drift.
Result<bool> Evaluation::VerifyAgain() {
  session_.Progress("verify again after timing");
  std::vector<SizeSet> again = {task_.checks.front(), BenchSizes(task_, session_.language)};
  KOPE_ASSIGN_OR_RETURN(bool still, session_.Verify(again, 2, "after_timing"));
  Phase("verify_again");
  return still;
}

Status Evaluation::Decide() {
  const SizeSet& bench = BenchSizes(task_, session_.language);
  out_.verdict = Verdict::kValid;
  const double fastest = session_.fastest_verified_bench_s;
  if (fastest > 0) out_.fastest_verified_bench_s = fastest;
  DecideTiming(task_, bench, fastest, kinds_->candidate().shortest_judged_seconds(), out_);
  out_.message = "valid";
  if (!options_.profile) return Status::Ok();
  session_.Progress("profile");
  KOPE_ASSIGN_OR_RETURN(LaunchShapes shapes, ShapesAt(task_, bench));
  Result<KernelProfile> profile = backend_.Profile(candidate_, shapes);
  out_.profile = profile.ok() ? *profile : KernelProfile{};
  if (!profile.ok()) out_.profile->note = profile.status().message();
  Phase("profile");
  return Status::Ok();
}

Outcome Evaluation::Finish() {
  out_.eval_seconds = env_.NowSeconds() - start_time_;
  AccountRunners();
  // The task's runners stay loaded for the pool's next evaluation of this task.
  std::vector<std::pair<std::string, std::unique_ptr<KernelProcess>>> keep;
  for (TaskRunner& r : task_runners_) keep.emplace_back(r.key, std::move(*r.slot));
  pool_.Keep(std::move(keep), static_cast<double>(options_.limits.cpu_seconds));
  if (session_.candidate != nullptr) {
    pool_.KeepArenas(candidate_runner_kind_, session_.candidate->ReleaseArenas());
  }
  return out_;
}

void Evaluation::AccountRunners() {
  EvalSession& s = session_;
  const std::pair<const char*, KernelProcess*> processes[] = {{"reference", s.reference.get()},
                                                              {"baseline", s.baseline.get()},
                                                              {"candidate", s.candidate.get()},
                                                              {"compiled", s.compiled.get()}};
  for (const auto& [role, p] : processes) {
    if (p == nullptr) continue;
    const double overhead = p->request_seconds() - p->kernel_seconds();
    out_.kernel_seconds += p->kernel_seconds();
    out_.runner_overhead_seconds[role] = overhead;
    if (!p->bridge()) continue;
    out_.bridge_overhead_seconds += overhead;
    for (const auto& [request, seconds] : p->overhead_seconds()) {
      out_.bridge_overhead_by_request[request] += seconds;
    }
  }
  out_.bridge_overhead_seconds = std::max(0.0, out_.bridge_overhead_seconds);
}

}  // namespace kope
