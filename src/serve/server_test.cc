// The HTTP server: pages, assets and the API over a socket; page statuses for unknown and
// malformed ids; loopback by default and the token everywhere else.
#include "kope/serve/server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "kope/memory/sqlite/sqlite_store.h"
#include "testing/optimized_store.h"

namespace kope::serve {
namespace {

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const testing::OptimizedStore& made = testing::SharedOptimizedStore();
    ASSERT_TRUE(made.error.empty()) << made.error;
    auto store = memory::OpenSqliteStore(made.store, {.create_if_missing = false});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    run_ = made.run;
  }

  std::unique_ptr<Server> StartServer(ServerOptions options) {
    options.port = 0;
    auto server = Server::Start(*store_, options);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    return server.ok() ? std::move(server).value() : nullptr;
  }

  std::unique_ptr<memory::GraphStore> store_;
  int64_t run_ = 0;
};

TEST_F(ServerTest, PagesAssetsAndApi) {
  auto server = StartServer({});
  ASSERT_TRUE(server);
  httplib::Client client("127.0.0.1", server->port());
  struct Case {
    std::string path;
    int status;
    std::string type;  // the start of the content type
    std::string holds;
  };
  const std::string run = std::to_string(run_);
  const Case cases[] = {
      {"/", 200, "text/html", "/static/app.js"},
      {"/runs/" + run, 200, "text/html", "<main"},
      {"/runs/" + run + "/live", 200, "text/html", "<main"},
      {"/insights", 200, "text/html", "<main"},
      {"/search?q=tune", 200, "text/html", "<main"},
      {"/attempts/999999", 404, "text/html", "<main"},
      {"/attempts/abc", 400, "text/html", "<main"},
      {"/runs/" + run + "/nope", 404, "text/html", "<main"},
      {"/nowhere", 404, "text/html", "<main"},
      {"/static/app.js", 200, "text/javascript", "kope.start"},
      {"/static/app.css", 200, "text/css", "svg"},
      {"/static/missing.js", 404, "text/plain", ""},
      {"/static/hljs/..%2f..%2fetc%2fpasswd", 404, "", ""},
      {"/api/stats", 200, "application/json", "\"attempts\":4"},
      {"/api/runs/" + run + "/tree", 200, "application/json", "\"nodes\""},
      {"/api/attempts/999999", 404, "application/json", "\"error\""},
  };
  for (const Case& c : cases) {
    auto res = client.Get(c.path);
    ASSERT_TRUE(res) << c.path;
    EXPECT_EQ(res->status, c.status) << c.path;
    EXPECT_EQ(res->get_header_value("Content-Type").rfind(c.type, 0), 0u)
        << c.path << ": " << res->get_header_value("Content-Type");
    EXPECT_NE(res->body.find(c.holds), std::string::npos) << c.path;
  }
  auto post = client.Post("/api/stats", "", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_NE(post->status, 200);
}

TEST_F(ServerTest, TokenGuardsEveryRequest) {
  ServerOptions open;
  open.bind = "0.0.0.0";
  open.port = 0;
  EXPECT_EQ(Server::Start(*store_, open).status().code(), StatusCode::kInvalidArgument);
  ServerOptions guarded;
  guarded.token = "s3cret";
  auto server = StartServer(guarded);
  ASSERT_TRUE(server);
  httplib::Client client("127.0.0.1", server->port());
  struct Case {
    std::string path;
    httplib::Headers headers;
    int status;
  };
  const Case cases[] = {
      {"/api/stats", {}, 401},
      {"/", {}, 401},
      {"/static/app.js", {}, 401},
      {"/api/stats?token=wrong", {}, 401},
      {"/api/stats", {{"Authorization", "Bearer wrong"}}, 401},
      {"/api/stats", {{"Authorization", "Bearer s3cret"}}, 200},
      {"/api/stats", {{"Cookie", "other=1; kope_token=s3cret"}}, 200},
      {"/api/runs?token=s3cret", {}, 200},  // the token is not an unknown parameter
  };
  for (const Case& c : cases) {
    auto res = client.Get(c.path, c.headers);
    ASSERT_TRUE(res) << c.path;
    EXPECT_EQ(res->status, c.status) << c.path;
  }
  auto link = client.Get("/?token=s3cret");
  ASSERT_TRUE(link);
  EXPECT_EQ(link->status, 200);
  EXPECT_NE(link->get_header_value("Set-Cookie").find("kope_token=s3cret"), std::string::npos);
  EXPECT_NE(link->get_header_value("Set-Cookie").find("HttpOnly"), std::string::npos);
}

TEST(ServerAddress, LoopbackAddresses) {
  const std::pair<std::string, bool> cases[] = {
      {"127.0.0.1", true},  {"127.1.2.3", true},    {"localhost", true}, {"::1", true},
      {"0.0.0.0", false},   {"10.0.0.1", false},    {"::", false},       {"", false},
      {"128.0.0.1", false}, {"example.com", false},
  };
  for (const auto& [address, loopback] : cases) {
    EXPECT_EQ(IsLoopbackAddress(address), loopback) << address;
  }
}

}  // namespace
}  // namespace kope::serve
