// Retrieval of candidate items from the experience graph (MEMORY.md's five questions).
#include "retrieval.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "kope/memory/evidence.h"
#include "text.h"

namespace kope::context::internal {
namespace {

using memory::AttemptView;
using memory::NodeId;
using memory::NodeKind;

// How many of each the store is asked for.
constexpr int kMaxLineage = 64;
constexpr int kInsightLimit = 40;
constexpr int kInsightSearchLimit = 10;
constexpr int kInsightSearchWindow = 100;
constexpr size_t kInsightSearchWords = 12;
constexpr int kSimilarTasks = 4;
constexpr int kExemplarsPerTask = 2;
constexpr int kExemplarsSameTask = 6;
constexpr int kExemplarsPerFamily = 10;
constexpr int kErrorSignatures = 3;
constexpr int kErrorsPerSignature = 6;
constexpr int kFixesPerSignature = 3;

bool Failed(const std::optional<memory::OutcomeNode>& o) {
  return o.has_value() && o->verdict != memory::kVerdictValid;
}

double SizeFactor(double a, double b) {
  if (a <= 0 || b <= 0) return 0.5;
  return 1.0 / (1.0 + std::abs(std::log10(a) - std::log10(b)));
}

// Tasks and hardware nodes looked up once per context.
class NodeCache {
 public:
  explicit NodeCache(memory::GraphStore& store) : store_(store) {}
  Result<const memory::TaskNode*> Task(NodeId id) {
    auto it = tasks_.find(id);
    if (it == tasks_.end()) {
      KOPE_ASSIGN_OR_RETURN(memory::TaskNode t, store_.GetTask(id));
      it = tasks_.emplace(id, std::move(t)).first;
    }
    return &it->second;
  }
  Result<const memory::HardwareNode*> Hardware(NodeId id) {
    auto it = hardware_.find(id);
    if (it == hardware_.end()) {
      KOPE_ASSIGN_OR_RETURN(memory::HardwareNode h, store_.GetHardware(id));
      it = hardware_.emplace(id, std::move(h)).first;
    }
    return &it->second;
  }

 private:
  memory::GraphStore& store_;
  std::map<NodeId, memory::TaskNode> tasks_;
  std::map<NodeId, memory::HardwareNode> hardware_;
};

class Retriever {
 public:
  Retriever(memory::GraphStore& store, State& state)
      : store_(store), state_(state), nodes_(store) {}

  Result<std::vector<Candidate>> Run() {
    for (const AttemptView& v : state_.lineage) shown_.insert(v.attempt.id);
    AddLineage();
    KOPE_RETURN_IF_ERROR(AddAlternatives());
    KOPE_RETURN_IF_ERROR(AddBest());
    KOPE_RETURN_IF_ERROR(AddInsights());
    KOPE_RETURN_IF_ERROR(AddFixes());  // before the exemplars: a fix is shown as a fix
    KOPE_RETURN_IF_ERROR(AddExemplars());
    for (const Candidate& c : out_) state_.now = std::max(state_.now, c.time);
    return std::move(out_);
  }

 private:
  Candidate FromAttempt(Section section, std::string kind, const AttemptView& view) {
    Candidate c;
    c.section = section;
    c.kind = std::move(kind);
    c.node = {NodeKind::kAttempt, view.attempt.id};
    c.attempt = view;
    c.time = view.attempt.created_at;
    std::string text = view.attempt.decision;
    for (const std::string& cls : view.attempt.classes) text += " " + cls;
    c.words = Words(text);
    c.order = view.attempt.id;
    return c;
  }

  void AddLineage() {
    const int n = static_cast<int>(state_.lineage.size());
    for (int i = std::max(0, n - 1 - kMaxLineage); i + 1 < n; ++i) {
      Candidate c = FromAttempt(Section::kLineage, "step", state_.lineage[i]);
      c.depth = n - 1 - i;
      c.order = i;
      if (i > 0 && state_.lineage[i - 1].outcome) {
        c.parent_speedup = state_.lineage[i - 1].outcome->speedup;
      }
      out_.push_back(std::move(c));
    }
  }

  Status AddAlternatives() {
    if (!state_.node) return Status::Ok();
    KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> children,
                          store_.Children(state_.node->attempt.id));
    for (const AttemptView& child : children) {
      Candidate c = FromAttempt(Section::kAlternatives, "alternative", child);
      if (state_.node->outcome) c.parent_speedup = state_.node->outcome->speedup;
      shown_.insert(child.attempt.id);
      out_.push_back(std::move(c));
    }
    return Status::Ok();
  }

  Status AddBest() {
    if (state_.task_id == 0) return Status::Ok();
    memory::BestQuery q;
    q.task_id = state_.task_id;
    q.hardware_id = state_.hardware_id;
    q.limit = 1;
    KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> best, store_.BestAttempts(q));
    if (best.empty()) return Status::Ok();
    Candidate c = FromAttempt(Section::kProfile, "best", best.front());
    c.evidence = 1.0;
    out_.push_back(std::move(c));
    return Status::Ok();
  }

  memory::InsightQuery InsightScopeQuery() const {
    memory::InsightQuery q;
    q.op_family = state_.family;
    q.backend = state_.hardware.backend;
    q.device = state_.hardware.device;
    q.arch = state_.hardware.architecture;
    q.compiler = state_.hardware.compiler;
    q.size = state_.size;
    q.limit = kInsightLimit;
    return q;
  }

  Candidate FromInsight(const memory::InsightNode& insight, double scope_weight, double evidence) {
    Candidate c;
    c.section =
        insight.kind == memory::kInsightFailureRule ? Section::kFailureRules : Section::kInsights;
    c.kind = insight.kind == memory::kInsightFailureRule ? "failure_rule" : "insight";
    c.node = {NodeKind::kInsight, insight.id};
    c.insight = insight;
    c.relevance = scope_weight;
    c.evidence = evidence;
    c.time = std::max(insight.created_at, insight.updated_at);
    std::string text = insight.text;
    for (const std::string& cls : insight.classes) text += " " + cls;
    c.words = Words(text);
    c.order = insight.id;
    return c;
  }

  // Insights in scope (FindInsights, ranked by evidence and scope), and those whose words match
  // the state (FTS5 search over the newest matches) that are in scope too; their text
  // similarity is computed later, over all of them alike.
  Status AddInsights() {
    const memory::InsightQuery q = InsightScopeQuery();
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::RankedInsight> ranked, store_.FindInsights(q));
    std::set<NodeId> seen;
    for (const memory::RankedInsight& r : ranked) {
      seen.insert(r.insight.id);
      out_.push_back(FromInsight(r.insight, r.scope_weight, r.evidence));
    }
    // Only a truncated answer can miss insights in scope that the text search would find.
    if (state_.search_words.empty() || static_cast<int>(ranked.size()) < q.limit) {
      return Status::Ok();
    }
    memory::SearchQuery search;
    for (size_t i = 0; i < state_.search_words.size() && i < kInsightSearchWords; ++i) {
      search.text += state_.search_words[i] + " ";
    }
    search.match_all = false;
    search.kinds = {memory::SearchKind::kInsight};
    search.op_family = state_.family;
    search.limit = kInsightSearchLimit;
    search.window = kInsightSearchWindow;
    KOPE_ASSIGN_OR_RETURN(std::vector<memory::SearchHit> hits, store_.Search(search));
    for (const memory::SearchHit& h : hits) {
      if (!seen.insert(h.node.id).second) continue;
      KOPE_ASSIGN_OR_RETURN(memory::InsightNode insight, store_.GetInsight(h.node.id));
      const double weight = memory::ScopeWeight(insight.scope, q);
      if (weight <= 0) continue;
      out_.push_back(FromInsight(insight, weight, memory::InsightEvidence(insight)));
    }
    return Status::Ok();
  }

  // How well hardware `id` fits the target: 1 the same, 0.8 the same architecture, 0.5 the same
  // backend; 0 another backend (its code would not run).
  Result<double> HardwareFactor(NodeId id) {
    if (id == state_.hardware_id && id != 0) return 1.0;
    KOPE_ASSIGN_OR_RETURN(const memory::HardwareNode* h, nodes_.Hardware(id));
    if (h->backend != state_.hardware.backend) return 0.0;
    if (h->device == state_.hardware.device && h->arch == state_.hardware.architecture) return 1.0;
    return h->arch == state_.hardware.architecture ? 0.8 : 0.5;
  }

  Status AddExemplar(const AttemptView& view, double task_similarity) {
    if (!view.outcome || !view.outcome->speedup) return Status::Ok();
    if (!shown_.insert(view.attempt.id).second) return Status::Ok();
    KOPE_ASSIGN_OR_RETURN(double hardware, HardwareFactor(view.attempt.hardware_id));
    if (hardware <= 0) return Status::Ok();
    KOPE_ASSIGN_OR_RETURN(const memory::TaskNode* task, nodes_.Task(view.attempt.task_id));
    KOPE_ASSIGN_OR_RETURN(const memory::HardwareNode* hw,
                          nodes_.Hardware(view.attempt.hardware_id));
    Candidate c = FromAttempt(Section::kExemplars, "exemplar", view);
    if (task_similarity < 0) {  // not from SimilarTasks: family and size only
      task_similarity = 0.5 * (task->op_family == state_.family ? 1.0 : 0.0) +
                        0.3 * SizeFactor(task->size, state_.size);
    }
    c.relevance = task_similarity * hardware;
    const double speedup = std::max(0.0, *view.outcome->speedup);
    const double roofline =
        view.outcome->roofline ? 0.75 + 0.5 * std::clamp(*view.outcome->roofline, 0.0, 1.0) : 1.0;
    c.evidence = 0.5 * std::log2(1.0 + speedup) * roofline;  // 1 at 3x, like a strong lesson
    c.origin = task->name + " (" + task->op_family + ", " + HumanCount(task->size) + " elements, " +
               hw->device + ")";
    c.words = UnionWords(c.words, Words(task->name + " " + task->op_family));
    out_.push_back(std::move(c));
    return Status::Ok();
  }

  Status AddExemplars() {
    memory::BestQuery q;
    if (state_.task_id != 0) {
      q.task_id = state_.task_id;
      q.hardware_id = state_.hardware_id;
      q.limit = kExemplarsSameTask;
      KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> own, store_.BestAttempts(q));
      for (const AttemptView& v : own) KOPE_RETURN_IF_ERROR(AddExemplar(v, 1.0));
      KOPE_ASSIGN_OR_RETURN(std::vector<memory::SimilarTask> similar,
                            store_.SimilarTasks(state_.task_id, kSimilarTasks));
      for (const memory::SimilarTask& s : similar) {
        q.task_id = s.task.id;
        q.limit = kExemplarsPerTask;
        KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> best, store_.BestAttempts(q));
        for (const AttemptView& v : best) KOPE_RETURN_IF_ERROR(AddExemplar(v, s.score));
      }
    }
    if (state_.family.empty()) return Status::Ok();
    q = memory::BestQuery();
    q.op_family = state_.family;
    q.limit = kExemplarsPerFamily;
    if (state_.hardware_id != 0) {
      q.hardware_id = state_.hardware_id;
      KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> here, store_.BestAttempts(q));
      for (const AttemptView& v : here) KOPE_RETURN_IF_ERROR(AddExemplar(v, -1));
      q.hardware_id = 0;
    }
    KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> anywhere, store_.BestAttempts(q));
    for (const AttemptView& v : anywhere) KOPE_RETURN_IF_ERROR(AddExemplar(v, -1));
    return Status::Ok();
  }

  // Errors this state has met (the node's, its failed alternatives'), and where the same error
  // was met before, the first valid change made from the failed attempt: the fix.
  Status AddFixes() {
    std::vector<std::string> signatures;
    auto add = [&](const std::optional<memory::OutcomeNode>& o) {
      if (!Failed(o) || o->error_signature.empty()) return;
      if (std::find(signatures.begin(), signatures.end(), o->error_signature) != signatures.end()) {
        return;
      }
      if (static_cast<int>(signatures.size()) < kErrorSignatures) {
        signatures.push_back(o->error_signature);
      }
    };
    if (state_.node) add(state_.node->outcome);
    for (const Candidate& c : out_) {
      if (c.section == Section::kAlternatives) add(c.attempt->outcome);
    }
    const std::string node_error =
        state_.node && Failed(state_.node->outcome) ? state_.node->outcome->error_signature : "";
    for (const std::string& signature : signatures) {
      KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> failed,
                            store_.AttemptsWithError(signature, "", kErrorsPerSignature));
      int fixes = 0;
      for (const AttemptView& f : failed) {
        if (fixes >= kFixesPerSignature) break;
        KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> children, store_.Children(f.attempt.id));
        for (const AttemptView& child : children) {
          if (!child.outcome || child.outcome->verdict != memory::kVerdictValid) continue;
          if (shown_.count(child.attempt.id) != 0) break;
          KOPE_ASSIGN_OR_RETURN(double hardware, HardwareFactor(child.attempt.hardware_id));
          if (hardware <= 0) break;
          shown_.insert(child.attempt.id);
          Candidate c = FromAttempt(Section::kFailureRules, "fix", child);
          c.error = signature;
          c.failed_attempt = f.attempt.id;
          const double family = f.outcome && f.outcome->op_family == state_.family ? 1.0 : 0.6;
          c.relevance = family * hardware * (signature == node_error ? 1.0 : 0.8);
          c.evidence = 1.0;
          c.words = UnionWords(c.words, Words(signature));
          out_.push_back(std::move(c));
          ++fixes;
          break;
        }
      }
    }
    return Status::Ok();
  }

  memory::GraphStore& store_;
  State& state_;
  NodeCache nodes_;
  std::vector<Candidate> out_;
  std::set<NodeId> shown_;  // attempts already held by a candidate (or the lineage)
};

}  // namespace

Result<std::vector<Candidate>> Retrieve(memory::GraphStore& store, State& state) {
  return Retriever(store, state).Run();
}

}  // namespace kope::context::internal
