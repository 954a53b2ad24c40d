// Graph queries of the PostgreSQL store: lineage, alternatives, best attempts, insights, errors,
// evidence and usage.
#include <algorithm>

#include "kope/memory/evidence.h"
#include "pg_store_impl.h"

namespace kope::memory::postgres {
namespace {

const std::string& OutcomeSelect() {
  static const std::string sql = "SELECT " + std::string(kOutcomeColumns) + " FROM outcomes o ";
  return sql;
}

// The condition of the partial indexes that rank valid outcomes.
constexpr std::string_view kRankable =
    " o.verdict = 'valid' AND o.flagged = 0 AND o.speedup IS NOT NULL ";

}  // namespace

Result<std::optional<OutcomeNode>> PostgresStore::LatestOutcome(NodeId attempt) {
  static const std::string sql =
      OutcomeSelect() + "WHERE o.attempt_id = ? ORDER BY o.id DESC LIMIT 1";
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
  q.Bind(1, attempt);
  KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return std::optional<OutcomeNode>();
  return std::optional<OutcomeNode>(ReadOutcome(q, 0));
}

Result<std::vector<AttemptView>> PostgresStore::ViewsOf(const std::vector<NodeId>& attempt_ids) {
  std::vector<AttemptView> views;
  views.reserve(attempt_ids.size());
  for (NodeId id : attempt_ids) {
    AttemptView view;
    KOPE_ASSIGN_OR_RETURN(view.attempt, LoadAttempt(id));
    KOPE_ASSIGN_OR_RETURN(view.outcome, LatestOutcome(id));
    views.push_back(std::move(view));
  }
  return views;
}

Result<std::vector<AttemptView>> PostgresStore::SelectViews(std::string_view sql, NodeId id) {
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  std::vector<NodeId> ids;
  {
    KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
    q.Bind(1, id);
    KOPE_ASSIGN_OR_RETURN(ids, ReadIds(q));
  }
  return ViewsOf(ids);
}

Result<std::vector<AttemptView>> PostgresStore::Lineage(NodeId attempt) {
  std::lock_guard lock(mu_);
  KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> views,
                        SelectViews("WITH RECURSIVE chain(id, parent, depth) AS ("
                                    " SELECT id, parent_id, 0 FROM attempts WHERE id = ?"
                                    " UNION ALL SELECT a.id, a.parent_id, c.depth + 1"
                                    " FROM attempts a JOIN chain c ON a.id = c.parent"
                                    " WHERE c.depth < 1000000)"
                                    " SELECT id FROM chain ORDER BY depth DESC",
                                    attempt));
  if (views.empty()) return Status::NotFound("no " + FormatNodeRef({NodeKind::kAttempt, attempt}));
  return views;
}

Result<std::vector<AttemptView>> PostgresStore::Children(NodeId attempt) {
  std::lock_guard lock(mu_);
  return SelectViews("SELECT id FROM attempts WHERE parent_id = ? ORDER BY id", attempt);
}

Result<std::vector<AttemptView>> PostgresStore::RunAttempts(NodeId run) {
  std::lock_guard lock(mu_);
  return SelectViews("SELECT id FROM attempts WHERE run_id = ? ORDER BY id", run);
}

Result<std::vector<OutcomeNode>> PostgresStore::Outcomes(NodeId attempt) {
  std::lock_guard lock(mu_);
  static const std::string sql = OutcomeSelect() + "WHERE o.attempt_id = ? ORDER BY o.id";
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
  q.Bind(1, attempt);
  std::vector<OutcomeNode> out;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    out.push_back(ReadOutcome(q, 0));
  }
}

Result<std::vector<AttemptView>> PostgresStore::AttemptsWithSource(NodeId task_id,
                                                                   NodeId hardware_id,
                                                                   std::string_view source_hash) {
  std::lock_guard lock(mu_);
  if (!IsValidKey(source_hash)) {
    return Status::InvalidArgument("bad source hash '" + std::string(source_hash) + "'");
  }
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  std::vector<NodeId> ids;
  {
    KOPE_ASSIGN_OR_RETURN(
        Query q, db_->Prepare("SELECT a.id FROM attempts a WHERE a.source_id = (SELECT id FROM "
                              "sources WHERE hash = ?) AND a.task_id = ? AND a.hardware_id = ? "
                              "ORDER BY a.id"));
    q.BindBlob(1, KeyToBlob(source_hash)).Bind(2, task_id).Bind(3, hardware_id);
    KOPE_ASSIGN_OR_RETURN(ids, ReadIds(q));
  }
  return ViewsOf(ids);
}

namespace {

// The best `limit` attempts of ranked lists of outcomes (best speedup first, then the older
// outcome), each attempt once, with its best outcome.
class AttemptRanking {
 public:
  struct Ranked {
    double speedup;
    NodeId outcome;
    NodeId attempt;
  };

  explicit AttemptRanking(int limit) : limit_(limit) {}

  // Reads one list (rows of speedup, outcome id, attempt id) in ranking order; when merging and
  // `limit` attempts are already ranked, stops at the first row that ranks below all of them
  // (the rest of the list ranks lower still).
  Status Take(Query& q, bool merging) {
    const size_t ranked_before = ranked_.size();
    std::vector<NodeId> seen;
    while (static_cast<int>(seen.size()) < limit_) {
      KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      const Ranked r{q.Double(0), q.Int(1), q.Int(2)};
      if (merging && static_cast<int>(ranked_before) >= limit_ &&
          !Better(r, ranked_[ranked_before - 1])) {
        break;
      }
      if (std::find(seen.begin(), seen.end(), r.attempt) != seen.end()) continue;
      seen.push_back(r.attempt);
      ranked_.push_back(r);
    }
    if (merging) {
      std::sort(ranked_.begin(), ranked_.end(), Better);
      if (static_cast<int>(ranked_.size()) > limit_) ranked_.resize(std::max(0, limit_));
    }
    return Status::Ok();
  }

  const std::vector<Ranked>& ranked() const { return ranked_; }

 private:
  static bool Better(const Ranked& a, const Ranked& b) {
    if (a.speedup != b.speedup) return a.speedup > b.speedup;
    return a.outcome < b.outcome;
  }

  int limit_;
  std::vector<Ranked> ranked_;  // merging: the best `limit` so far, in ranking order
};

// The (hardware, family) lists whose merge ranks a family on any hardware, a hardware for any
// family, or one family on one hardware.
Result<std::vector<std::pair<NodeId, std::string>>> RankingLists(Db& db, const BestQuery& query) {
  std::vector<std::pair<NodeId, std::string>> lists;
  if (!query.op_family.empty() && query.hardware_id != 0) {
    lists.emplace_back(query.hardware_id, query.op_family);
  } else if (!query.op_family.empty()) {
    KOPE_ASSIGN_OR_RETURN(Query q, db.Prepare("SELECT id FROM hardware ORDER BY id"));
    KOPE_ASSIGN_OR_RETURN(std::vector<NodeId> hardware, ReadIds(q));
    for (NodeId id : hardware) lists.emplace_back(id, query.op_family);
  } else {
    // Outcomes carry their task's family, so the tasks' families are all the lists there are.
    KOPE_ASSIGN_OR_RETURN(Query q,
                          db.Prepare("SELECT DISTINCT op_family FROM tasks ORDER BY op_family"));
    while (true) {
      KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      lists.emplace_back(query.hardware_id, q.Text(0));
    }
  }
  return lists;
}

}  // namespace

Result<std::vector<AttemptView>> PostgresStore::BestAttempts(const BestQuery& query) {
  std::lock_guard lock(mu_);
  if (query.task_id == 0 && query.op_family.empty() && query.hardware_id == 0) {
    return Status::InvalidArgument("BestAttempts needs a task, an op family or a hardware");
  }
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  // A task's list (outcomes_best_task) and a family's list on one hardware
  // (outcomes_best_hardware_family) are read in ranking order, one row per attempt, until `limit`
  // attempts. A family on any hardware and a hardware for any family have no index of their own
  // (two fewer index entries per outcome written): their ranking merges the family's lists over
  // the hardware, or the hardware's lists over the families. Every outcome of an attempt lies in
  // one list (an attempt has one task, hence one family and one hardware), so the best `limit`
  // attempts of each list hold the best `limit` attempts overall, each with its best outcome.
  AttemptRanking ranking(query.limit);
  static const std::string select =
      "SELECT o.speedup, o.id, o.attempt_id FROM outcomes o WHERE" + std::string(kRankable);
  static const std::string by_task = select +
                                     "AND o.task_id = ?1 AND (?2 = 0 OR o.hardware_id = ?2) "
                                     "ORDER BY o.speedup DESC, o.id";
  static const std::string by_list =
      select + "AND o.hardware_id = ?1 AND o.op_family = ?2 ORDER BY o.speedup DESC, o.id";
  if (query.task_id != 0) {
    KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(by_task));
    q.Bind(1, query.task_id).Bind(2, query.hardware_id);
    KOPE_RETURN_IF_ERROR(ranking.Take(q, false));
  } else {
    KOPE_ASSIGN_OR_RETURN(auto lists, RankingLists(*db_, query));
    for (const auto& [hardware, family] : lists) {
      KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(by_list));
      q.Bind(1, hardware).Bind(2, family);
      KOPE_RETURN_IF_ERROR(ranking.Take(q, lists.size() > 1));
    }
  }
  static const std::string outcome_sql = OutcomeSelect() + "WHERE o.id = ?";
  std::vector<AttemptView> out;
  out.reserve(ranking.ranked().size());
  for (const AttemptRanking::Ranked& r : ranking.ranked()) {
    AttemptView view;
    KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(outcome_sql));
    q.Bind(1, r.outcome);
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return Status::Internal("a ranked outcome vanished");
    view.outcome = ReadOutcome(q, 0);
    KOPE_ASSIGN_OR_RETURN(view.attempt, LoadAttempt(r.attempt));
    out.push_back(std::move(view));
  }
  return out;
}

Result<std::vector<RankedInsight>> PostgresStore::FindInsights(const InsightQuery& query) {
  std::lock_guard lock(mu_);
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  // First the scores, from the covering index alone; then the full rows of the best.
  struct Scored {
    NodeId id;
    double evidence, weight, score;
  };
  std::vector<Scored> scored;
  {
    KOPE_ASSIGN_OR_RETURN(
        Query q, db_->Prepare("SELECT i.id, i.kind, i.op_family, i.backend, i.device, i.arch, "
                              "i.compiler, i.size_min, i.size_max, i.classes, i.support, "
                              "i.contradiction, i.effect_size FROM insights i "
                              "WHERE i.op_family = ?1 OR i.op_family = ''"));
    q.Bind(1, query.op_family);
    InsightNode i;
    while (true) {
      KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      std::string_view kind = q.TextView(1);
      if (!query.kinds.empty() &&
          std::find(query.kinds.begin(), query.kinds.end(), kind) == query.kinds.end()) {
        continue;
      }
      if (!query.classes.empty()) {
        std::vector<std::string> classes = SplitClasses(q.TextView(9));
        if (std::none_of(classes.begin(), classes.end(), [&](const std::string& c) {
              return std::find(query.classes.begin(), query.classes.end(), c) !=
                     query.classes.end();
            })) {
          continue;
        }
      }
      i.scope.op_family = q.TextView(2);
      i.scope.backend = q.TextView(3);
      i.scope.device = q.TextView(4);
      i.scope.arch = q.TextView(5);
      i.scope.compiler = q.TextView(6);
      i.scope.size_min = q.Double(7);
      i.scope.size_max = q.Double(8);
      i.support = q.Int(10);
      i.contradiction = q.Int(11);
      i.effect_size = q.Double(12);
      const double weight = ScopeWeight(i.scope, query);
      if (weight <= 0) continue;
      const double evidence = InsightEvidence(i);
      scored.push_back({q.Int(0), evidence, weight, evidence * weight});
    }
  }
  const size_t keep = std::min(scored.size(), static_cast<size_t>(std::max(0, query.limit)));
  std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(keep),
                    scored.end(), [](const Scored& a, const Scored& b) {
                      if (a.score != b.score) return a.score > b.score;
                      return a.id < b.id;
                    });
  std::vector<RankedInsight> ranked;
  ranked.reserve(keep);
  for (size_t k = 0; k < keep; ++k) {
    RankedInsight r;
    KOPE_ASSIGN_OR_RETURN(r.insight, GetInsight(scored[k].id));
    r.evidence = scored[k].evidence;
    r.scope_weight = scored[k].weight;
    r.score = scored[k].score;
    ranked.push_back(std::move(r));
  }
  return ranked;
}

Result<std::vector<AttemptView>> PostgresStore::AttemptsWithError(std::string_view error_signature,
                                                                  std::string_view op_family,
                                                                  int limit) {
  std::lock_guard lock(mu_);
  static const std::string sql =
      OutcomeSelect() +
      "WHERE o.error_signature = ?1 AND o.error_signature <> '' AND (?2 = '' OR o.op_family = ?2) "
      "ORDER BY o.id DESC LIMIT ?3";
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
  q.Bind(1, error_signature).Bind(2, op_family).Bind(3, std::max(0, limit));
  std::vector<AttemptView> out;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    AttemptView view;
    view.outcome = ReadOutcome(q, 0);
    KOPE_ASSIGN_OR_RETURN(view.attempt, LoadAttempt(view.outcome->attempt_id));
    out.push_back(std::move(view));
  }
}

Result<std::vector<EvidenceEdge>> PostgresStore::Evidence(NodeId insight) {
  std::lock_guard lock(mu_);
  KOPE_ASSIGN_OR_RETURN(
      Query q, db_->Prepare("SELECT insight_id, outcome_id, relation, effect, created_at FROM "
                            "insight_evidence WHERE insight_id = ? ORDER BY outcome_id"));
  q.Bind(1, insight);
  std::vector<EvidenceEdge> out;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    out.push_back(
        {q.Int(0), q.Int(1),
         q.Int(2) > 0 ? EvidenceRelation::kSupportedBy : EvidenceRelation::kContradictedBy,
         q.Double(3), q.Int(4)});
  }
}

Result<std::vector<UsedEdge>> PostgresStore::UsedBy(NodeId attempt) {
  std::lock_guard lock(mu_);
  KOPE_ASSIGN_OR_RETURN(
      Query q,
      db_->Prepare("SELECT attempt_id, target_kind, target_id, section, score, tokens, "
                   "credit FROM used WHERE attempt_id = ? ORDER BY target_kind, target_id"));
  q.Bind(1, attempt);
  std::vector<UsedEdge> out;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return out;
    UsedEdge e;
    e.attempt_id = q.Int(0);
    e.target = {KindFromStored(q.Int(1)), q.Int(2)};
    e.section = q.Text(3);
    e.score = q.Double(4);
    e.tokens = q.Int(5);
    e.credit = q.OptionalDouble(6);
    out.push_back(std::move(e));
  }
}

Result<std::vector<UsageStats>> PostgresStore::Usage(const std::vector<NodeRef>& targets) {
  std::lock_guard lock(mu_);
  ReadSnapshot snapshot(*db_);
  KOPE_RETURN_IF_ERROR(snapshot.status());
  std::vector<UsageStats> out;
  out.reserve(targets.size());
  for (const NodeRef& target : targets) {
    KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare("SELECT shown, credited, credit FROM usage "
                                                "WHERE target_kind = ? AND target_id = ?"));
    q.Bind(1, StoredKind(target.kind)).Bind(2, target.id);
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    UsageStats stats;
    stats.target = target;
    if (row) {
      stats.shown = q.Int(0);
      stats.credited = q.Int(1);
      stats.credit = q.Double(2);
    }
    out.push_back(stats);
  }
  return out;
}

}  // namespace kope::memory::postgres
