// `kope deploy`'s plan: which extracted tasks it optimizes (those whose unit a patch can replace,
// best ranked first), how the attempt budget is split among them (by each task's share of the
// workload's time: its Amdahl weight), and the plan file the Python validation step reads
// (python/kope_deploy/validate.py): per task, its candidates best first, and the runtime
// decisions the profile suggests (how the model runs rather than a kernel).
#ifndef KOPE_DEPLOY_PLAN_H_
#define KOPE_DEPLOY_PLAN_H_

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kope/base/status.h"
#include "kope/deploy/profile.h"
#include "kope/deploy/workload.h"
#include "kope/memory/model.h"

namespace kope::deploy {

struct DeployTask {
  std::string name;
  std::filesystem::path folder;  // absolute
  std::string unit_kind;         // unit.json's kind: "norm", "linear", ...
  double share = 0;              // the opportunity's phase-weighted share of the time
  std::vector<std::string> phases;
  int attempts = 0;  // its part of the attempt budget (SplitAttempts)
};

struct TaskSelection {
  std::vector<DeployTask> tasks;  // in the profile's ranking order
  // Extracted tasks left out: "name: why" (their unit is not patched, no unit.json, ...).
  std::vector<std::string> skipped;
};

// The first `max_tasks` opportunities of `profile` that have a task folder under `out_dir`
// whose unit.json says `patchable`, of one of the `units` kinds where any are given.
Result<TaskSelection> SelectTasks(const Profile& profile, const std::filesystem::path& out_dir,
                                  size_t max_tasks, const std::vector<std::string>& units = {});

// Splits `total` attempts among the tasks in proportion to their shares (largest remainders),
// at least `minimum` each.
void SplitAttempts(int total, int minimum, std::vector<DeployTask>* tasks);

struct PlanCandidate {
  memory::NodeId attempt = 0;
  std::filesystem::path source;    // the candidate's file
  std::filesystem::path compiled;  // a native kernel's shared object; empty for a ModelNew
  std::optional<double> speedup;   // on the unit task
};

struct PlanTask {
  DeployTask task;
  std::vector<PlanCandidate> candidates;  // best first
};

// One way to apply a runtime patch; `fuse`: decode_graph's step compiled by torch.compile (its
// small operations fused) before it is captured.
struct RuntimeVariant {
  std::string name;
  bool fuse = false;          // the decode step compiled, projections merged
  bool fuse_prefill = false;  // the prefill compiled too
};

// A runtime patch the validation step tries beside the kernels, through the same gate
// (docs/DEPLOY_GATE.md): "decode_graph", the decode step over a static cache replayed from a
// CUDA graph, generate() run without its per-step synchronization. Its variants are tried in
// order; the first the gate and the end-to-end rule accept is kept.
struct RuntimeDecision {
  std::string name;
  std::string reason;         // the profile's evidence for it
  int64_t max_cache_len = 0;  // the longest sequence of the workload, and one token more
  std::vector<RuntimeVariant> variants;
};

// The decode phase counts as host-bound when the GPU is idle this much of its wall time.
inline constexpr double kHostBoundIdle = 0.5;

// decode_graph where the workload runs a transformers model's eager generate() on CUDA and its
// decode phases (weighted by their share of the time) leave the GPU idle at least
// kHostBoundIdle of the time; nothing otherwise.
std::vector<RuntimeDecision> RuntimeDecisions(const Workload& workload, const Profile& profile);

// The plan file's text (JSON): the workload.json to build the model from, the folder the
// artifact and the report go to, the provenance recorded in the artifact, the tasks and the
// runtime decisions.
std::string PlanJson(const std::filesystem::path& workload_json,
                     const std::filesystem::path& out_dir, const std::string& provenance_json,
                     const std::vector<PlanTask>& tasks,
                     const std::vector<RuntimeDecision>& runtime = {});

}  // namespace kope::deploy

#endif  // KOPE_DEPLOY_PLAN_H_
