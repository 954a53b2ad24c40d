// Test support: one suite of store tests, run against every GraphStore implementation.
//
// A value-parameterized suite takes a StoreKind; NewStoreLocation gives each test a fresh,
// empty store of that kind: a file in the test's folder for SQLite, a new schema of a throw-away
// PostgreSQL cluster for PostgreSQL. The cluster (initdb and postgres from PostgreSQL's binaries,
// in a temp folder, listening on a unix socket in that folder only) starts at the first
// PostgreSQL test of a test binary, is shared by all of them, and is stopped when the binary's
// tests end (a gtest Environment) or when the binary dies (the server gets SIGKILL with its
// parent). Run as root, the cluster runs as the unprivileged "postgres" user (initdb refuses
// root). Where no PostgreSQL binaries are found (KOPE_POSTGRES_BIN, pg_config --bindir,
// /usr/lib/postgresql/*/bin), or the cluster does not start, PostgreSQL tests are skipped with
// the reason.
#ifndef KOPE_SRC_MEMORY_TESTING_TEST_STORES_H_
#define KOPE_SRC_MEMORY_TESTING_TEST_STORES_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace kope::memory::testing {

enum class StoreKind { kSqlite, kPostgres };

// "Sqlite" / "Postgres", for test names.
std::string StoreKindName(const ::testing::TestParamInfo<StoreKind>& info);

struct TestStoreLocation {
  std::string location;     // for OpenStore; empty when skipped
  std::string skip_reason;  // why this kind cannot be tested here
};

// A fresh store location of `kind`; SQLite's is `dir`/`file`.
TestStoreLocation NewStoreLocation(StoreKind kind, const std::filesystem::path& dir,
                                   const std::string& file = "experience.db");

// The URL of the shared test cluster's maintenance database (PostgreSQL tests beyond the store:
// the job queue), or "" with `skip_reason` set.
std::string TestClusterUrl(std::string* skip_reason);

}  // namespace kope::memory::testing

// Both stores, for INSTANTIATE_TEST_SUITE_P.
#define KOPE_ALL_STORES                                             \
  ::testing::Values(::kope::memory::testing::StoreKind::kSqlite,    \
                    ::kope::memory::testing::StoreKind::kPostgres), \
      ::kope::memory::testing::StoreKindName

#endif  // KOPE_SRC_MEMORY_TESTING_TEST_STORES_H_
