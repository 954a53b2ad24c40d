#include "sqlite_schema.h"

#include <string>

#include "kope/memory/sqlite/sqlite_store.h"
#include "kope/memory/text/error_signature.h"

namespace kope::memory::sqlite {
namespace {

// Version 1: the first release. Frozen.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE tasks(
  id INTEGER PRIMARY KEY,
  key BLOB NOT NULL UNIQUE,
  name TEXT NOT NULL,
  op_family TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  size REAL NOT NULL DEFAULT 0,
  log_size REAL,
  spec_hash TEXT NOT NULL DEFAULT '',
  attrs TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL);
CREATE INDEX tasks_family_size ON tasks(op_family, log_size);

CREATE TABLE hardware(
  id INTEGER PRIMARY KEY,
  key BLOB NOT NULL UNIQUE,
  backend TEXT NOT NULL,
  device TEXT NOT NULL,
  arch TEXT NOT NULL,
  attrs TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL);

CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  key BLOB NOT NULL UNIQUE,
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  hardware_id INTEGER NOT NULL REFERENCES hardware(id),
  label TEXT NOT NULL DEFAULT '',
  compiler TEXT NOT NULL DEFAULT '',
  config TEXT NOT NULL DEFAULT '{}',
  started_at INTEGER NOT NULL);
CREATE INDEX runs_task ON runs(task_id);

CREATE TABLE sources(
  id INTEGER PRIMARY KEY,
  hash BLOB NOT NULL UNIQUE,
  text TEXT NOT NULL);

CREATE TABLE attempts(
  id INTEGER PRIMARY KEY,
  key BLOB NOT NULL UNIQUE,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  hardware_id INTEGER NOT NULL REFERENCES hardware(id),
  parent_id INTEGER REFERENCES attempts(id),
  source_id INTEGER NOT NULL REFERENCES sources(id),
  diff TEXT NOT NULL DEFAULT '',
  decision TEXT NOT NULL DEFAULT '',
  classes TEXT NOT NULL DEFAULT '',
  proposer TEXT NOT NULL DEFAULT '',
  prompt_tokens INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL);
CREATE INDEX attempts_parent ON attempts(parent_id);
CREATE INDEX attempts_run ON attempts(run_id);
CREATE INDEX attempts_source ON attempts(source_id);

CREATE TABLE outcomes(
  id INTEGER PRIMARY KEY,
  key BLOB NOT NULL UNIQUE,
  attempt_id INTEGER NOT NULL REFERENCES attempts(id),
  task_id INTEGER NOT NULL,
  hardware_id INTEGER NOT NULL,
  op_family TEXT NOT NULL,
  stage TEXT NOT NULL DEFAULT 'unit',
  verdict TEXT NOT NULL,
  flagged INTEGER NOT NULL DEFAULT 0,
  speedup REAL,
  time_ms REAL,
  roofline REAL,
  error_message TEXT NOT NULL DEFAULT '',
  evidence TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL);
CREATE INDEX outcomes_attempt ON outcomes(attempt_id);
CREATE INDEX outcomes_best_task ON outcomes(task_id, hardware_id, speedup DESC)
  WHERE verdict = 'valid' AND flagged = 0 AND speedup IS NOT NULL;
CREATE INDEX outcomes_best_family ON outcomes(op_family, speedup DESC)
  WHERE verdict = 'valid' AND flagged = 0 AND speedup IS NOT NULL;
CREATE INDEX outcomes_best_hardware ON outcomes(hardware_id, speedup DESC)
  WHERE verdict = 'valid' AND flagged = 0 AND speedup IS NOT NULL;
CREATE INDEX outcomes_best_hardware_family ON outcomes(hardware_id, op_family, speedup DESC)
  WHERE verdict = 'valid' AND flagged = 0 AND speedup IS NOT NULL;

CREATE TABLE insights(
  id INTEGER PRIMARY KEY,
  key BLOB NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  text TEXT NOT NULL,
  op_family TEXT NOT NULL DEFAULT '',
  backend TEXT NOT NULL DEFAULT '',
  device TEXT NOT NULL DEFAULT '',
  arch TEXT NOT NULL DEFAULT '',
  compiler TEXT NOT NULL DEFAULT '',
  size_min REAL NOT NULL DEFAULT 0,
  size_max REAL NOT NULL DEFAULT 0,
  classes TEXT NOT NULL DEFAULT '',
  support INTEGER NOT NULL DEFAULT 0,
  contradiction INTEGER NOT NULL DEFAULT 0,
  log_effect_sum REAL NOT NULL DEFAULT 0,
  effect_size REAL NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL);
-- Covers FindInsights' scan: the scope, classes and counts of a family's insights are read in
-- index order, without visiting the table.
CREATE INDEX insights_scope ON insights(op_family, kind, backend, device, arch, compiler,
  size_min, size_max, classes, support, contradiction, effect_size);

CREATE TABLE insight_evidence(
  insight_id INTEGER NOT NULL REFERENCES insights(id),
  outcome_id INTEGER NOT NULL REFERENCES outcomes(id),
  relation INTEGER NOT NULL,
  effect REAL NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  PRIMARY KEY(insight_id, outcome_id)) WITHOUT ROWID;
CREATE INDEX insight_evidence_outcome ON insight_evidence(outcome_id);

CREATE TABLE used(
  attempt_id INTEGER NOT NULL REFERENCES attempts(id),
  target_kind INTEGER NOT NULL,
  target_id INTEGER NOT NULL,
  section TEXT NOT NULL DEFAULT '',
  score REAL NOT NULL DEFAULT 0,
  tokens INTEGER NOT NULL DEFAULT 0,
  credit REAL,
  PRIMARY KEY(attempt_id, target_kind, target_id)) WITHOUT ROWID;

CREATE TABLE usage(
  target_kind INTEGER NOT NULL,
  target_id INTEGER NOT NULL,
  shown INTEGER NOT NULL DEFAULT 0,
  credited INTEGER NOT NULL DEFAULT 0,
  credit REAL NOT NULL DEFAULT 0,
  PRIMARY KEY(target_kind, target_id)) WITHOUT ROWID;

-- Full-text indexes over external content. The writer keeps them in step with their tables
-- (no triggers: a trigger makes every insert a statement transaction, and each of those makes
-- FTS5 flush its pending terms, which costs more than the insert itself).
CREATE VIRTUAL TABLE tasks_fts USING fts5(name, op_family, description,
  content='tasks', content_rowid='id', tokenize='porter unicode61');
CREATE VIRTUAL TABLE attempts_fts USING fts5(decision, classes,
  content='attempts', content_rowid='id', tokenize='porter unicode61');
CREATE VIRTUAL TABLE insights_fts USING fts5(text,
  content='insights', content_rowid='id', tokenize='porter unicode61');
CREATE VIRTUAL TABLE errors_fts USING fts5(error_message,
  content='outcomes', content_rowid='id', tokenize='porter unicode61');
)sql";

// Version 2: outcomes carry the normalized error signature of their error message, indexed,
// so that recurring errors are found without scanning (failure rules). Frozen.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE outcomes ADD COLUMN error_signature TEXT NOT NULL DEFAULT '';
UPDATE outcomes SET error_signature = kope_error_signature(error_message)
  WHERE error_message <> '';
CREATE INDEX outcomes_error_signature ON outcomes(error_signature, id)
  WHERE error_signature <> '';
)sql";

// Version 3: the rankings of a family on any hardware and of a hardware for any family merge
// the lists of outcomes_best_hardware_family (BestAttempts), so their own indexes go: two fewer
// index entries to write per valid outcome. Frozen.
constexpr const char* kSchemaV3 = R"sql(
DROP INDEX outcomes_best_family;
DROP INDEX outcomes_best_hardware;
)sql";

// Version 4: deployment workloads (`kope deploy profile`) and their from_workload edges to the
// tasks extracted from them. Frozen.
constexpr const char* kSchemaV4 = R"sql(
CREATE TABLE workloads(
  id INTEGER PRIMARY KEY,
  key BLOB NOT NULL UNIQUE,
  name TEXT NOT NULL,
  workload_hash TEXT NOT NULL,
  attrs TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL);

CREATE TABLE from_workload(
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  task_id INTEGER NOT NULL REFERENCES tasks(id),
  phases TEXT NOT NULL DEFAULT '',
  weight REAL NOT NULL DEFAULT 0,
  attrs TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  PRIMARY KEY(workload_id, task_id)) WITHOUT ROWID;
CREATE INDEX from_workload_task ON from_workload(task_id);
)sql";

// Version 5: an attempt's cost (the calls that proposed it, at the model's configured price), and
// the reports of `kope deploy`'s validations, per workload. Frozen.
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE attempts ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;

CREATE TABLE deployments(
  id INTEGER PRIMARY KEY,
  key BLOB NOT NULL UNIQUE,
  workload_id INTEGER NOT NULL REFERENCES workloads(id),
  report TEXT NOT NULL,
  created_at INTEGER NOT NULL);
CREATE INDEX deployments_workload ON deployments(workload_id, id);
)sql";

constexpr const char* kMigrations[] = {kSchemaV1, kSchemaV2, kSchemaV3, kSchemaV4, kSchemaV5};
constexpr int kMigrationCount = static_cast<int>(sizeof(kMigrations) / sizeof(kMigrations[0]));
static_assert(kMigrationCount == kSqliteSchemaVersion, "every schema version needs its migration");

void ErrorSignatureFunction(sqlite3_context* context, int argc, sqlite3_value** argv) {
  if (argc != 1 || sqlite3_value_type(argv[0]) == SQLITE_NULL) {
    sqlite3_result_text(context, "", 0, SQLITE_STATIC);
    return;
  }
  const unsigned char* text = sqlite3_value_text(argv[0]);
  int bytes = sqlite3_value_bytes(argv[0]);
  std::string signature =
      NormalizeError(std::string_view(reinterpret_cast<const char*>(text), bytes));
  sqlite3_result_text64(context, signature.data(), signature.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

}  // namespace

Status RegisterFunctions(Db& db) {
  return SqliteCheck(db.handle(),
                     sqlite3_create_function_v2(db.handle(), "kope_error_signature", 1,
                                                SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                                                ErrorSignatureFunction, nullptr, nullptr, nullptr),
                     "sqlite3_create_function_v2");
}

Status Migrate(Db& db, int target_version) {
  if (target_version < 1 || target_version > kMigrationCount) {
    return Status::Internal("no migration to schema version " + std::to_string(target_version));
  }
  KOPE_ASSIGN_OR_RETURN(int64_t version, db.QueryInt("PRAGMA user_version"));
  for (int64_t v = version + 1; v <= target_version; ++v) {
    Status status = db.Exec(kMigrations[v - 1]);
    if (!status.ok()) {
      return status.WithContext("migrating the store to schema version " + std::to_string(v));
    }
    KOPE_RETURN_IF_ERROR(db.Exec("PRAGMA user_version = " + std::to_string(v)));
  }
  return db.Exec("PRAGMA application_id = " + std::to_string(kApplicationId));
}

}  // namespace kope::memory::sqlite
