// Graph queries of the PostgreSQL store: lineage, alternatives, best attempts, insights, errors,
// evidence and usage.
#include <algorithm>
#include <map>
#include <set>

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

// Attempt views in one statement: `with` (a WITH clause, or ""), then the attempts `from` joins
// as `a`, each with its latest outcome, then `tail` (WHERE, ORDER BY).
std::string ViewSql(std::string_view with, std::string_view from, std::string_view tail) {
  return std::string(with) + " SELECT " + std::string(kAttemptColumns) + ", " +
         std::string(kOutcomeColumns) + " FROM " + std::string(from) +
         " JOIN sources s ON s.id = a.source_id LEFT JOIN LATERAL (SELECT * FROM outcomes lo"
         " WHERE lo.attempt_id = a.id ORDER BY lo.id DESC LIMIT 1) o ON TRUE " +
         std::string(tail);
}

// Outcome views in one statement: the outcomes `from` joins as `o`, each with its attempt,
// then `tail` (WHERE, ORDER BY).
std::string OutcomeViewSql(std::string_view from, std::string_view tail) {
  return "SELECT " + std::string(kAttemptColumns) + ", " + std::string(kOutcomeColumns) + " FROM " +
         std::string(from) +
         " JOIN attempts a ON a.id = o.attempt_id JOIN sources s ON s.id = a.source_id " +
         std::string(tail);
}

}  // namespace

Result<std::vector<AttemptView>> PostgresStore::SelectViews(std::string_view tail, NodeId id) {
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(ViewSql("", "attempts a", tail)));
  q.Bind(1, id);
  return ReadViews(q);
}

Result<std::vector<AttemptView>> PostgresStore::OutcomeViews(const std::vector<NodeId>& ids) {
  static const std::string sql = OutcomeViewSql(
      "unnest(?::bigint[]) WITH ORDINALITY x(id, ord) JOIN outcomes o ON o.id = x.id",
      "ORDER BY x.ord");
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
  q.Bind(1, ArrayLiteral(ids));
  KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> views, ReadViews(q));
  if (views.size() != ids.size()) return Status::Internal("a ranked outcome vanished");
  return views;
}

Result<std::vector<AttemptView>> PostgresStore::Lineage(NodeId attempt) {
  std::lock_guard lock(mu_);
  static const std::string sql = ViewSql(
      "WITH RECURSIVE chain(id, parent, depth) AS ("
      " SELECT id, parent_id, 0 FROM attempts WHERE id = ?"
      " UNION ALL SELECT a.id, a.parent_id, c.depth + 1"
      " FROM attempts a JOIN chain c ON a.id = c.parent"
      " WHERE c.depth < 1000000)",
      "chain c JOIN attempts a ON a.id = c.id", "ORDER BY c.depth DESC");
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
  q.Bind(1, attempt);
  KOPE_ASSIGN_OR_RETURN(std::vector<AttemptView> views, ReadViews(q));
  if (views.empty()) return Status::NotFound("no " + FormatNodeRef({NodeKind::kAttempt, attempt}));
  return views;
}

Result<std::vector<AttemptView>> PostgresStore::Children(NodeId attempt) {
  std::lock_guard lock(mu_);
  return SelectViews("WHERE a.parent_id = ? ORDER BY a.id", attempt);
}

Result<std::vector<AttemptView>> PostgresStore::RunAttempts(NodeId run) {
  std::lock_guard lock(mu_);
  return SelectViews("WHERE a.run_id = ? ORDER BY a.id", run);
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
  static const std::string sql =
      ViewSql("", "attempts a",
              "WHERE a.source_id = (SELECT id FROM sources WHERE hash = ?) AND a.task_id = ? AND "
              "a.hardware_id = ? ORDER BY a.id");
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
  q.BindBlob(1, KeyToBlob(source_hash)).Bind(2, task_id).Bind(3, hardware_id);
  return ReadViews(q);
}

namespace {

// A ranked outcome: of the list of its hardware and op family.
struct Ranked {
  double speedup;
  NodeId outcome, attempt, hardware;
  std::string family;
};

bool Better(const Ranked& a, const Ranked& b) {
  if (a.speedup != b.speedup) return a.speedup > b.speedup;
  return a.outcome < b.outcome;
}

constexpr std::string_view kRankedColumns =
    "SELECT o.speedup, o.id, o.attempt_id, o.hardware_id, o.op_family FROM outcomes o WHERE";

// The statements that read ranked outcomes, best first within a list, at most ?3 (a task's, one
// list's) or ?2 rows per list (a family's list on every hardware, a hardware's on every family: one
// statement whose LATERAL join reads each list from its index, outcomes_best_hardware_family).
const std::string& ByTask() {
  static const std::string sql = std::string(kRankedColumns) + std::string(kRankable) +
                                 "AND o.task_id = ?1 AND (?2 = 0 OR o.hardware_id = ?2) "
                                 "ORDER BY o.speedup DESC, o.id LIMIT ?3";
  return sql;
}

const std::string& ByList() {
  static const std::string sql = std::string(kRankedColumns) + std::string(kRankable) +
                                 "AND o.hardware_id = ?1 AND o.op_family = ?2 "
                                 "ORDER BY o.speedup DESC, o.id LIMIT ?3";
  return sql;
}

std::string OverLists(std::string_view lists, std::string_view match) {
  return "SELECT l.* FROM " + std::string(lists) + " CROSS JOIN LATERAL (" +
         std::string(kRankedColumns) + std::string(kRankable) + std::string(match) +
         " ORDER BY o.speedup DESC, o.id LIMIT ?2) l";
}

Result<std::vector<Ranked>> ReadRanked(Query& q) {
  std::vector<Ranked> rows;
  while (true) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return rows;
    rows.push_back({q.Double(0), q.Int(1), q.Int(2), q.Int(3), q.Text(4)});
  }
}

// The best `limit` attempts of `rows`, each once with its best outcome. Every outcome of an
// attempt lies in one list (an attempt has one task, hence one family and one hardware), so the
// best `limit` attempts of each list hold the best `limit` attempts overall.
std::vector<Ranked> BestOf(std::vector<Ranked> rows, int limit) {
  std::stable_sort(rows.begin(), rows.end(), Better);
  std::vector<Ranked> best;
  for (Ranked& r : rows) {
    if (static_cast<int>(best.size()) >= limit) break;
    if (std::none_of(best.begin(), best.end(),
                     [&](const Ranked& b) { return b.attempt == r.attempt; })) {
      best.push_back(std::move(r));
    }
  }
  return best;
}

// The ranked rows of the lists the query merges, at most `cap` per list.
Result<std::vector<Ranked>> RankedRows(Db& db, const BestQuery& query, int64_t cap) {
  if (query.task_id != 0) {
    KOPE_ASSIGN_OR_RETURN(Query q, db.Prepare(ByTask()));
    q.Bind(1, query.task_id).Bind(2, query.hardware_id).Bind(3, cap);
    return ReadRanked(q);
  }
  if (query.hardware_id != 0 && !query.op_family.empty()) {
    KOPE_ASSIGN_OR_RETURN(Query q, db.Prepare(ByList()));
    q.Bind(1, query.hardware_id).Bind(2, query.op_family).Bind(3, cap);
    return ReadRanked(q);
  }
  // Outcomes carry their task's family, so the tasks' families are all the lists there are.
  static const std::string over_hardware =
      OverLists("hardware h", "AND o.hardware_id = h.id AND o.op_family = ?1");
  static const std::string over_families =
      OverLists("(SELECT DISTINCT op_family FROM tasks) f",
                "AND o.hardware_id = ?1 AND o.op_family = f.op_family");
  const bool families = query.op_family.empty();
  KOPE_ASSIGN_OR_RETURN(Query q, db.Prepare(families ? over_families : over_hardware));
  if (families) {
    q.Bind(1, query.hardware_id);
  } else {
    q.Bind(1, query.op_family);
  }
  q.Bind(2, cap);
  return ReadRanked(q);
}

// A list read up to `cap` rows that holds fewer than `limit` attempts (an attempt with several
// outcomes) was cut before its best `limit`: it is read again whole. A task's rows are one list;
// otherwise a list is a hardware and an op family.
Status ReadCutLists(Db& db, const BestQuery& query, int64_t cap, std::vector<Ranked>& rows) {
  constexpr int64_t kWhole = int64_t{1} << 62;
  std::map<std::pair<NodeId, std::string>, std::set<NodeId>> attempts;
  std::map<std::pair<NodeId, std::string>, int64_t> counts;
  for (const Ranked& r : rows) {
    const auto list = query.task_id != 0 ? std::make_pair(NodeId{0}, std::string())
                                         : std::make_pair(r.hardware, r.family);
    attempts[list].insert(r.attempt);
    ++counts[list];
  }
  for (const auto& [list, count] : counts) {
    if (count < cap || attempts[list].size() >= static_cast<size_t>(query.limit)) continue;
    KOPE_ASSIGN_OR_RETURN(Query q, db.Prepare(query.task_id != 0 ? ByTask() : ByList()));
    if (query.task_id != 0) {
      q.Bind(1, query.task_id).Bind(2, query.hardware_id);
    } else {
      q.Bind(1, list.first).Bind(2, list.second);
    }
    q.Bind(3, kWhole);
    KOPE_ASSIGN_OR_RETURN(std::vector<Ranked> whole, ReadRanked(q));
    std::erase_if(rows, [&](const Ranked& r) {
      return query.task_id != 0 || (r.hardware == list.first && r.family == list.second);
    });
    rows.insert(rows.end(), whole.begin(), whole.end());
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<AttemptView>> PostgresStore::BestAttempts(const BestQuery& query) {
  std::lock_guard lock(mu_);
  if (query.task_id == 0 && query.op_family.empty() && query.hardware_id == 0) {
    return Status::InvalidArgument("BestAttempts needs a task, an op family or a hardware");
  }
  if (query.limit <= 0) return std::vector<AttemptView>();
  // Each list from its index, best first, in one statement; then the views of the best, in a
  // second (outcomes and attempts are never changed once written).
  const int64_t cap = std::max<int64_t>(8, 2 * static_cast<int64_t>(query.limit));
  KOPE_ASSIGN_OR_RETURN(std::vector<Ranked> rows, RankedRows(*db_, query, cap));
  KOPE_RETURN_IF_ERROR(ReadCutLists(*db_, query, cap, rows));
  std::vector<NodeId> ids;
  for (const Ranked& r : BestOf(std::move(rows), query.limit)) ids.push_back(r.outcome);
  return OutcomeViews(ids);
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
  std::vector<int64_t> ids;
  for (size_t k = 0; k < keep; ++k) ids.push_back(scored[k].id);
  static const std::string rows_sql = "SELECT " + std::string(kInsightColumns) +
                                      " FROM unnest(?::bigint[]) WITH ORDINALITY x(id, ord) JOIN "
                                      "insights i ON i.id = x.id ORDER BY x.ord";
  KOPE_ASSIGN_OR_RETURN(Query rows, db_->Prepare(rows_sql));
  rows.Bind(1, ArrayLiteral(ids));
  std::vector<RankedInsight> ranked;
  ranked.reserve(keep);
  for (size_t k = 0; k < keep; ++k) {
    KOPE_ASSIGN_OR_RETURN(bool row, rows.Step());
    if (!row) return Status::Internal("a ranked insight vanished");
    RankedInsight r;
    r.insight = ReadInsight(rows, 0);
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
  static const std::string sql = OutcomeViewSql(
      "outcomes o",
      "WHERE o.error_signature = ?1 AND o.error_signature <> '' AND (?2 = '' OR o.op_family = "
      "?2) ORDER BY o.id DESC LIMIT ?3");
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare(sql));
  q.Bind(1, error_signature).Bind(2, op_family).Bind(3, std::max(0, limit));
  return ReadViews(q);
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
  std::vector<int64_t> kinds, ids;
  for (const NodeRef& target : targets) {
    kinds.push_back(StoredKind(target.kind));
    ids.push_back(target.id);
  }
  KOPE_ASSIGN_OR_RETURN(
      Query q, db_->Prepare("SELECT u.shown, u.credited, u.credit FROM unnest(?::bigint[], "
                            "?::bigint[]) WITH ORDINALITY t(kind, id, ord) LEFT JOIN usage u ON "
                            "u.target_kind = t.kind AND u.target_id = t.id ORDER BY t.ord"));
  q.Bind(1, ArrayLiteral(kinds)).Bind(2, ArrayLiteral(ids));
  std::vector<UsageStats> out;
  out.reserve(targets.size());
  for (const NodeRef& target : targets) {
    KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
    if (!row) return Status::Internal("the usage query returned fewer rows than targets");
    UsageStats stats;
    stats.target = target;
    stats.shown = q.Int(0);  // NULL (never shown) reads as 0
    stats.credited = q.Int(1);
    stats.credit = q.Double(2);
    out.push_back(stats);
  }
  return out;
}

}  // namespace kope::memory::postgres
