// The PostgreSQL store loses its connection (the server restarted, the connection was
// terminated): a write that was in its transaction fails whole, and the next call connects again
// and works.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <string>

#include "test_graph.h"
#include "testing/test_stores.h"

namespace kope::memory {
namespace {

using testing::MakeTask;
using testing::TempDir;
using testing::ValueOrDie;

constexpr const char* kApplication = "kope-reconnect-test";

// Terminates the store's connection from another one; how many it terminated.
int DropStoreConnection(const std::string& url) {
  PGconn* conn = PQconnectdb(url.c_str());
  PGresult* r = PQexec(conn,
                       "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                       "application_name = 'kope-reconnect-test' AND pid <> pg_backend_pid()");
  const int n = PQresultStatus(r) == PGRES_TUPLES_OK ? std::atoi(PQgetvalue(r, 0, 0)) : -1;
  PQclear(r);
  PQfinish(conn);
  return n;
}

TEST(PostgresReconnect, AWriteThatLosesItsConnectionFailsWholeAndTheNextOneReconnects) {
  TempDir dir;
  testing::TestStoreLocation where =
      testing::NewStoreLocation(testing::StoreKind::kPostgres, dir.path());
  if (where.location.empty()) GTEST_SKIP() << where.skip_reason;
  const std::string url = where.location + "&application_name=" + kApplication;
  const std::string other = where.location + "&application_name=kope-reconnect-killer";
  std::unique_ptr<GraphStore> store = testing::OpenLocationOrDie(url);
  KOPE_ASSERT_OK(store->Write(
      [](GraphWriter& w) { return w.PutTask(MakeTask("before", "softmax", 1e5, "")).status(); }));

  Status lost = store->Write([&](GraphWriter& w) -> Status {
    KOPE_RETURN_IF_ERROR(w.PutTask(MakeTask("inside", "softmax", 1e5, "")).status());
    EXPECT_EQ(DropStoreConnection(other), 1);
    return w.PutTask(MakeTask("after the drop", "softmax", 1e5, "")).status();
  });
  EXPECT_EQ(lost.code(), StatusCode::kUnavailable) << lost.ToString();

  // A read connects again; the failed write left nothing.
  std::vector<std::string> names;
  for (const TaskNode& t : ValueOrDie(store->ListTasks(""))) names.push_back(t.name);
  EXPECT_EQ(names, std::vector<std::string>{"before"});
  // So does a write, also when the connection is dropped between two calls.
  EXPECT_EQ(DropStoreConnection(other), 1);
  KOPE_ASSERT_OK(store->Write(
      [](GraphWriter& w) { return w.PutTask(MakeTask("later", "softmax", 1e5, "")).status(); }));
  // And a read, the first call after a drop.
  EXPECT_EQ(DropStoreConnection(other), 1);
  EXPECT_EQ(ValueOrDie(store->ListTasks("")).size(), 2u);
}

}  // namespace
}  // namespace kope::memory
