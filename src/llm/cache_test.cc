// The response cache: hits, misses, replay, record, and that no key is stored.
#include "kope/llm/cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "kope/base/file.h"
#include "kope/llm/open_provider.h"
#include "kope/llm/scripted.h"
#include "kope/llm/usage.h"
#include "llm/testing/llm_test_server.h"

namespace kope::llm {
namespace {

namespace fs = std::filesystem;
using testing::LlmTestServer;
using testing::ServerAction;

constexpr char kKeyVariable[] = "KOPE_TEST_CACHE_KEY";
constexpr char kKey[] = "sk-cache-test-SECRET-4242";

LlmRequest Ask(std::string text) {
  LlmRequest r;
  r.system = "sys";
  r.messages = {{Role::kUser, std::move(text)}};
  return r;
}

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = LlmTestServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    server_->RequireKey(kKey);
    setenv(kKeyVariable, kKey, 1);
    std::string pattern = (fs::temp_directory_path() / "kope-llm-cache-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    unsetenv(kKeyVariable);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  ProviderConfig Config() const {
    ProviderConfig c = DefaultProviderConfig(ProviderKind::kAnthropic, "cached");
    c.base_url = server_->anthropic_base_url();
    c.model = "m";
    c.api_key_env = kKeyVariable;
    c.retries = 0;
    return c;
  }

  std::unique_ptr<LlmProvider> Open(CacheMode mode) {
    auto p = OpenProvider(Config(), {dir_, mode});
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(p).value() : nullptr;
  }

  std::unique_ptr<LlmTestServer> server_;
  fs::path dir_;
};

TEST_F(CacheTest, ReadWriteServesRepeatsFromTheCache) {
  server_->Enqueue(ServerAction::Reply("first", 10, 20));
  server_->Enqueue(ServerAction::Reply("second", 30, 40));
  auto provider = Open(CacheMode::kReadWrite);
  Result<LlmResponse> a = provider->Complete(Ask("q"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_FALSE(a->cached);
  Result<LlmResponse> b = provider->Complete(Ask("q"));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(b->cached);
  EXPECT_EQ(b->text, "first");
  EXPECT_EQ(b->usage.prompt_tokens, 10);
  EXPECT_EQ(b->usage.completion_tokens, 20);
  EXPECT_EQ(b->attempts, 0);
  EXPECT_EQ(server_->requests().size(), 1u);

  // A different prompt or parameter is a miss.
  LlmRequest warmer = Ask("q");
  warmer.temperature = 0.9;
  Result<LlmResponse> c = provider->Complete(warmer);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->cached);
  EXPECT_EQ(c->text, "second");
  EXPECT_EQ(server_->requests().size(), 2u);

  // A cached reply costs nothing now and is counted apart.
  PriceTable prices;
  prices.Set("m", {1, 1});
  UsageLedger ledger(prices);
  ledger.Record(*a);
  ledger.Record(*b);
  EXPECT_EQ(ledger.totals().calls, 1);
  EXPECT_EQ(ledger.totals().cached_calls, 1);
  EXPECT_EQ(ledger.totals().cached_completion_tokens, 20);
  EXPECT_DOUBLE_EQ(ledger.totals().cost_usd, 30 / 1e6);
}

TEST_F(CacheTest, ReplayAnswersFromTheCacheAndFailsOnAMiss) {
  server_->Enqueue(ServerAction::Reply("recorded"));
  ASSERT_TRUE(Open(CacheMode::kRecord)->Complete(Ask("known")).ok());
  auto replay = Open(CacheMode::kReplay);
  server_.reset();  // replay never needs the server
  Result<LlmResponse> hit = replay->Complete(Ask("known"));
  ASSERT_TRUE(hit.ok()) << hit.status().ToString();
  EXPECT_EQ(hit->text, "recorded");
  EXPECT_TRUE(hit->cached);

  Result<LlmResponse> miss = replay->Complete(Ask("unknown"));
  ASSERT_FALSE(miss.ok());
  EXPECT_EQ(miss.status().code(), StatusCode::kNotFound);
  const std::string& m = miss.status().message();
  EXPECT_NE(m.find("replay mode: no recorded reply"), std::string::npos) << m;
  EXPECT_NE(m.find(dir_.string()), std::string::npos) << m;
  std::string key = ResponseCache::Key(replay->identity(), *replay->Resolve(Ask("unknown")));
  EXPECT_NE(m.find(key), std::string::npos) << m;
}

TEST_F(CacheTest, RecordAlwaysCallsAndOverwrites) {
  server_->Enqueue(ServerAction::Reply("old"));
  server_->Enqueue(ServerAction::Reply("new"));
  auto record = Open(CacheMode::kRecord);
  ASSERT_EQ(record->Complete(Ask("q"))->text, "old");
  ASSERT_EQ(record->Complete(Ask("q"))->text, "new");
  EXPECT_EQ(server_->requests().size(), 2u);
  Result<LlmResponse> replayed = Open(CacheMode::kReplay)->Complete(Ask("q"));
  ASSERT_TRUE(replayed.ok());
  EXPECT_EQ(replayed->text, "new");
}

TEST_F(CacheTest, KeyCoversProviderModelPromptAndParameters) {
  ProviderIdentity id{"x", ProviderKind::kOpenAi, "http://h/v1", "m"};
  LlmRequest r = Ask("q");
  r.model = "m";
  const std::string base = ResponseCache::Key(id, r);
  EXPECT_EQ(ResponseCache::Key({"other-name", id.kind, "http://h/v1/", "m"}, r), base);
  EXPECT_NE(ResponseCache::Key({"x", ProviderKind::kAnthropic, id.base_url, "m"}, r), base);
  EXPECT_NE(ResponseCache::Key({"x", id.kind, "http://other/v1", "m"}, r), base);
  auto changed = [&](auto edit) {
    LlmRequest copy = r;
    edit(copy);
    return ResponseCache::Key(id, copy) != base;
  };
  EXPECT_TRUE(changed([](LlmRequest& c) { c.model = "m2"; }));
  EXPECT_TRUE(changed([](LlmRequest& c) { c.system = "other"; }));
  EXPECT_TRUE(changed([](LlmRequest& c) { c.messages[0].content = "q2"; }));
  EXPECT_TRUE(changed([](LlmRequest& c) { c.messages.push_back({Role::kAssistant, "a"}); }));
  EXPECT_TRUE(changed([](LlmRequest& c) { c.temperature = 0.0; }));
  EXPECT_TRUE(changed([](LlmRequest& c) { c.max_tokens = 10; }));
  EXPECT_TRUE(changed([](LlmRequest& c) { c.stop = {"x"}; }));
  std::atomic<bool> flag{false};
  EXPECT_FALSE(changed([&](LlmRequest& c) { c.cancel = &flag; }));
}

TEST_F(CacheTest, NeitherEntriesNorErrorsContainTheKey) {
  server_->Enqueue(ServerAction::Reply("one"));
  auto provider = Open(CacheMode::kReadWrite);
  ASSERT_TRUE(provider->Complete(Ask("q")).ok());
  server_->RequireKey("a-different-key");  // now the server rejects ours and echoes it
  Result<LlmResponse> rejected = provider->Complete(Ask("q2"));
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().message().find(kKey), std::string::npos)
      << rejected.status().message();
  size_t entries = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    if (!e.is_regular_file()) continue;
    ++entries;
    EXPECT_EQ(ReadFileText(e.path()).value_or("").find(kKey), std::string::npos) << e.path();
  }
  EXPECT_EQ(entries, 1u);
}

TEST_F(CacheTest, CorruptEntryFailsReplayAndIsRefetchedOtherwise) {
  server_->Enqueue(ServerAction::Reply("v1"));
  server_->Enqueue(ServerAction::Reply("v2"));
  auto provider = Open(CacheMode::kReadWrite);
  ASSERT_TRUE(provider->Complete(Ask("q")).ok());
  fs::path entry = fs::path(dir_) / "x";
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    if (e.is_regular_file()) entry = e.path();
  }
  std::ofstream(entry, std::ios::trunc) << "{ not json";
  Result<LlmResponse> replay = Open(CacheMode::kReplay)->Complete(Ask("q"));
  ASSERT_FALSE(replay.ok());
  EXPECT_EQ(replay.status().code(), StatusCode::kCorruption);
  Result<LlmResponse> again = provider->Complete(Ask("q"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->text, "v2");
  EXPECT_FALSE(again->cached);
}

TEST(CacheModeTest, NamesRoundTrip) {
  for (CacheMode m :
       {CacheMode::kOff, CacheMode::kReadWrite, CacheMode::kRecord, CacheMode::kReplay}) {
    EXPECT_EQ(*ParseCacheMode(CacheModeName(m)), m);
  }
  EXPECT_FALSE(ParseCacheMode("sometimes").ok());
}

TEST(CacheOffTest, OffReturnsTheProviderItself) {
  auto scripted = std::make_unique<ScriptedProvider>(std::vector<ScriptedReply>{{"x"}});
  LlmProvider* raw = scripted.get();
  auto wrapped = WithCache(std::move(scripted), {"", CacheMode::kOff});
  ASSERT_TRUE(wrapped.ok());
  EXPECT_EQ(wrapped->get(), raw);
}

}  // namespace
}  // namespace kope::llm
