// Opening the store: default locations, and bad input (foreign, damaged, newer or read-only
// stores) refused with a clear error and the file left untouched.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "kope/base/file.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "kope/memory/store_location.h"
#include "test_graph.h"

namespace kope::memory {
namespace {

using testing::TempDir;
using testing::ValueOrDie;
using testing::WriteBytes;

// Opens `file` and expects a refusal whose message contains `words`, with `file` unchanged and
// no companion files created.
void ExpectRefused(const std::filesystem::path& file, StatusCode code, const std::string& words) {
  std::string before = ReadFileText(file).value_or("");
  auto store = OpenSqliteStore(file);
  ASSERT_FALSE(store.ok()) << file;
  EXPECT_EQ(store.status().code(), code) << store.status().ToString();
  EXPECT_NE(store.status().message().find(words), std::string::npos) << store.status().ToString();
  EXPECT_NE(store.status().message().find(file.string()), std::string::npos)
      << "the message names the file: " << store.status().ToString();
  EXPECT_EQ(ReadFileText(file).value_or(""), before) << "the file was changed";
  EXPECT_FALSE(std::filesystem::exists(file.string() + "-wal"));
}

TEST(OpenTest, TextFileIsRefusedUntouched) {
  TempDir dir;
  WriteBytes(dir / "notes.txt", "These are my notes, not a database.\n");
  ExpectRefused(dir / "notes.txt", StatusCode::kInvalidArgument, "not a SQLite database");
  WriteBytes(dir / "short", "SQLite");
  ExpectRefused(dir / "short", StatusCode::kInvalidArgument, "not a SQLite database");
}

TEST(OpenTest, SqliteDatabaseOfAnotherApplicationIsRefusedUntouched) {
  TempDir dir;
  std::filesystem::path file = dir / "photos.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE photos(id INTEGER PRIMARY KEY, path TEXT);"
                         "INSERT INTO photos(path) VALUES ('a.jpg'), ('b.jpg');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  ExpectRefused(file, StatusCode::kInvalidArgument, "another application");
  ExpectRefused(file, StatusCode::kInvalidArgument, "photos");
}

TEST(OpenTest, DamagedStoreIsRefusedUntouched) {
  TempDir dir;
  std::filesystem::path file = dir / "experience.db";
  {
    auto store = testing::OpenOrDie(file);
    KOPE_ASSERT_OK(store->Write(
        [](GraphWriter& w) { return w.PutTask(testing::MakeTask("t", "f", 1)).status(); }));
  }  // closing the last connection checkpoints the log into the file
  std::string bytes = ReadFileText(file).value_or("");
  ASSERT_GT(bytes.size(), 8192u);
  // Page 2 onwards overwritten: the schema page is intact, the tables are not.
  for (size_t i = 4096; i < bytes.size(); ++i) bytes[i] = static_cast<char>(0x5a ^ (i * 31));
  WriteBytes(file, bytes);
  ExpectRefused(file, StatusCode::kCorruption, "damaged");

  // Truncated in the middle of the first page.
  WriteBytes(file, bytes.substr(0, 2000));
  auto store = OpenSqliteStore(file);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(ReadFileText(file).value_or(""), bytes.substr(0, 2000));
}

TEST(OpenTest, StoreOfANewerSchemaIsRefusedUntouched) {
  TempDir dir;
  std::filesystem::path file = dir / "experience.db";
  testing::OpenOrDie(file).reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99; PRAGMA journal_mode = DELETE;", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  ExpectRefused(file, StatusCode::kFailedPrecondition, "newer kope");
}

TEST(OpenTest, MissingStoreIsCreatedWithItsFolderUnlessAskedNotTo) {
  TempDir dir;
  std::filesystem::path file = dir / "deep" / "er" / "experience.db";
  StoreOptions no_create;
  no_create.create_if_missing = false;
  auto missing = OpenSqliteStore(file, no_create);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(file.parent_path()));
  testing::OpenOrDie(file);
  EXPECT_TRUE(std::filesystem::exists(file));
  // An empty file (e.g. made by touch) becomes a store.
  WriteBytes(dir / "empty.db", "");
  testing::OpenOrDie(dir / "empty.db");
  // So does a SQLite file with a header but no tables: what another kope process leaves between
  // creating a store and writing its schema.
  sqlite3* fresh = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "fresh.db").c_str(), &fresh), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(fresh, "PRAGMA journal_mode = WAL;", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(fresh);
  ASSERT_GT(std::filesystem::file_size(dir / "fresh.db"), 0u);
  testing::OpenOrDie(dir / "fresh.db");
  // A folder is not a store.
  auto folder = OpenSqliteStore(dir.path());
  EXPECT_EQ(folder.status().code(), StatusCode::kInvalidArgument);
}

// Runs `body` in a child process without root's privilege to write anywhere, and returns its
// exit code.
template <typename Body>
int InUnprivilegedChild(Body body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(90);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST(OpenTest, ReadOnlyLocationIsRefusedBeforeAnyWork) {
  TempDir dir;
  std::filesystem::permissions(dir.path(), std::filesystem::perms(0755));
  std::filesystem::path ro_dir = dir / "readonly";
  std::filesystem::create_directory(ro_dir);
  std::filesystem::permissions(ro_dir, std::filesystem::perms(0555));
  // A store file that exists but cannot be written, in a writable folder.
  std::filesystem::path rw_dir = dir / "writable";
  std::filesystem::create_directory(rw_dir);
  std::filesystem::permissions(rw_dir, std::filesystem::perms(0777));
  testing::OpenOrDie(rw_dir / "experience.db").reset();
  std::filesystem::permissions(rw_dir / "experience.db", std::filesystem::perms(0444));
  std::string before = ReadFileText(rw_dir / "experience.db").value_or("");

  int code = InUnprivilegedChild([&] {
    auto in_ro_dir = OpenSqliteStore(ro_dir / "experience.db");
    if (in_ro_dir.ok() || in_ro_dir.status().code() != StatusCode::kIoError) return 1;
    if (in_ro_dir.status().message().find("is not writable") == std::string::npos) return 2;
    if (std::filesystem::exists(ro_dir / "experience.db")) return 3;
    auto ro_file = OpenSqliteStore(rw_dir / "experience.db");
    if (ro_file.ok() || ro_file.status().code() != StatusCode::kIoError) return 4;
    if (ro_file.status().message().find("the file is not writable") == std::string::npos) return 5;
    return 0;
  });
  EXPECT_EQ(code, 0) << "see the numbered checks in the child";
  EXPECT_EQ(ReadFileText(rw_dir / "experience.db").value_or(""), before);
}

TEST(OpenTest, LocationPrecedence) {
  const char* saved_store = std::getenv("KOPE_STORE");
  const char* saved_xdg = std::getenv("XDG_DATA_HOME");
  std::string store_value = saved_store ? saved_store : "";
  std::string xdg_value = saved_xdg ? saved_xdg : "";
  ::setenv("KOPE_STORE", "/from/env.db", 1);
  EXPECT_EQ(ValueOrDie(ResolveStoreLocation("/from/flag.db")), "/from/flag.db");
  EXPECT_EQ(ValueOrDie(ResolveStoreLocation("")), "/from/env.db");
  ::unsetenv("KOPE_STORE");
  ::setenv("XDG_DATA_HOME", "/xdg", 1);
  EXPECT_EQ(ValueOrDie(ResolveStoreLocation("")), "/xdg/kope/experience.db");
  ::unsetenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  if (home != nullptr) {
    EXPECT_EQ(ValueOrDie(ResolveStoreLocation("")),
              std::string(home) + "/.local/share/kope/experience.db");
  }
  // A PostgreSQL URL opens the shared store (here: no server listens there).
  EXPECT_EQ(OpenStore("postgresql://127.0.0.1:1/kope?connect_timeout=5").status().code(),
            StatusCode::kUnavailable);
  if (saved_store) ::setenv("KOPE_STORE", store_value.c_str(), 1);
  if (saved_xdg) ::setenv("XDG_DATA_HOME", xdg_value.c_str(), 1);
}

}  // namespace
}  // namespace kope::memory
