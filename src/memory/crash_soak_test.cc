// The store under crashes: two episodes' writers (memory_crash_writer) on one store, SQLite or
// PostgreSQL, each SIGKILLed at a random moment, round after round. After every round the store
// opens, passes its integrity check and the graph's invariants, and holds every record
// acknowledged before the kills; each writer then resumes its run, and a run finished at the end
// holds each step once. KOPE_SOAK_KILLS sets the number of kills per store (default 20;
// scripts/soak-store runs 1,000).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "test_graph.h"
#include "testing/test_stores.h"

namespace kope::memory {
namespace {

using testing::TempDir;
using testing::ValueOrDie;
using Clock = std::chrono::steady_clock;

struct Acks {
  std::vector<std::string> attempts, outcomes;
};

// A running memory_crash_writer; its acknowledgements come through a pipe.
class Writer {
 public:
  Writer(const std::string& store, const std::string& label, long count) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      const std::string count_text = std::to_string(count);
      ::execl(KOPE_MEMORY_CRASH_WRITER, KOPE_MEMORY_CRASH_WRITER, store.c_str(), label.c_str(),
              count_text.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~Writer() { ::close(fd_); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Reads acknowledgements; SIGKILL `delay` after the first one (or, with `from_start`, after
  // this call began; and in any case a minute after it began), then reads what was sent before.
  void Collect(std::chrono::milliseconds delay, bool from_start, Acks* acks) {
    const auto start = Clock::now();
    auto deadline = start + (from_start ? delay : std::chrono::minutes(1));
    bool killed = false, acknowledged = false;
    std::string pending;
    while (true) {
      int timeout_ms = -1;
      if (!killed) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) == 0 && !killed) {
        ::kill(pid_, SIGKILL);
        killed = true;
        continue;
      }
      char buffer[4096];
      const ssize_t n = ::read(fd_, buffer, sizeof(buffer));
      if (n <= 0) break;
      pending.append(buffer, static_cast<size_t>(n));
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
        const std::string line = pending.substr(0, nl);
        if (line.rfind("attempt ", 0) == 0) acks->attempts.push_back(line.substr(8));
        if (line.rfind("outcome ", 0) == 0) acks->outcomes.push_back(line.substr(8));
        if (!acknowledged && !from_start) deadline = std::min(deadline, Clock::now() + delay);
        acknowledged = true;
      }
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    killed_ = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  bool killed() const { return killed_; }
  int exit_code() const { return exit_code_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  bool killed_ = false;
  int exit_code_ = -1;
};

// The one integer a query returns, through the store's own client library (the test reads
// the tables as they are, not through the store's code).
class Sql {
 public:
  explicit Sql(const std::string& location) {
    if (location.rfind("postgres", 0) == 0) {
      pg_ = PQconnectdb(location.c_str());
      EXPECT_EQ(PQstatus(pg_), CONNECTION_OK) << PQerrorMessage(pg_);
    } else {
      EXPECT_EQ(sqlite3_open_v2(location.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    }
  }
  ~Sql() {
    if (pg_ != nullptr) PQfinish(pg_);
    if (db_ != nullptr) sqlite3_close(db_);
  }
  Sql(const Sql&) = delete;
  Sql& operator=(const Sql&) = delete;

  int64_t Count(const char* sql) {
    int64_t value = -1;
    if (pg_ != nullptr) {
      PGresult* r = PQexec(pg_, sql);
      EXPECT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(pg_) << sql;
      if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        value = std::strtoll(PQgetvalue(r, 0, 0), nullptr, 10);
      }
      PQclear(r);
      return value;
    }
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
    if (sqlite3_step(stmt) == SQLITE_ROW) value = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return value;
  }

 private:
  sqlite3* db_ = nullptr;
  PGconn* pg_ = nullptr;
};

// The graph's invariants, each a query that must count 0.
struct Invariant {
  const char* name;
  const char* sql;
};
constexpr Invariant kInvariants[] = {
    {"every outcome has its attempt",
     "SELECT count(*) FROM outcomes o LEFT JOIN attempts a ON a.id = o.attempt_id "
     "WHERE a.id IS NULL"},
    {"an attempt has one outcome at most",
     "SELECT count(*) FROM (SELECT attempt_id FROM outcomes GROUP BY attempt_id "
     "HAVING count(*) > 1) AS t"},
    {"every parent exists and is older (the lineage is acyclic)",
     "SELECT count(*) FROM attempts a LEFT JOIN attempts p ON p.id = a.parent_id "
     "WHERE a.parent_id IS NOT NULL AND a.parent_id != 0 AND (p.id IS NULL OR p.id >= a.id)"},
    {"no step of a run recorded twice",
     "SELECT count(*) FROM (SELECT decision FROM attempts GROUP BY run_id, decision "
     "HAVING count(*) > 1) AS t"},
    {"at most the attempt in flight lacks its outcome",
     "SELECT count(*) FROM (SELECT run_id FROM attempts a WHERE NOT EXISTS "
     "(SELECT 1 FROM outcomes o WHERE o.attempt_id = a.id) GROUP BY run_id HAVING count(*) > 1) "
     "AS t"},
};

// Integrity, invariants and the acknowledged records; returns the records checked.
int64_t CheckStore(const std::string& location, const Acks& acks) {
  auto store = testing::OpenLocationOrDie(location);
  // SQLite: PRAGMA integrity_check and the FTS indexes; PostgreSQL: every row of every table
  // read, and the references without a foreign key.
  const Status integrity = store->CheckIntegrity();
  EXPECT_TRUE(integrity.ok()) << integrity.ToString();
  Sql sql(location);
  for (const Invariant& inv : kInvariants) EXPECT_EQ(sql.Count(inv.sql), 0) << inv.name;
  const StoreStats stats = ValueOrDie(store->Stats());
  EXPECT_EQ(stats.attempts, sql.Count("SELECT count(*) FROM attempts"));
  EXPECT_EQ(stats.outcomes, sql.Count("SELECT count(*) FROM outcomes"));
  for (const std::string& key : acks.attempts) {
    EXPECT_TRUE(store->FindByKey(NodeKind::kAttempt, key).ok()) << "lost attempt " << key;
  }
  for (const std::string& key : acks.outcomes) {
    EXPECT_TRUE(store->FindByKey(NodeKind::kOutcome, key).ok()) << "lost outcome " << key;
  }
  return static_cast<int64_t>(acks.attempts.size() + acks.outcomes.size());
}

int Kills() {
  const char* text = std::getenv("KOPE_SOAK_KILLS");
  return text != nullptr ? std::max(2, std::atoi(text)) : 20;
}

constexpr const char* kLabels[] = {"episode a", "episode b"};

// Each run finished: every step 0..n-1 once, in order, each with its one outcome.
void FinishRuns(const std::string& path) {
  for (const char* label : kLabels) {
    auto store = testing::OpenLocationOrDie(path);
    const std::vector<RunNode> runs = ValueOrDie(store->ListRuns(0));
    long before = 0;
    for (const RunNode& r : runs) {
      if (r.label == label) before = static_cast<long>(ValueOrDie(store->RunAttempts(r.id)).size());
    }
    store.reset();
    Writer writer(path, label, before + 3);
    Acks acks;
    writer.Collect(std::chrono::minutes(5), /*from_start=*/true, &acks);
    ASSERT_EQ(writer.exit_code(), 0) << label;
    store = testing::OpenLocationOrDie(path);
    for (const RunNode& r : ValueOrDie(store->ListRuns(0))) {
      if (r.label != label) continue;
      const std::vector<AttemptView> attempts = ValueOrDie(store->RunAttempts(r.id));
      ASSERT_EQ(attempts.size(), static_cast<size_t>(before + 3)) << label;
      for (size_t i = 0; i < attempts.size(); ++i) {
        EXPECT_EQ(attempts[i].attempt.decision, std::string(label) + " step " + std::to_string(i));
        EXPECT_TRUE(attempts[i].outcome.has_value()) << attempts[i].attempt.decision;
      }
    }
  }
}

class CrashSoak : public ::testing::TestWithParam<testing::StoreKind> {};

TEST_P(CrashSoak, KilledWritersLoseNothingAndResumeWithoutDuplicates) {
  TempDir dir;
  const testing::TestStoreLocation where = testing::NewStoreLocation(GetParam(), dir.path());
  if (where.location.empty()) GTEST_SKIP() << where.skip_reason;
  const std::string& path = where.location;
  std::mt19937 rng(20261202);
  std::uniform_int_distribution<int> delay_ms(0, 120);
  // One kill in four at any moment from the start (opening, creating the schema), the others at
  // a random moment of the writes.
  std::uniform_int_distribution<int> quarter(0, 3);
  Acks acks;
  int kills = 0;
  int64_t checked = 0;
  for (int round = 0; kills < Kills(); ++round) {
    Writer a(path, kLabels[0], 1000000), b(path, kLabels[1], 1000000);
    for (Writer* w : {&a, &b}) {
      w->Collect(std::chrono::milliseconds(delay_ms(rng)), quarter(rng) == 0, &acks);
    }
    for (const Writer* w : {&a, &b}) {
      ASSERT_TRUE(w->killed()) << "round " << round << ": exit code " << w->exit_code();
      ++kills;
    }
    checked += CheckStore(path, acks);
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(acks.outcomes.size(), 0u) << "no writer got as far as a commit";
  FinishRuns(path);
  checked += CheckStore(path, acks);
  std::printf(
      "crash soak (%s): %d kills survived, %zu acknowledged records, %lld record checks, "
      "lost 0\n",
      GetParam() == testing::StoreKind::kSqlite ? "SQLite" : "PostgreSQL", kills,
      acks.attempts.size() + acks.outcomes.size(), static_cast<long long>(checked));
}

INSTANTIATE_TEST_SUITE_P(BothStores, CrashSoak, KOPE_ALL_STORES);

}  // namespace
}  // namespace kope::memory
