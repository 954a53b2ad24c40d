// The nodes SqliteWriter writes, and SqliteStore's write transactions and caches.
#include "sqlite_writer.h"

#include <cmath>

#include "../json_object.h"
#include "../node_checks.h"
#include "kope/base/hash.h"
#include "kope/memory/text/decision_classes.h"
#include "kope/memory/text/error_signature.h"
#include "kope/memory/text/line_diff.h"
#include "sqlite_store_impl.h"

namespace kope::memory::sqlite {
namespace {
constexpr size_t kRecentAttempts = 512;

Status CheckJsonObject(std::string_view what, std::string_view json) {
  if (!IsJsonObject(json)) {
    return Status::InvalidArgument(std::string(what) + " must be a JSON object, got '" +
                                   std::string(json.substr(0, 60)) + "'");
  }
  return Status::Ok();
}

Result<std::vector<std::string>> NormalizedClasses(const std::vector<std::string>& classes) {
  for (const std::string& c : classes) {
    if (c.empty() || c.find_first_of(" \t\r\n") != std::string::npos) {
      return Status::InvalidArgument("bad decision class '" + c +
                                     "': classes are single words such as 'vectorize-loads'");
    }
  }
  return MergeClasses(classes, {});
}

}  // namespace

Result<Inserted> InsertOrFind(Db& db, Query& insert, std::string_view table,
                              std::string_view blob) {
  KOPE_RETURN_IF_ERROR(insert.Run());
  if (insert.Changes() == 1) return Inserted{db.LastInsertRowid(), true};
  KOPE_ASSIGN_OR_RETURN(Query find,
                        db.Prepare("SELECT id FROM " + std::string(table) + " WHERE key = ?"));
  find.BindBlob(1, blob);
  KOPE_ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return Status::Internal("a conflicting " + std::string(table) + " row vanished");
  return Inserted{find.Int(0), false};
}

Result<NodeId> SqliteWriter::PutTask(const TaskNode& task) {
  if (task.name.empty() || task.op_family.empty()) {
    return Status::InvalidArgument("a task needs a name and an op family");
  }
  if (!std::isfinite(task.size) || task.size < 0) {
    return Status::InvalidArgument("task '" + task.name + "': size must be >= 0");
  }
  KOPE_RETURN_IF_ERROR(CheckKey(NodeKind::kTask, task.key));
  KOPE_RETURN_IF_ERROR(CheckJsonObject("task attrs", task.attrs_json));
  std::string blob = KeyToBlob(task.key.empty() ? TaskKey(task.name, task.spec_hash) : task.key);
  KOPE_ASSIGN_OR_RETURN(
      Query q, db_.Prepare("INSERT INTO tasks(key, name, op_family, description, size, log_size, "
                           "spec_hash, attrs, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                           "ON CONFLICT(key) DO NOTHING"));
  q.BindBlob(1, blob).Bind(2, task.name).Bind(3, task.op_family).Bind(4, task.description);
  q.Bind(5, task.size).Bind(6, task.size > 0 ? std::optional(std::log10(task.size)) : std::nullopt);
  q.Bind(7, task.spec_hash).Bind(8, task.attrs_json).Bind(9, OrNow(task.created_at));
  KOPE_ASSIGN_OR_RETURN(Inserted row, InsertOrFind(db_, q, "tasks", blob));
  if (row.is_new) {
    KOPE_ASSIGN_OR_RETURN(Query fts, db_.Prepare("INSERT INTO tasks_fts(rowid, name, op_family, "
                                                 "description) VALUES (?, ?, ?, ?)"));
    fts.Bind(1, row.id).Bind(2, task.name).Bind(3, task.op_family).Bind(4, task.description);
    KOPE_RETURN_IF_ERROR(fts.Run());
  }
  return row.id;
}

Result<NodeId> SqliteWriter::PutHardware(const HardwareNode& hw) {
  if (hw.backend.empty() || hw.device.empty()) {
    return Status::InvalidArgument("hardware needs a backend and a device");
  }
  KOPE_RETURN_IF_ERROR(CheckKey(NodeKind::kHardware, hw.key));
  KOPE_RETURN_IF_ERROR(CheckJsonObject("hardware attrs", hw.attrs_json));
  std::string blob =
      KeyToBlob(hw.key.empty() ? HardwareKey(hw.backend, hw.device, hw.arch) : hw.key);
  KOPE_ASSIGN_OR_RETURN(
      Query q, db_.Prepare("INSERT INTO hardware(key, backend, device, arch, attrs, created_at) "
                           "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING"));
  q.BindBlob(1, blob).Bind(2, hw.backend).Bind(3, hw.device).Bind(4, hw.arch);
  q.Bind(5, hw.attrs_json).Bind(6, OrNow(hw.created_at));
  KOPE_ASSIGN_OR_RETURN(Inserted row, InsertOrFind(db_, q, "hardware", blob));
  return row.id;
}

Result<NodeId> SqliteWriter::PutRun(const RunNode& run) {
  KOPE_RETURN_IF_ERROR(CheckKey(NodeKind::kRun, run.key));
  KOPE_RETURN_IF_ERROR(CheckJsonObject("run config", run.config_json));
  KOPE_ASSIGN_OR_RETURN(std::string task_key, KeyOf("tasks", NodeKind::kTask, run.task_id));
  KOPE_ASSIGN_OR_RETURN(std::string hw_key,
                        KeyOf("hardware", NodeKind::kHardware, run.hardware_id));
  UnixMillis started = OrNow(run.started_at);
  std::string blob = KeyToBlob(run.key.empty() ? NewRunKey(task_key, hw_key, started) : run.key);
  KOPE_ASSIGN_OR_RETURN(
      Query q, db_.Prepare("INSERT INTO runs(key, task_id, hardware_id, label, compiler, config, "
                           "started_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                           "ON CONFLICT(key) DO NOTHING"));
  q.BindBlob(1, blob).Bind(2, run.task_id).Bind(3, run.hardware_id).Bind(4, run.label);
  q.Bind(5, run.compiler).Bind(6, run.config_json).Bind(7, started);
  KOPE_ASSIGN_OR_RETURN(Inserted row, InsertOrFind(db_, q, "runs", blob));
  return row.id;
}

Result<NodeId> SqliteWriter::PutAttempt(const AttemptNode& attempt, std::string_view source) {
  KOPE_RETURN_IF_ERROR(CheckKey(NodeKind::kAttempt, attempt.key));
  if (attempt.prompt_tokens < 0 || attempt.completion_tokens < 0) {
    return Status::InvalidArgument("attempt token counts must be >= 0");
  }
  if (!std::isfinite(attempt.cost_usd) || attempt.cost_usd < 0) {
    return Status::InvalidArgument("an attempt's cost must be a finite number >= 0");
  }
  KOPE_ASSIGN_OR_RETURN(std::vector<std::string> given, NormalizedClasses(attempt.classes));
  KOPE_ASSIGN_OR_RETURN(const SqliteStore::RunFacts* run, store_.FactsOfRun(attempt.run_id));
  // Valid until the Remember below.
  const SqliteStore::AttemptFacts* parent = nullptr;
  if (attempt.parent_id != 0) {
    KOPE_ASSIGN_OR_RETURN(parent, store_.FactsOfAttempt(attempt.parent_id));
  }
  std::string stored_source;
  if (source.empty() && !attempt.source_hash.empty()) {
    KOPE_ASSIGN_OR_RETURN(stored_source, store_.GetSource(attempt.source_hash));
    source = stored_source;
  }
  std::string hash = ContentHash(source);
  if (!attempt.source_hash.empty() && attempt.source_hash != hash) {
    return Status::InvalidArgument("attempt source_hash " + attempt.source_hash +
                                   " does not match its source (" + hash + ")");
  }
  std::string key =
      attempt.key.empty()
          ? AttemptKey(run->key, parent != nullptr ? std::string_view(parent->key) : "", hash,
                       attempt.decision, attempt.proposer)
          : attempt.key;
  std::string blob = KeyToBlob(key);
  std::string diff = attempt.diff;
  if (diff.empty() && parent != nullptr) diff = UnifiedDiff(*parent->source, source);
  const std::string classes = JoinClasses(MergeClasses(
      std::move(given),
      ClassifyDecision(attempt.decision, attempt.parent_id != 0 ? AddedLines(diff) : source)));
  KOPE_ASSIGN_OR_RETURN(NodeId source_id, PutSource(hash, source));
  KOPE_ASSIGN_OR_RETURN(
      Query q,
      PrepareHot(kInsertAttempt,
                 "INSERT INTO attempts(key, run_id, task_id, hardware_id, parent_id, source_id, "
                 "diff, decision, classes, proposer, prompt_tokens, completion_tokens, "
                 "created_at, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                 "ON CONFLICT(key) DO NOTHING"));
  q.BindBlob(1, blob).Bind(2, attempt.run_id).Bind(3, run->task_id).Bind(4, run->hardware_id);
  q.BindId(5, attempt.parent_id).Bind(6, source_id).BindStatic(7, diff);
  q.BindStatic(8, attempt.decision).BindStatic(9, classes).Bind(10, attempt.proposer);
  q.Bind(11, attempt.prompt_tokens).Bind(12, attempt.completion_tokens);
  q.Bind(13, OrNow(attempt.created_at)).Bind(14, attempt.cost_usd);
  KOPE_ASSIGN_OR_RETURN(Inserted row, InsertOrFind(db_, q, "attempts", blob));
  if (!row.is_new) return row.id;  // the same attempt, written before
  const NodeId id = row.id;
  KOPE_ASSIGN_OR_RETURN(
      Query fts, PrepareHot(kIndexAttempt,
                            "INSERT INTO attempts_fts(rowid, decision, classes) VALUES (?, ?, ?)"));
  fts.Bind(1, id).BindStatic(2, attempt.decision).BindStatic(3, classes);
  KOPE_RETURN_IF_ERROR(fts.Run());
  store_.Remember(id, {std::move(key), std::move(hash), std::make_shared<const std::string>(source),
                       run->task_id, run->hardware_id, run->op_family});
  return id;
}

Result<NodeId> SqliteWriter::PutOutcome(const OutcomeNode& o) {
  if (!IsKnownVerdict(o.verdict)) {
    return Status::InvalidArgument("unknown verdict '" + o.verdict +
                                   "' (expected compile_error, runtime_error, crash, timeout, "
                                   "incorrect or valid)");
  }
  if (o.stage.empty()) return Status::InvalidArgument("an outcome needs a stage, e.g. 'unit'");
  KOPE_RETURN_IF_ERROR(CheckKey(NodeKind::kOutcome, o.key));
  KOPE_RETURN_IF_ERROR(CheckFinite("speedup", o.speedup));
  KOPE_RETURN_IF_ERROR(CheckFinite("time_ms", o.time_ms));
  KOPE_RETURN_IF_ERROR(CheckFinite("roofline", o.roofline));
  KOPE_RETURN_IF_ERROR(CheckJsonObject("outcome evidence", o.evidence_json));
  KOPE_ASSIGN_OR_RETURN(const SqliteStore::AttemptFacts* a, store_.FactsOfAttempt(o.attempt_id));
  std::string blob = KeyToBlob(
      o.key.empty() ? OutcomeKey(a->key, o.stage, o.verdict, o.evidence_json, o.error_message)
                    : o.key);
  std::string signature =
      o.error_signature.empty() ? NormalizeError(o.error_message) : o.error_signature;
  KOPE_ASSIGN_OR_RETURN(
      Query q,
      PrepareHot(kInsertOutcome,
                 "INSERT INTO outcomes(key, attempt_id, task_id, hardware_id, op_family, stage, "
                 "verdict, flagged, speedup, time_ms, roofline, error_message, error_signature, "
                 "evidence, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                 "ON CONFLICT(key) DO NOTHING"));
  q.BindBlob(1, blob).Bind(2, o.attempt_id).Bind(3, a->task_id).Bind(4, a->hardware_id);
  q.Bind(5, a->op_family).Bind(6, o.stage).Bind(7, o.verdict).Bind(8, o.flagged ? 1 : 0);
  q.Bind(9, o.speedup).Bind(10, o.time_ms).Bind(11, o.roofline).BindStatic(12, o.error_message);
  q.BindStatic(13, signature).BindStatic(14, o.evidence_json).Bind(15, OrNow(o.created_at));
  KOPE_ASSIGN_OR_RETURN(Inserted row, InsertOrFind(db_, q, "outcomes", blob));
  if (row.is_new && !o.error_message.empty()) {
    KOPE_ASSIGN_OR_RETURN(
        Query fts,
        PrepareHot(kIndexError, "INSERT INTO errors_fts(rowid, error_message) VALUES (?, ?)"));
    fts.Bind(1, row.id).BindStatic(2, o.error_message);
    KOPE_RETURN_IF_ERROR(fts.Run());
  }
  return row.id;
}

Result<NodeId> SqliteWriter::PutInsight(const InsightNode& insight) {
  if (insight.kind.empty() || insight.text.empty()) {
    return Status::InvalidArgument("an insight needs a kind and a text");
  }
  const InsightScope& s = insight.scope;
  if (s.size_min < 0 || s.size_max < 0 || (s.size_max > 0 && s.size_min > s.size_max)) {
    return Status::InvalidArgument("insight size range must satisfy 0 <= size_min <= size_max");
  }
  KOPE_RETURN_IF_ERROR(CheckKey(NodeKind::kInsight, insight.key));
  KOPE_ASSIGN_OR_RETURN(std::vector<std::string> classes, NormalizedClasses(insight.classes));
  std::string blob = KeyToBlob(
      insight.key.empty() ? InsightKey(insight.kind, s, classes, insight.text) : insight.key);
  UnixMillis created = OrNow(insight.created_at);
  KOPE_ASSIGN_OR_RETURN(
      Query q,
      db_.Prepare("INSERT INTO insights(key, kind, text, op_family, backend, device, arch, "
                  "compiler, size_min, size_max, classes, created_at, updated_at) VALUES "
                  "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING"));
  q.BindBlob(1, blob).Bind(2, insight.kind).Bind(3, insight.text).Bind(4, s.op_family);
  q.Bind(5, s.backend).Bind(6, s.device).Bind(7, s.arch).Bind(8, s.compiler);
  q.Bind(9, s.size_min).Bind(10, s.size_max).Bind(11, JoinClasses(classes)).Bind(12, created);
  q.Bind(13, std::max(created, insight.updated_at));
  KOPE_ASSIGN_OR_RETURN(Inserted row, InsertOrFind(db_, q, "insights", blob));
  if (row.is_new) {
    KOPE_ASSIGN_OR_RETURN(Query fts,
                          db_.Prepare("INSERT INTO insights_fts(rowid, text) VALUES (?, ?)"));
    fts.Bind(1, row.id).Bind(2, insight.text);
    KOPE_RETURN_IF_ERROR(fts.Run());
  }
  return row.id;
}

Status SqliteWriter::UpdateInsightText(NodeId insight, std::string_view text) {
  if (text.empty()) return Status::InvalidArgument("an insight needs a text");
  std::string old_text;
  {
    KOPE_ASSIGN_OR_RETURN(Query read, db_.Prepare("SELECT text FROM insights WHERE id = ?"));
    read.Bind(1, insight);
    KOPE_ASSIGN_OR_RETURN(bool found, read.Step());
    if (!found) return Status::NotFound("no " + FormatNodeRef({NodeKind::kInsight, insight}));
    old_text = read.Text(0);
  }
  KOPE_ASSIGN_OR_RETURN(Query forget, db_.Prepare("INSERT INTO insights_fts(insights_fts, rowid, "
                                                  "text) VALUES ('delete', ?, ?)"));
  forget.Bind(1, insight).Bind(2, old_text);
  KOPE_RETURN_IF_ERROR(forget.Run());
  KOPE_ASSIGN_OR_RETURN(Query q,
                        db_.Prepare("UPDATE insights SET text = ?, updated_at = ? WHERE id = ?"));
  q.Bind(1, text).Bind(2, NowMillis()).Bind(3, insight);
  KOPE_RETURN_IF_ERROR(q.Run());
  KOPE_ASSIGN_OR_RETURN(Query index,
                        db_.Prepare("INSERT INTO insights_fts(rowid, text) VALUES (?, ?)"));
  index.Bind(1, insight).Bind(2, text);
  return index.Run();
}

Status SqliteStore::Write(const std::function<Status(GraphWriter&)>& body) {
  std::lock_guard lock(mu_);
  if (in_write_) {
    return Status::FailedPrecondition(
        "GraphStore::Write called inside a Write body; use its writer");
  }
  Status begin = db_->Exec("BEGIN IMMEDIATE");
  if (!begin.ok()) return begin.WithContext("starting a write to " + path_.string());
  in_write_ = true;
  SqliteWriter writer(*this);
  Status status;
  try {
    status = body(writer);
  } catch (...) {
    in_write_ = false;
    (void)db_->Exec("ROLLBACK");
    ForgetCaches();
    throw;
  }
  in_write_ = false;
  if (status.ok()) {
    status = db_->Exec("COMMIT");
    if (status.ok()) return status;
  }
  if (db_->InTransaction()) (void)db_->Exec("ROLLBACK");
  ForgetCaches();
  return status;
}

Result<const SqliteStore::RunFacts*> SqliteStore::FactsOfRun(NodeId run) {
  auto it = runs_.find(run);
  if (it != runs_.end()) return &it->second;
  KOPE_ASSIGN_OR_RETURN(Query q, db_->Prepare("SELECT r.key, r.task_id, r.hardware_id, t.op_family "
                                              "FROM runs r JOIN tasks t ON t.id = r.task_id "
                                              "WHERE r.id = ?"));
  q.Bind(1, run);
  KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row)
    return Status::InvalidArgument("no " + FormatNodeRef({NodeKind::kRun, run}) + " in the store");
  RunFacts facts{BlobToKey(q.Blob(0)), q.Int(1), q.Int(2), q.Text(3)};
  return &runs_.emplace(run, std::move(facts)).first->second;
}

Result<const SqliteStore::AttemptFacts*> SqliteStore::FactsOfAttempt(NodeId attempt) {
  auto it = recent_attempts_.find(attempt);
  if (it != recent_attempts_.end()) return &it->second;
  KOPE_ASSIGN_OR_RETURN(
      Query q, db_->Prepare("SELECT a.key, s.hash, s.text, a.task_id, a.hardware_id, t.op_family "
                            "FROM attempts a JOIN sources s ON s.id = a.source_id "
                            "JOIN tasks t ON t.id = a.task_id WHERE a.id = ?"));
  q.Bind(1, attempt);
  KOPE_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) {
    return Status::InvalidArgument("no " + FormatNodeRef({NodeKind::kAttempt, attempt}) +
                                   " in the store");
  }
  AttemptFacts facts{BlobToKey(q.Blob(0)),
                     BlobToKey(q.Blob(1)),
                     std::make_shared<const std::string>(q.Text(2)),
                     q.Int(3),
                     q.Int(4),
                     q.Text(5)};
  return Remember(attempt, std::move(facts));
}

const SqliteStore::AttemptFacts* SqliteStore::Remember(NodeId attempt, AttemptFacts facts) {
  auto [it, inserted] = recent_attempts_.emplace(attempt, std::move(facts));
  if (inserted) recent_order_.push_back(attempt);
  // The newest entry is never the one evicted (the cache holds more than one).
  while (recent_order_.size() > kRecentAttempts) {
    recent_attempts_.erase(recent_order_.front());
    recent_order_.pop_front();
  }
  return &it->second;
}

void SqliteStore::ForgetCaches() {
  runs_.clear();
  recent_attempts_.clear();
  recent_order_.clear();
}

}  // namespace kope::memory::sqlite
