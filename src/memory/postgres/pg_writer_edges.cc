// The edges and sources PostgresWriter writes, and its lookups.
#include "kope/base/hash.h"
#include "kope/memory/model.h"
#include "pg_writer.h"

namespace kope::memory::postgres {
Result<bool> PostgresWriter::AddEvidence(const EvidenceEdge& e) {
  if (!std::isfinite(e.effect) || e.effect <= 0) {
    return Status::InvalidArgument("evidence effect must be a positive number");
  }
  KOPE_RETURN_IF_ERROR(Exists("outcomes", NodeKind::kOutcome, e.outcome_id));
  KOPE_ASSIGN_OR_RETURN(Query read, db_.Prepare("SELECT support, log_effect_sum FROM insights "
                                                "WHERE id = ?"));
  read.Bind(1, e.insight_id);
  KOPE_ASSIGN_OR_RETURN(bool found, read.Step());
  if (!found)
    return Status::InvalidArgument("no " + FormatNodeRef({NodeKind::kInsight, e.insight_id}));
  int64_t support = read.Int(0);
  double log_sum = read.Double(1);
  KOPE_RETURN_IF_ERROR(read.Run());

  bool supports = e.relation == EvidenceRelation::kSupportedBy;
  UnixMillis now = OrNow(e.created_at);
  KOPE_ASSIGN_OR_RETURN(
      Query add, db_.Prepare("INSERT INTO insight_evidence(insight_id, outcome_id, relation, "
                             "effect, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"));
  add.Bind(1, e.insight_id).Bind(2, e.outcome_id).Bind(3, supports ? 1 : -1);
  add.Bind(4, e.effect).Bind(5, now);
  KOPE_RETURN_IF_ERROR(add.Run());
  if (add.Changes() == 0) return false;
  if (supports) {
    support += 1;
    log_sum += std::log(e.effect);
  }
  KOPE_ASSIGN_OR_RETURN(
      Query update,
      db_.Prepare("UPDATE insights SET support = ?, contradiction = contradiction + ?, "
                  "log_effect_sum = ?, effect_size = ?, updated_at = GREATEST(updated_at, ?) "
                  "WHERE id = ?"));
  update.Bind(1, support).Bind(2, supports ? 0 : 1).Bind(3, log_sum);
  update.Bind(4, support > 0 ? std::exp(log_sum / static_cast<double>(support)) : 1.0);
  update.Bind(5, now).Bind(6, e.insight_id);
  KOPE_RETURN_IF_ERROR(update.Run());
  return true;
}

Result<bool> PostgresWriter::AddUsed(const UsedEdge& e) {
  KOPE_RETURN_IF_ERROR(CheckFinite("used credit", e.credit));
  if (e.target.kind == NodeKind::kInsight) {
    KOPE_RETURN_IF_ERROR(Exists("insights", NodeKind::kInsight, e.target.id));
  } else if (e.target.kind == NodeKind::kAttempt) {
    KOPE_RETURN_IF_ERROR(Exists("attempts", NodeKind::kAttempt, e.target.id));
  } else {
    return Status::InvalidArgument("a used edge points at an insight or an attempt, not " +
                                   FormatNodeRef(e.target));
  }
  KOPE_RETURN_IF_ERROR(Exists("attempts", NodeKind::kAttempt, e.attempt_id));
  KOPE_ASSIGN_OR_RETURN(Query add,
                        db_.Prepare("INSERT INTO used(attempt_id, target_kind, target_id, section, "
                                    "score, tokens, credit) VALUES (?, ?, ?, ?, ?, ?, ?) "
                                    "ON CONFLICT DO NOTHING"));
  add.Bind(1, e.attempt_id).Bind(2, StoredKind(e.target.kind)).Bind(3, e.target.id);
  add.Bind(4, e.section).Bind(5, std::isfinite(e.score) ? e.score : 0.0).Bind(6, e.tokens);
  add.Bind(7, e.credit);
  KOPE_RETURN_IF_ERROR(add.Run());
  if (add.Changes() == 0) return false;
  KOPE_ASSIGN_OR_RETURN(
      Query usage,
      db_.Prepare("INSERT INTO usage(target_kind, target_id, shown, credited, credit) "
                  "VALUES (?1, ?2, 1, ?3, ?4) ON CONFLICT(target_kind, target_id) DO UPDATE SET "
                  "shown = usage.shown + 1, credited = usage.credited + ?3, "
                  "credit = usage.credit + ?4"));
  usage.Bind(1, StoredKind(e.target.kind)).Bind(2, e.target.id);
  usage.Bind(3, e.credit.has_value() ? 1 : 0).Bind(4, e.credit.value_or(0.0));
  KOPE_RETURN_IF_ERROR(usage.Run());
  return true;
}

Result<int> PostgresWriter::CreditUsed(NodeId attempt, double total_credit) {
  if (!std::isfinite(total_credit)) return Status::InvalidArgument("credit must be finite");
  std::vector<std::pair<int64_t, NodeId>> targets;
  {
    KOPE_ASSIGN_OR_RETURN(Query q, db_.Prepare("SELECT target_kind, target_id FROM used WHERE "
                                               "attempt_id = ? AND credit IS NULL"));
    q.Bind(1, attempt);
    while (true) {
      KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      targets.emplace_back(q.Int(0), q.Int(1));
    }
  }
  if (targets.empty()) return 0;
  double share = total_credit / static_cast<double>(targets.size());
  KOPE_ASSIGN_OR_RETURN(
      Query set, db_.Prepare("UPDATE used SET credit = ? WHERE attempt_id = ? AND credit IS NULL"));
  set.Bind(1, share).Bind(2, attempt);
  KOPE_RETURN_IF_ERROR(set.Run());
  for (const auto& [kind, id] : targets) {
    KOPE_ASSIGN_OR_RETURN(
        Query usage, db_.Prepare("UPDATE usage SET credited = credited + 1, credit = credit + ? "
                                 "WHERE target_kind = ? AND target_id = ?"));
    usage.Bind(1, share).Bind(2, kind).Bind(3, id);
    KOPE_RETURN_IF_ERROR(usage.Run());
  }
  return static_cast<int>(targets.size());
}

Result<std::string> PostgresWriter::PutSource(std::string_view text) {
  std::string hash = ContentHash(text);
  KOPE_RETURN_IF_ERROR(PutSource(hash, text).status());
  return hash;
}

Result<NodeId> PostgresWriter::FindByKey(NodeKind kind, std::string_view key) {
  return store_.FindByKey(kind, key);
}

Result<std::string> PostgresWriter::KeyOf(std::string_view table, NodeKind kind, NodeId id) {
  KOPE_ASSIGN_OR_RETURN(Query q,
                        db_.Prepare("SELECT key FROM " + std::string(table) + " WHERE id = ?"));
  q.Bind(1, id);
  KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return Status::InvalidArgument("no " + FormatNodeRef({kind, id}) + " in the store");
  return BlobToKey(q.Blob(0));
}

Status PostgresWriter::Exists(std::string_view table, NodeKind kind, NodeId id) {
  return KeyOf(table, kind, id).status();
}

Result<NodeId> PostgresWriter::PutSource(const std::string& hash, std::string_view text) {
  std::string blob = KeyToBlob(hash);
  KOPE_ASSIGN_OR_RETURN(Query q, PrepareHot(kInsertSource,
                                            "INSERT INTO sources(hash, text) VALUES (?, ?) "
                                            "ON CONFLICT(hash) DO NOTHING RETURNING id"));
  q.BindBlob(1, blob).BindStatic(2, text);
  KOPE_ASSIGN_OR_RETURN(bool inserted, q.Step());
  if (inserted) return q.Int(0);
  KOPE_ASSIGN_OR_RETURN(Query find, db_.Prepare("SELECT id FROM sources WHERE hash = ?"));
  find.BindBlob(1, blob);
  KOPE_ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return Status::Internal("a conflicting source row vanished");
  return find.Int(0);
}

Result<Query> PostgresWriter::PrepareHot(HotStatement, std::string_view sql) {
  return db_.Prepare(sql);  // the connection's statements are named and prepared once
}

}  // namespace kope::memory::postgres
