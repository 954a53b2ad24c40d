// GraphStore: the experience graph's storage and the queries an optimizer asks of it.
//
// Implementations: the embedded SQLite store (sqlite_store.h), the default; a PostgreSQL store
// for teams and clusters will implement the same interface. Nothing here is specific to SQL.
//
// Writing. All writes happen inside Write(body): the body gets a GraphWriter and runs inside
// one transaction that commits, durably, when the body returns ok and rolls back when it
// returns an error (or throws; the exception is rethrown after the rollback). Several
// processes may write to one store; a writer waits for another's transaction up to the
// store's busy timeout, then gets an Unavailable status. Every Put is an upsert by content
// key: writing a node whose key exists returns the existing node's id and changes nothing.
//
// Reading. Each query sees one consistent snapshot. Queries return plain values and never
// a reference into the store. Lists are ordered as documented, ties broken by node id, so that
// the same graph gives the same answer.
//
// Thread safety: every method may be called from any thread; calls on one GraphStore object are
// serialized. A Write body must use its writer, not the store's Write (a nested Write returns
// FailedPrecondition); it may call the store's queries, which then see the body's own writes.
// Failures are Status values: NotFound for a missing node, InvalidArgument for a write that
// breaks the model (an unknown verdict, a parent that does not exist), Unavailable when the
// store is busy, Corruption when the store's content is damaged, IoError when the OS refuses.
#ifndef KOPE_MEMORY_GRAPH_STORE_H_
#define KOPE_MEMORY_GRAPH_STORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"
#include "kope/memory/model.h"

namespace kope::memory {

// The write side of one transaction. Valid only inside the Write body that received it.
class GraphWriter {
 public:
  virtual ~GraphWriter() = default;

  virtual Result<NodeId> PutTask(const TaskNode& task) = 0;
  virtual Result<NodeId> PutHardware(const HardwareNode& hardware) = 0;
  // The task and hardware must exist.
  virtual Result<NodeId> PutRun(const RunNode& run) = 0;
  // Stores a source once per content hash and returns the hash (ContentHash of the text).
  virtual Result<std::string> PutSource(std::string_view text) = 0;
  // `source` is the attempt's full source; it is stored once per content hash. When `source` is
  // empty and `attempt.source_hash` is set, the stored source with that hash is used (NotFound
  // if there is none). The run and the parent (if any) must exist. The store fills task_id,
  // hardware_id and source_hash, computes the diff from the parent's source when `attempt.diff` is
  // empty, and adds the decision classes that ClassifyDecision finds in the decision and in the
  // added lines of the diff (the whole source for a root).
  virtual Result<NodeId> PutAttempt(const AttemptNode& attempt, std::string_view source) = 0;
  // The attempt must exist; the verdict must be known. error_signature is derived when empty.
  virtual Result<NodeId> PutOutcome(const OutcomeNode& outcome) = 0;
  // Counts and effect size in `insight` are ignored: they come from the evidence edges.
  virtual Result<NodeId> PutInsight(const InsightNode& insight) = 0;
  // Rewords an insight (merging near-duplicates); its key, scope and evidence stay.
  virtual Status UpdateInsightText(NodeId insight, std::string_view text) = 0;
  // Adds the edge and updates the insight's counts and effect size. Returns false (and changes
  // nothing) when the edge between these two nodes exists already.
  virtual Result<bool> AddEvidence(const EvidenceEdge& edge) = 0;
  // Records that `edge.attempt_id`'s context held `edge.target`. Returns false when recorded
  // already. `edge.credit` is normally unset (credit comes from CreditUsed); an imported edge
  // that carries its credit share keeps it.
  virtual Result<bool> AddUsed(const UsedEdge& edge) = 0;
  // Shares `total_credit` (positive: the attempt improved on its parent; negative: it did not)
  // equally among the attempt's used edges that have no credit yet, and returns how many got a
  // share. Crediting an attempt twice changes nothing the second time.
  virtual Result<int> CreditUsed(NodeId attempt, double total_credit) = 0;
  // The id of the node with this key, or NotFound.
  virtual Result<NodeId> FindByKey(NodeKind kind, std::string_view key) = 0;
  virtual Result<NodeId> PutWorkload(const WorkloadNode& workload) = 0;
  // The workload and the task must exist. Returns false (and changes nothing) when the edge
  // between these two nodes exists already.
  virtual Result<bool> AddFromWorkload(const FromWorkloadEdge& edge) = 0;
  // The workload must exist and the report be a JSON object. The same report of the same
  // workload recorded again returns the record's id and changes nothing.
  virtual Result<NodeId> AddDeployment(const DeploymentRecord& deployment) = 0;
};

// An attempt with one of its outcomes: the latest one, or the one a ranking query ranked.
struct AttemptView {
  AttemptNode attempt;
  std::optional<OutcomeNode> outcome;
};

// Best valid attempts: outcomes with verdict "valid", not flagged and with a speedup, ranked by
// speedup (descending), one row per attempt. At least one filter must be set.
struct BestQuery {
  NodeId task_id = 0;      // 0: any
  std::string op_family;   // "": any
  NodeId hardware_id = 0;  // 0: any
  int limit = 10;
};

// How much an insight's scope counts for a query's scope (a factor in (0, 1]). The defaults are
// documented in docs/MEMORY_MODEL.md; evidence from another architecture counts, but for less.
struct ScopeWeights {
  double general_family = 0.7;  // the insight names no op family
  double same_device = 1.0;
  double same_arch = 0.8;     // another device of the same architecture
  double any_hardware = 0.8;  // the insight names no device and no architecture
  double other_arch = 0.4;
  double other_compiler = 0.9;
  // Outside the insight's size range: 1 / (1 + size_decay * decades from the nearest bound).
  double size_decay = 1.0;
};

// Insights that apply to a state: those of the op family and the general ones, on compatible
// hardware (a different backend is excluded).
struct InsightQuery {
  std::string op_family;
  std::string backend;
  std::string device;
  std::string arch;
  std::string compiler;
  double size = 0;                   // the task's size; 0: do not weigh by size
  std::vector<std::string> kinds;    // e.g. {"lesson"}; empty: all
  std::vector<std::string> classes;  // keep insights about any of these classes; empty: all
  int limit = 20;
  ScopeWeights weights;
};

struct RankedInsight {
  InsightNode insight;
  double evidence = 0;      // InsightEvidence(insight): confidence bound times effect size
  double scope_weight = 0;  // how well its scope fits the query
  double score = 0;         // evidence * scope_weight; the order of the result (descending)
};

enum class SearchKind { kAttempt, kInsight, kError, kTask };
std::string_view SearchKindName(SearchKind kind);  // "attempt", "insight", "error", "task"

// Full-text search (stemmed words, BM25 ranking) over attempt decisions and classes, insight
// texts, error messages of outcomes and task names and descriptions. For each kind, the most
// recent `window` matches are ranked (so that a common word costs the same in a large store as
// in a small one); the op family filter applies after ranking.
struct SearchQuery {
  std::string text;               // free text; its words are searched, punctuation is ignored
  bool match_all = true;          // every word (true) or any word (false)
  std::vector<SearchKind> kinds;  // empty: all four
  std::string op_family;          // "": any
  int limit = 20;
  int window = 500;  // matches ranked per kind, the newest (at least `limit`)
};

struct SearchHit {
  SearchKind kind = SearchKind::kAttempt;
  NodeRef node;          // the attempt, insight, outcome or task
  double relevance = 0;  // higher is better (negated BM25)
  std::string text;      // the matched text, shortened to one line
};

struct SimilarTask {
  TaskNode task;
  double score = 0;  // family, size (log distance) and text similarity, in [0, 1]
};

// Credit of one item that contexts have held (UsedEdge targets).
struct UsageStats {
  NodeRef target;
  int64_t shown = 0;     // contexts that held it
  int64_t credited = 0;  // of those, how many were credited
  double credit = 0;     // sum of its credit shares
};

struct StoreStats {
  int schema_version = 0;
  int64_t tasks = 0, hardware = 0, runs = 0, attempts = 0, outcomes = 0, insights = 0;
  int64_t sources = 0, source_bytes = 0;
  int64_t evidence_edges = 0, used_edges = 0;
  int64_t workloads = 0, from_workload_edges = 0, deployments = 0;
  int64_t valid_outcomes = 0;
  int64_t store_bytes = 0;  // on disk, including the write-ahead log
  std::string location;
};

// What to export: the whole graph, or one op family's closed subgraph (its tasks, their runs,
// attempts and outcomes, the ancestors of those attempts, the family's insights and the
// outcomes their evidence points at, and every node these refer to).
struct ExportFilter {
  std::string op_family;  // "": everything
};

// Workloads, their from_workload edges and their deployments are not exported yet.
// Receives an export, record by record, in an order where every reference points to a record
// sent earlier: tasks, hardware, runs, the sources of the attempts, attempts (parents before
// children), outcomes, insights, evidence edges, used edges. Nodes come with their store ids, so
// that a sink can resolve references. A non-ok return stops the export.
class GraphSink {
 public:
  virtual ~GraphSink() = default;
  virtual Status OnTask(const TaskNode& node) = 0;
  virtual Status OnHardware(const HardwareNode& node) = 0;
  virtual Status OnRun(const RunNode& node) = 0;
  virtual Status OnSource(std::string_view hash, std::string_view text) = 0;
  virtual Status OnAttempt(const AttemptNode& node) = 0;
  virtual Status OnOutcome(const OutcomeNode& node) = 0;
  virtual Status OnInsight(const InsightNode& node) = 0;
  virtual Status OnEvidence(const EvidenceEdge& edge) = 0;
  virtual Status OnUsed(const UsedEdge& edge) = 0;
};

class GraphStore {
 public:
  virtual ~GraphStore() = default;

  // Runs `body` in one durable write transaction; see the header comment.
  virtual Status Write(const std::function<Status(GraphWriter&)>& body) = 0;

  // Single nodes by id (NotFound when absent).
  virtual Result<TaskNode> GetTask(NodeId id) = 0;
  virtual Result<HardwareNode> GetHardware(NodeId id) = 0;
  virtual Result<RunNode> GetRun(NodeId id) = 0;
  virtual Result<AttemptNode> GetAttempt(NodeId id) = 0;
  virtual Result<OutcomeNode> GetOutcome(NodeId id) = 0;
  virtual Result<InsightNode> GetInsight(NodeId id) = 0;
  // The source with this content hash (NotFound when absent).
  virtual Result<std::string> GetSource(std::string_view hash) = 0;
  virtual Result<NodeId> FindByKey(NodeKind kind, std::string_view key) = 0;

  // Tasks of one op family ("" for all), by id.
  virtual Result<std::vector<TaskNode>> ListTasks(std::string_view op_family) = 0;
  virtual Result<std::vector<HardwareNode>> ListHardware() = 0;
  // Runs of a task (0 for all), by id.
  virtual Result<std::vector<RunNode>> ListRuns(NodeId task_id) = 0;

  // Question 2, how did I get here: the attempts from the root to `attempt` (inclusive), root
  // first, each with its latest outcome.
  virtual Result<std::vector<AttemptView>> Lineage(NodeId attempt) = 0;
  // Question 1, what was tried from here: the attempts derived from `attempt`, by id, each with
  // its latest outcome.
  virtual Result<std::vector<AttemptView>> Children(NodeId attempt) = 0;
  // Every attempt of a run, by id, each with its latest outcome (for resuming an episode).
  virtual Result<std::vector<AttemptView>> RunAttempts(NodeId run) = 0;
  // Every outcome of an attempt, by id.
  virtual Result<std::vector<OutcomeNode>> Outcomes(NodeId attempt) = 0;
  // Attempts of this task on this hardware whose source has this hash, by id (so that a
  // candidate is not evaluated twice).
  virtual Result<std::vector<AttemptView>> AttemptsWithSource(NodeId task_id, NodeId hardware_id,
                                                              std::string_view source_hash) = 0;
  // Question 3, what worked: see BestQuery.
  virtual Result<std::vector<AttemptView>> BestAttempts(const BestQuery& query) = 0;
  // Question 3, the lessons: see InsightQuery.
  virtual Result<std::vector<RankedInsight>> FindInsights(const InsightQuery& query) = 0;
  // Question 4, what breaks: the most recent attempts whose outcome has this error signature
  // (NormalizeError), newest first, each with that outcome; `op_family` "" for any family.
  virtual Result<std::vector<AttemptView>> AttemptsWithError(std::string_view error_signature,
                                                             std::string_view op_family,
                                                             int limit) = 0;
  virtual Result<std::vector<SearchHit>> Search(const SearchQuery& query) = 0;
  // How well each of `ids` (nodes of one kind: attempts by decision and classes, insights by
  // text, outcomes (kError) by error message, tasks by name and description) matches `text`: the
  // LexicalBm25 of text_similarity.h over these candidates, in the order given (0 for no shared
  // word or a missing node). For re-ranking candidates that other queries found by similarity to
  // the task and the current code; costs about the number of candidates, not the store's size.
  virtual Result<std::vector<double>> TextRelevance(SearchKind kind, const std::vector<NodeId>& ids,
                                                    std::string_view text) = 0;
  // Tasks like `task` (itself excluded), best first: same op family, size close on a log scale,
  // similar name and description words.
  virtual Result<std::vector<SimilarTask>> SimilarTasks(NodeId task, int limit) = 0;
  // The evidence edges of an insight, by outcome id.
  virtual Result<std::vector<EvidenceEdge>> Evidence(NodeId insight) = 0;
  // Question 5, what helped: the items `attempt`'s context held, and the credit of items.
  virtual Result<std::vector<UsedEdge>> UsedBy(NodeId attempt) = 0;
  virtual Result<std::vector<UsageStats>> Usage(const std::vector<NodeRef>& targets) = 0;

  // Deployment workloads (NotFound when absent), all of them by id, and the tasks extracted
  // from one (its from_workload edges, by task id) or the workloads a task came from (by
  // workload id).
  virtual Result<WorkloadNode> GetWorkload(NodeId id) = 0;
  virtual Result<std::vector<WorkloadNode>> ListWorkloads() = 0;
  virtual Result<std::vector<FromWorkloadEdge>> WorkloadTasks(NodeId workload) = 0;
  virtual Result<std::vector<FromWorkloadEdge>> TaskWorkloads(NodeId task) = 0;
  // The deployment reports recorded for a workload, oldest first.
  virtual Result<std::vector<DeploymentRecord>> WorkloadDeployments(NodeId workload) = 0;

  // Streams the graph (or a family's subgraph) to `sink` from one snapshot.
  virtual Status Export(const ExportFilter& filter, GraphSink& sink) = 0;

  virtual Result<StoreStats> Stats() = 0;
  // A full consistency check of the stored data (slow on large stores).
  virtual Status CheckIntegrity() = 0;
};

}  // namespace kope::memory

#endif  // KOPE_MEMORY_GRAPH_STORE_H_
