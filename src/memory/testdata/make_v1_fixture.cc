// Writes the schema-version-1 fixture (testdata/store_v1.db): a small experience store exactly as
// the first release wrote it, so that migration_test can check that later versions open it.
//
//   memory_make_v1_fixture OUT.db
//
// It applies migration 1 only and fills the tables with plain SQL in the version-1 layout (no
// later column may be used here). Timestamps are fixed, so the content is reproducible.
#include <cstdio>
#include <filesystem>
#include <string>

#include "../sqlite_db.h"
#include "../sqlite_schema.h"
#include "kope/base/hash.h"
#include "kope/memory/model.h"

namespace kope::memory::sqlite {
namespace {

constexpr int64_t kTime = 1767225600000;  // 2026-01-01T00:00:00Z

std::string Blob(const std::string& key) { return KeyToBlob(key); }

Status Fill(Db& db) {
  const std::string task_key = TaskKey("softmax_rows", "");
  const std::string hw_key = HardwareKey("cuda", "NVIDIA H100", "sm_90");
  const std::string run_key = ContentHash({"fixture run"});
  const std::string sources[] = {
      "__global__ void softmax(const float* x, float* y, int n) { /* naive */ }\n",
      "__global__ void softmax(const float4* x, float* y, int n) { /* float4 */ }\n",
      "__global__ void softmax(const float4* x, float* y, int n) { tile[0] = 1; }\n",
  };
  const char* decisions[] = {"baseline", "vectorize loads with float4",
                             "tile the row through shared memory"};
  const char* classes[] = {"", "vectorize-loads", "tile-shared-memory"};

  KOPE_ASSIGN_OR_RETURN(
      Query task,
      db.Prepare(
          "INSERT INTO tasks(key, name, op_family, description, size, log_size, spec_hash, attrs, "
          "created_at) VALUES (?, 'softmax_rows', 'softmax', 'row-wise softmax', 65536, ?, '', "
          "'{}', ?)"));
  task.BindBlob(1, Blob(task_key)).Bind(2, 4.816479930623699).Bind(3, kTime);
  KOPE_RETURN_IF_ERROR(task.Run());
  KOPE_ASSIGN_OR_RETURN(
      Query hw, db.Prepare("INSERT INTO hardware(key, backend, device, arch, attrs, created_at) "
                           "VALUES (?, 'cuda', 'NVIDIA H100', 'sm_90', '{\"sms\":132}', ?)"));
  hw.BindBlob(1, Blob(hw_key)).Bind(2, kTime);
  KOPE_RETURN_IF_ERROR(hw.Run());
  KOPE_ASSIGN_OR_RETURN(
      Query run,
      db.Prepare("INSERT INTO runs(key, task_id, hardware_id, label, compiler, config, started_at) "
                 "VALUES (?, 1, 1, 'optimize', 'nvcc 12.4', '{}', ?)"));
  run.BindBlob(1, Blob(run_key)).Bind(2, kTime);
  KOPE_RETURN_IF_ERROR(run.Run());

  std::string parent_key;
  for (int i = 0; i < 3; ++i) {
    const std::string hash = ContentHash(sources[i]);
    KOPE_ASSIGN_OR_RETURN(Query source,
                          db.Prepare("INSERT INTO sources(hash, text) VALUES (?, ?)"));
    source.BindBlob(1, Blob(hash)).Bind(2, sources[i]);
    KOPE_RETURN_IF_ERROR(source.Run());
    const std::string key = AttemptKey(run_key, parent_key, hash, decisions[i], "llm:fixture");
    KOPE_ASSIGN_OR_RETURN(
        Query attempt,
        db.Prepare(
            "INSERT INTO attempts(key, run_id, task_id, hardware_id, parent_id, source_id, diff, "
            "decision, classes, proposer, prompt_tokens, completion_tokens, created_at) "
            "VALUES (?, 1, 1, 1, ?, ?, ?, ?, ?, 'llm:fixture', 1200, 300, ?)"));
    attempt.BindBlob(1, Blob(key)).BindId(2, i == 0 ? 0 : (i == 1 ? 1 : 2)).Bind(3, i + 1);
    attempt.Bind(4, i == 0 ? "" : "--- a/parent\n+++ b/attempt\n@@ -1 +1 @@\n-old\n+new\n");
    attempt.Bind(5, decisions[i]).Bind(6, classes[i]).Bind(7, kTime + i);
    KOPE_RETURN_IF_ERROR(attempt.Run());
    const bool failed = i == 2;
    const std::string error =
        failed ? "/tmp/kope-77/kernel.cu(1): error: identifier \"tile\" is undefined" : "";
    const std::string evidence = failed ? "{}" : "{\"median_ms\":" + std::to_string(1.0 + i) + "}";
    KOPE_ASSIGN_OR_RETURN(
        Query outcome,
        db.Prepare("INSERT INTO outcomes(key, attempt_id, task_id, hardware_id, op_family, stage, "
                   "verdict, "
                   "flagged, speedup, time_ms, roofline, error_message, evidence, created_at) "
                   "VALUES (?, ?, 1, 1, 'softmax', 'unit', ?, 0, ?, ?, ?, ?, ?, ?)"));
    outcome.BindBlob(
        1, Blob(OutcomeKey(key, "unit", failed ? "compile_error" : "valid", evidence, error)));
    outcome.Bind(2, i + 1).Bind(3, failed ? "compile_error" : "valid");
    outcome.Bind(4, failed ? std::optional<double>() : std::optional<double>(1.0 + 0.5 * i));
    outcome.Bind(5, failed ? std::optional<double>() : std::optional<double>(2.0 / (1 + i)));
    outcome.Bind(6, failed ? std::optional<double>() : std::optional<double>(0.2 + 0.1 * i));
    outcome.Bind(7, error).Bind(8, evidence).Bind(9, kTime + i);
    KOPE_RETURN_IF_ERROR(outcome.Run());
    parent_key = key;
  }
  InsightScope scope;
  scope.op_family = "softmax";
  scope.backend = "cuda";
  scope.arch = "sm_90";
  const std::string text = "float4 loads speed up softmax rows";
  KOPE_ASSIGN_OR_RETURN(
      Query insight,
      db.Prepare(
          "INSERT INTO insights(key, kind, text, op_family, backend, device, arch, compiler, "
          "size_min, size_max, classes, support, contradiction, log_effect_sum, effect_size, "
          "created_at, updated_at) VALUES (?, 'lesson', ?, 'softmax', 'cuda', '', 'sm_90', '', 0, "
          "0, "
          "'vectorize-loads', 1, 0, 0.4054651081081644, 1.5, ?, ?)"));
  insight.BindBlob(1, Blob(InsightKey("lesson", scope, {"vectorize-loads"}, text))).Bind(2, text);
  insight.Bind(3, kTime).Bind(4, kTime);
  KOPE_RETURN_IF_ERROR(insight.Run());
  KOPE_RETURN_IF_ERROR(db.Exec(
      "INSERT INTO insight_evidence(insight_id, outcome_id, relation, effect, created_at) "
      "VALUES (1, 2, 1, 1.5, 1767225600000);"
      "INSERT INTO used(attempt_id, target_kind, target_id, section, score, tokens, credit) "
      "VALUES (3, 5, 1, 'insights', 0.6, 25, -0.1);"
      "INSERT INTO usage(target_kind, target_id, shown, credited, credit) VALUES (5, 1, 1, 1, "
      "-0.1);"
      // The full-text indexes are kept by the writer, not by triggers.
      "INSERT INTO tasks_fts(rowid, name, op_family, description) "
      "  SELECT id, name, op_family, description FROM tasks;"
      "INSERT INTO attempts_fts(rowid, decision, classes) SELECT id, decision, classes FROM "
      "attempts;"
      "INSERT INTO insights_fts(rowid, text) SELECT id, text FROM insights;"
      "INSERT INTO errors_fts(rowid, error_message) SELECT id, error_message FROM outcomes "
      "  WHERE error_message <> '';"));
  return Status::Ok();
}

Status Make(const std::filesystem::path& out) {
  std::error_code ec;
  if (std::filesystem::exists(out, ec) && !std::filesystem::is_regular_file(out, ec)) {
    return Status::InvalidArgument(out.string() + " exists and is not a regular file");
  }
  std::filesystem::remove(out, ec);
  KOPE_ASSIGN_OR_RETURN(std::unique_ptr<Db> db,
                        Db::Open(out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  KOPE_RETURN_IF_ERROR(db->Exec("PRAGMA page_size = 1024; PRAGMA journal_mode = DELETE;"));
  KOPE_RETURN_IF_ERROR(db->Exec("BEGIN"));
  KOPE_RETURN_IF_ERROR(Migrate(*db, 1));
  KOPE_RETURN_IF_ERROR(Fill(*db));
  KOPE_RETURN_IF_ERROR(db->Exec("COMMIT"));
  return db->Exec("VACUUM");
}

}  // namespace
}  // namespace kope::memory::sqlite

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT.db\n", argv[0]);
    return 2;
  }
  kope::Status status = kope::memory::sqlite::Make(argv[1]);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
