// The experience graph's model: plain structs for its nodes and edges.
//
// Nodes: task, hardware, run (one episode), attempt (one candidate kernel and the decision that
// produced it), outcome (the verdict an evaluation gave an attempt, with its evidence) and
// insight (a lesson in words with a scope and evidence counts). Edges: attempt `derived_from`
// attempt (AttemptNode::parent_id; the children of one attempt are its alternative branches),
// outcome `of` attempt (OutcomeNode::attempt_id), attempt `for` task and `on` hardware (through
// its run), insight `supported_by` / `contradicted_by` outcome (EvidenceEdge) and attempt `used`
// insight or exemplar attempt (UsedEdge). docs/MEMORY_MODEL.md describes every field.
//
// Identity. Every node has a numeric id, local to one store (0 means "none" or "not stored
// yet"), and a key: 32 lowercase hex digits derived from the node's content by the *Key
// functions below, so that the same node written twice, or imported twice from an experience
// pack, is one node. A key, once stored, is the node's identity: it is never recomputed.
//
// These are values: copyable, no behaviour, safe to share between threads once built.
#ifndef KOPE_MEMORY_MODEL_H_
#define KOPE_MEMORY_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"

namespace kope::memory {

using NodeId = int64_t;

// The numbering is stored (used and usage tables): append, never reorder.
enum class NodeKind { kTask, kHardware, kRun, kAttempt, kOutcome, kInsight, kWorkload };

// "task", "hardware", "run", "attempt", "outcome", "insight", "workload".
std::string_view NodeKindName(NodeKind kind);
Result<NodeKind> ParseNodeKind(std::string_view name);

// A typed reference to one node, written "attempt:42" (short forms "a42", "t3", "h1", "r7",
// "o9", "i5", "w2" are accepted by ParseNodeRef; a bare number means an attempt).
struct NodeRef {
  NodeKind kind = NodeKind::kAttempt;
  NodeId id = 0;
  friend bool operator==(const NodeRef&, const NodeRef&) = default;
};
std::string FormatNodeRef(const NodeRef& ref);
Result<NodeRef> ParseNodeRef(std::string_view text);

// The verdicts of ARCHITECTURE.md. Outcomes with another verdict are refused.
inline constexpr std::string_view kVerdictCompileError = "compile_error";
inline constexpr std::string_view kVerdictRuntimeError = "runtime_error";
inline constexpr std::string_view kVerdictCrash = "crash";
inline constexpr std::string_view kVerdictTimeout = "timeout";
inline constexpr std::string_view kVerdictIncorrect = "incorrect";
inline constexpr std::string_view kVerdictValid = "valid";
bool IsKnownVerdict(std::string_view verdict);

// Milliseconds since the Unix epoch; a write with 0 gets the current time.
using UnixMillis = int64_t;

struct TaskNode {
  NodeId id = 0;
  std::string key;        // empty on write: TaskKey(name, spec_hash)
  std::string name;       // e.g. "softmax_rows"
  std::string op_family;  // e.g. "softmax", "matmul", "elementwise"
  std::string description;
  double size = 0;        // characteristic problem size (elements of the largest tensor); 0 unknown
  std::string spec_hash;  // content hash of the task definition, "" when unknown
  std::string attrs_json = "{}";  // anything else (dtypes, shapes, flops), a JSON object
  UnixMillis created_at = 0;
};

struct HardwareNode {
  NodeId id = 0;
  std::string key;                // empty on write: HardwareKey(backend, device, arch)
  std::string backend;            // "cpu" or "cuda"
  std::string device;             // e.g. "NVIDIA H200"
  std::string arch;               // e.g. "sm_90", "x86_64-avx512"
  std::string attrs_json = "{}";  // cores, bandwidth, peak flops, ... as a JSON object
  UnixMillis created_at = 0;
};

// One episode: the work of one optimizer (or one `kope eval --record`) on a task and hardware.
struct RunNode {
  NodeId id = 0;
  std::string key;  // empty on write: a fresh unique key
  NodeId task_id = 0;
  NodeId hardware_id = 0;
  std::string label;               // e.g. "optimize", "eval", "bench:level1"
  std::string compiler;            // e.g. "nvcc 12.4", "g++ 12.2.0"
  std::string config_json = "{}";  // budgets, provider, seed, ... as a JSON object
  UnixMillis started_at = 0;
};

struct AttemptNode {
  NodeId id = 0;
  std::string key;  // empty on write: AttemptKey(run key, parent key, source hash, ...)
  NodeId run_id = 0;
  NodeId task_id = 0;       // filled by the store from the run
  NodeId hardware_id = 0;   // filled by the store from the run
  NodeId parent_id = 0;     // the attempt this one was derived from; 0 for a root
  std::string source_hash;  // ContentHash of the source; filled by the store
  std::string diff;         // unified diff from the parent's source; computed when empty
  std::string decision;     // the decision in words, as proposed
  // Decision classes (docs/MEMORY_MODEL.md). On write, the given ones are joined with those
  // ClassifyDecision derives from the decision and the code; stored sorted and unique.
  std::vector<std::string> classes;
  std::string proposer;  // e.g. "llm:gpt-5", "tuner", "baseline", "human"
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  double cost_usd = 0;  // of the calls that proposed it, at the model's configured price
  UnixMillis created_at = 0;
};

struct OutcomeNode {
  NodeId id = 0;
  std::string key;  // empty on write: OutcomeKey(attempt key, stage, verdict, evidence)
  NodeId attempt_id = 0;
  std::string stage = "unit";      // "unit" (the task's own check), "in_model", ...
  std::string verdict;             // one of the kVerdict* names
  bool flagged = false;            // suspicious (e.g. faster than the roofline); never ranked best
  std::optional<double> speedup;   // over the task's baseline timed in the same session
  std::optional<double> time_ms;   // median time
  std::optional<double> roofline;  // fraction of the speed of light, 0..1
  std::string error_message;       // the main compiler / runtime error, searchable
  std::string error_signature;     // NormalizeError(error_message); filled when empty
  // Everything else as a JSON object: errors, timing statistics, profile metrics, sizes.
  std::string evidence_json = "{}";
  UnixMillis created_at = 0;
  // Filled by the store on reads, from the attempt (denormalized for the ranking queries).
  NodeId task_id = 0;
  NodeId hardware_id = 0;
  std::string op_family;
};

// Where a lesson applies. Empty strings and zero bounds mean "any".
struct InsightScope {
  std::string op_family;
  std::string backend;
  std::string device;
  std::string arch;
  std::string compiler;
  double size_min = 0;  // task sizes the evidence came from, inclusive; 0: unbounded
  double size_max = 0;
};

inline constexpr std::string_view kInsightLesson = "lesson";             // a decision's effect
inline constexpr std::string_view kInsightFailureRule = "failure_rule";  // an error and its fix

struct InsightNode {
  NodeId id = 0;
  std::string key;  // empty on write: InsightKey(kind, scope, classes, text)
  std::string kind = std::string(kInsightLesson);
  std::string text;
  InsightScope scope;
  std::vector<std::string> classes;  // decision classes the lesson is about
  // Maintained by the store from the evidence edges (read-only for writers):
  int64_t support = 0;        // number of supported_by edges
  int64_t contradiction = 0;  // number of contradicted_by edges
  double effect_size = 1.0;   // geometric mean of the supporting edges' effects; 1 without any
  UnixMillis created_at = 0;
  UnixMillis updated_at = 0;
};

enum class EvidenceRelation { kSupportedBy, kContradictedBy };
std::string_view EvidenceRelationName(EvidenceRelation relation);  // "supported_by", ...
Result<EvidenceRelation> ParseEvidenceRelation(std::string_view name);

// insight `supported_by` / `contradicted_by` outcome.
struct EvidenceEdge {
  NodeId insight_id = 0;
  NodeId outcome_id = 0;
  EvidenceRelation relation = EvidenceRelation::kSupportedBy;
  double effect = 1.0;  // the measured factor (e.g. speedup of child over parent), > 0
  UnixMillis created_at = 0;
};

// attempt `used` insight or exemplar attempt: what the attempt's context contained.
struct UsedEdge {
  NodeId attempt_id = 0;
  NodeRef target;                // kind kInsight or kAttempt
  std::string section;           // the context section it was shown in, e.g. "insights"
  double score = 0;              // its ranking score when injected
  int64_t tokens = 0;            // tokens it took
  std::optional<double> credit;  // its share of the credit, once credited
};

// A deployment workload (`kope deploy profile`): its name and the content hash of its normalized
// form (workload.json), so that profiling the same workload again finds the same node.
struct WorkloadNode {
  NodeId id = 0;
  std::string key;  // empty on write: WorkloadKey(name, workload_hash)
  std::string name;
  std::string workload_hash;      // ContentHash of workload.json
  std::string attrs_json = "{}";  // model, dtype, device, request mix, ... as a JSON object
  UnixMillis created_at = 0;
};

// workload `from_workload` task: the task was extracted from the workload's profile.
struct FromWorkloadEdge {
  NodeId workload_id = 0;
  NodeId task_id = 0;
  std::vector<std::string> phases;  // "prefill", "decode": the phases the task's shapes come from
  double weight = 0;  // the task's phase-weighted share of the workload's time, in [0, 1]
  std::string attrs_json = "{}";  // rank, score, Amdahl ceiling, ... as a JSON object
  UnixMillis created_at = 0;
};

// What one validation of `kope deploy` found for a workload: its report (validation.json, format
// kope-validation-1: every candidate tried with its gate and end-to-end figures, the accepted
// patches, the end-to-end figures of all of them together, the artifact). The same report
// recorded twice is one record.
struct DeploymentRecord {
  NodeId id = 0;
  std::string key;  // empty on write: DeploymentKey(workload key, report_json)
  NodeId workload_id = 0;
  std::string report_json = "{}";  // a JSON object
  UnixMillis created_at = 0;
};

// The content-derived keys. Parts are length-prefixed before hashing, so that no two
// different tuples give the same input. Attempt and outcome keys are the first 16 hex digits of
// their run's (resp. attempt's) key followed by 16 of the content hash: one episode's nodes then
// sit together in the key index, which keeps inserts cheap in a large store.
std::string TaskKey(std::string_view name, std::string_view spec_hash);
std::string HardwareKey(std::string_view backend, std::string_view device, std::string_view arch);
std::string WorkloadKey(std::string_view name, std::string_view workload_hash);
std::string DeploymentKey(std::string_view workload_key, std::string_view report_json);
std::string AttemptKey(std::string_view run_key, std::string_view parent_key,
                       std::string_view source_hash, std::string_view decision,
                       std::string_view proposer);
std::string OutcomeKey(std::string_view attempt_key, std::string_view stage,
                       std::string_view verdict, std::string_view evidence_json,
                       std::string_view error_message);
std::string InsightKey(std::string_view kind, const InsightScope& scope,
                       const std::vector<std::string>& classes, std::string_view text);
// A key no other run has: hash of the task and hardware keys, the start time, the process id
// and a process-wide counter.
std::string NewRunKey(std::string_view task_key, std::string_view hardware_key,
                      UnixMillis started_at);

// True for 32 lowercase hex digits.
bool IsValidKey(std::string_view key);

UnixMillis NowMillis();

}  // namespace kope::memory

#endif  // KOPE_MEMORY_MODEL_H_
