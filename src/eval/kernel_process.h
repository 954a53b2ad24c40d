// KernelProcess: one kernel (reference, baseline or candidate) loaded in its
// own sandboxed runner, with the arena its tensors live in and the layout of
// those tensors for the current size set. Internal to the evaluator.
#ifndef KOPE_SRC_EVAL_KERNEL_PROCESS_H_
#define KOPE_SRC_EVAL_KERNEL_PROCESS_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kope/eval/env.h"
#include "kope/runner/runner.h"
#include "kope/task/task.h"

namespace kope {

// Where the tensors of one size set live in an arena: `rotation` input sets,
// then one output set, each output followed by guard bytes.
struct ArenaLayout {
  struct Tensor {
    std::string name;
    DType dtype = KOPE_F32;
    std::vector<int64_t> shape;
    size_t count = 0;  // elements
    size_t bytes = 0;
  };
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  std::vector<std::vector<uint64_t>> input_offsets;  // [rotation][input]
  std::vector<uint64_t> output_offsets;
  size_t total_bytes = 0;
  std::vector<CallSpec> calls;  // one per rotation set

  static constexpr size_t kGuardBytes = 4096;
  static Result<ArenaLayout> Build(const Task& task, const SizeSet& sizes, int rotation);
  size_t InputSetBytes() const;
};

class KernelProcess {
 public:
  ~KernelProcess();

  // A runner first, started by `env` (a GPU runner sets its device up meanwhile), the kernel
  // later. A Status error means kope could not do its part; a kernel that fails to load is
  // load_outcome().
  static Result<std::unique_ptr<KernelProcess>> Spawn(const std::string& role,
                                                      const RunnerOptions& options, Env& env);
  Status Load(const std::filesystem::path& artifact, double timeout_seconds);

  const CallOutcome& load_outcome() const { return load_outcome_; }
  const Protection& protection() const { return runner_->protection(); }

  // Maps an arena for `layout`: the current one or an adopted one when it has exactly the
  // layout's size (rounded to pages), else a fresh one. With keep_arena(), an arena at least
  // as large serves too (every verified call poisons its outputs, guards and inputs anew, so
  // nothing in it outlives the call that wrote it).
  // `copies` false (a bridge whose inputs are drawn on its device): see Runner::MapArena.
  Result<CallOutcome> Prepare(ArenaLayout layout, double timeout_seconds, bool copies = true);
  void keep_arena() { keep_arena_ = true; }
  // Another process's arenas, for Prepare to use when the sizes match. They are zeroed here:
  // the process that used them must have ended.
  void AdoptArenas(std::vector<std::unique_ptr<SharedArena>> arenas);
  // With retain_arenas(), arenas of 1 MiB and more that Prepare stops using are kept for
  // ReleaseArenas instead of freed.
  void retain_arenas() { retain_arenas_ = true; }
  // The arena mapped last and those retained, for the pool to hand to the next candidate.
  std::vector<std::unique_ptr<SharedArena>> ReleaseArenas();
  // Maps `arena` in the runner ahead of its use (a spare's, for the next candidate), with no
  // accounting; the runner keeps it mapped when it is mapped again.
  Result<CallOutcome> PreMap(const SharedArena& arena, double timeout_seconds) {
    return runner_->MapArena(arena, timeout_seconds, /*copies=*/true);
  }
  // Checking in the reference runner (a PyTorch task's reference checks a PyTorch candidate;
  // see Runner::ShareArena). The reference's side: memory laid out as its current layout, for
  // `for_process` (*fd receives its descriptor; the caller closes it). Memory shared with one
  // process is never shared with another.
  Result<CallOutcome> ShareArena(const KernelProcess& for_process, int* fd, double timeout_seconds);
  // The candidate's side: `layout` in the memory the reference shared. Until the next Prepare
  // the process has no arena of the parent's (arena() is null).
  Result<CallOutcome> PrepareShared(ArenaLayout layout, int fd, double timeout_seconds);
  // Draws the inputs of rotation set `rotation` (Runner::Draw); the reference's side also
  // calls the kernel on them (ReferenceCall). Timing's draws are booked as "time", the others
  // as "check".
  Result<CallOutcome> Draw(int rotation, uint64_t seed, Runner::DrawMode mode,
                           const std::vector<Runner::DrawSpec>& distributions,
                           double timeout_seconds);
  Result<CallOutcome> ReferenceCall(bool summarize, double timeout_seconds);
  Result<CallOutcome> Poison(const std::vector<Runner::PoisonSpan>& spans, const std::string& guard,
                             double timeout_seconds);
  Result<CallOutcome> Check(const std::vector<std::pair<double, double>>& tolerances,
                            double timeout_seconds);

  const ArenaLayout& layout() const { return layout_; }
  uint8_t* arena() const { return shared_ ? nullptr : arena_->data(); }
  uint8_t* input(int rotation, size_t i) const {
    return arena() + layout_.input_offsets[rotation][i];
  }
  uint8_t* output(size_t i) const { return arena() + layout_.output_offsets[i]; }

  Result<CallOutcome> Call(int rotation, double timeout_seconds);
  Result<CallOutcome> Time(int count, bool flush, double timeout_seconds);

  // Total kernel time reported by this runner so far.
  double kernel_seconds() const { return kernel_seconds_; }
  // The parent's wall time waiting on this runner's requests (load, map, calls) so far.
  double request_seconds() const { return request_seconds_; }
  // request_seconds() less kernel time, by request ("load", "map", "call", "time"), with the
  // runner's copies of tensors between the arena and a GPU apart ("copy").
  const std::map<std::string, double>& overhead_seconds() const { return overhead_seconds_; }
  // Whether this is a Python bridge process (PyTorch kernels) rather than kope-runner.
  bool bridge() const { return bridge_; }

  // Books `seconds` the parent waited on this runner outside a request (its start) under
  // `request`.
  void AccountWait(const char* request, double seconds) {
    request_seconds_ += seconds;
    overhead_seconds_[request] += seconds;
  }
  // For a process kept between evaluations: the accounting above starts again from zero.
  void ResetAccounting();
  bool alive() const { return runner_->alive(); }
  int process_group() const { return runner_->process_group(); }
  // CPU time the runner process has used so far (0 where /proc cannot tell).
  double cpu_seconds() const { return runner_->cpu_seconds(); }
  // For a reference kept between evaluations: its outputs were seen to depend on its inputs
  // (EvalSession::CheckReferenceDependsOnInputs) for the inputs `key` names (a task's dtypes and
  // laws at its bench sizes: two tasks of one problem file may share the process); later
  // evaluations with the same inputs need not summarize them again.
  bool depends_on_inputs(const std::string& key) const { return depends_on_inputs_.count(key); }
  void set_depends_on_inputs(std::string key) { depends_on_inputs_.insert(std::move(key)); }
  // A folder removed after the runner has ended (its scratch folder).
  void own_folder(std::filesystem::path dir) { owned_folder_ = std::move(dir); }

 private:
  KernelProcess(std::string role, std::unique_ptr<RunnerHandle> runner)
      : role_(std::move(role)), runner_(std::move(runner)) {}
  void Account(const CallOutcome& outcome, const char* request);
  // `outcome`, booked by Account when the request got an answer.
  Result<CallOutcome> Accounted(Result<CallOutcome> outcome, const char* request);

  std::string role_;
  std::unique_ptr<RunnerHandle> runner_;
  CallOutcome load_outcome_;
  std::unique_ptr<SharedArena> arena_;
  std::vector<std::unique_ptr<SharedArena>> adopted_;
  std::vector<std::unique_ptr<SharedArena>> retained_;
  bool retain_arenas_ = false;
  ArenaLayout layout_;
  double kernel_seconds_ = 0;
  double request_seconds_ = 0;
  std::map<std::string, double> overhead_seconds_;
  bool bridge_ = false;
  bool keep_arena_ = false;
  bool shared_ = false;  // the current layout lives in memory another runner shares
  std::set<std::string> depends_on_inputs_;
  uint64_t serial_ = 0;  // unique to this process among those this kope started
  std::filesystem::path owned_folder_;
};

}  // namespace kope

#endif  // KOPE_SRC_EVAL_KERNEL_PROCESS_H_
