// Timeouts, cancellation and the concurrency limit of the HTTP providers,
// against a real local server.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "http_client.h"
#include "http_provider.h"
#include "llm/testing/llm_test_server.h"

namespace kope::llm {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::LlmTestServer;
using testing::ServerAction;

LlmRequest Hello() {
  LlmRequest r;
  r.messages = {{Role::kUser, "Say ok."}};
  return r;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class HttpLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = LlmTestServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
  }

  ProviderConfig Config() const {
    ProviderConfig c = DefaultProviderConfig(ProviderKind::kOpenAi, "limits");
    c.base_url = server_->openai_base_url();
    c.model = "test-model";
    c.api_key_env = "";
    c.retries = 0;
    c.backoff_initial_s = 0.01;
    c.backoff_max_s = 0.05;
    return c;
  }

  static std::unique_ptr<HttpProvider> Make(const ProviderConfig& c) {
    return std::make_unique<HttpProvider>(c, "", MakeOpenAiWire(c));
  }

  std::unique_ptr<LlmTestServer> server_;
};

// The call ends near its timeout, not when the slow server would have answered.
// The bound below only tells "ended at the timeout" from "waited for the server".
TEST_F(HttpLimitsTest, SlowServerHitsTheTimeout) {
  ProviderConfig c = Config();
  c.timeout_s = 1;
  c.retries = 3;
  server_->SetDefault(ServerAction::Slow(seconds(60)));
  Clock::time_point start = Clock::now();
  Result<LlmResponse> r = Make(c)->Complete(Hello());
  double took = SecondsSince(start);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("timeout_s = 1"), std::string::npos) << r.status().message();
  EXPECT_LT(took, 1.0 + 10.0);  // far below the server's 60 s
}

TEST_F(HttpLimitsTest, AttemptTimeoutRetriesWithinTheCallTimeout) {
  ProviderConfig c = Config();
  c.attempt_timeout_s = 0.3;
  c.timeout_s = 60;
  c.retries = 2;
  server_->Enqueue(ServerAction::Slow(seconds(60)));
  server_->Enqueue(ServerAction::Slow(seconds(60)));
  server_->Enqueue(ServerAction::Reply("third time"));
  Result<LlmResponse> r = Make(c)->Complete(Hello());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "third time");
  EXPECT_EQ(r->attempts, 3);
}

TEST_F(HttpLimitsTest, CancellationStopsARequestInFlight) {
  server_->SetDefault(ServerAction::Slow(seconds(60)));
  std::atomic<bool> cancel{false};
  LlmRequest request = Hello();
  request.cancel = &cancel;
  auto provider = Make(Config());
  auto call = std::async(std::launch::async, [&] { return provider->Complete(request); });
  ASSERT_TRUE(server_->WaitForRequests(1, seconds(30)));
  cancel = true;
  ASSERT_EQ(call.wait_for(seconds(30)), std::future_status::ready);
  Result<LlmResponse> r = call.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status().ToString();
}

TEST_F(HttpLimitsTest, CancellationStopsTheBackoffWait) {
  ProviderConfig c = Config();
  c.retries = 5;
  c.backoff_initial_s = 60;
  c.backoff_max_s = 60;
  c.timeout_s = 600;
  server_->SetDefault(ServerAction::Error(429, "120"));
  std::atomic<bool> cancel{false};
  LlmRequest request = Hello();
  request.cancel = &cancel;
  std::promise<milliseconds> backing_off;
  HttpProviderHooks hooks;
  hooks.sleep = [&](milliseconds wait, const std::atomic<bool>* flag) {
    backing_off.set_value(wait);
    return SleepUnlessCancelled(wait, flag);  // the real wait
  };
  HttpProvider provider(c, "", MakeOpenAiWire(c), hooks);
  auto call = std::async(std::launch::async, [&] { return provider.Complete(request); });
  std::future<milliseconds> wait = backing_off.get_future();
  ASSERT_EQ(wait.wait_for(seconds(30)), std::future_status::ready);
  EXPECT_EQ(wait.get(), seconds(120));  // Retry-After
  cancel = true;
  ASSERT_EQ(call.wait_for(seconds(30)), std::future_status::ready);
  Result<LlmResponse> r = call.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_NE(r.status().message().find("waiting to retry"), std::string::npos);
  EXPECT_EQ(server_->requests().size(), 1u);
}

TEST_F(HttpLimitsTest, CancelledBeforeSendingSendsNothing) {
  std::atomic<bool> cancel{true};
  LlmRequest request = Hello();
  request.cancel = &cancel;
  Result<LlmResponse> r = Make(Config())->Complete(request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  EXPECT_TRUE(server_->requests().empty());
}

// The server holds each request until `limit` are in flight, so if the
// provider let more through the count would exceed the limit.
void CheckConcurrencyLimit(LlmTestServer& server, ProviderConfig c, int limit, int threads) {
  c.concurrency = limit;
  server.SetDefault(ServerAction::WaitForPeers(limit, seconds(10)));
  auto provider = std::make_unique<HttpProvider>(c, "", MakeOpenAiWire(c));
  std::vector<std::thread> workers;
  std::atomic<int> ok{0};
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {
      if (provider->Complete(Hello()).ok()) ++ok;
    });
  }
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(ok.load(), threads);
  EXPECT_EQ(server.max_in_flight(), limit);
  EXPECT_EQ(server.requests().size(), static_cast<size_t>(threads));
}

TEST_F(HttpLimitsTest, ConcurrencyLimitOfTwo) { CheckConcurrencyLimit(*server_, Config(), 2, 6); }

TEST_F(HttpLimitsTest, ConcurrencyLimitOfFour) { CheckConcurrencyLimit(*server_, Config(), 4, 8); }

TEST(HttpClientTest, RejectsUnsupportedSchemes) {
  Result<HttpResponse> r = HttpPost({"gopher://127.0.0.1/x", {}, "{}"}, {}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("gopher://127.0.0.1/x"), std::string::npos);
}

TEST(HttpClientTest, ReadsRetryAfterInItsForms) {
  HttpResponse r;
  EXPECT_FALSE(RetryAfter(r).has_value());
  r.headers["retry-after"] = "7";
  EXPECT_EQ(RetryAfter(r), milliseconds(7000));
  r.headers["retry-after"] = "Wed, 21 Oct 2015 07:28:00 GMT";
  EXPECT_EQ(RetryAfter(r), milliseconds(0));
  r.headers["retry-after"] = "soon";
  EXPECT_FALSE(RetryAfter(r).has_value());
  r.headers["retry-after-ms"] = "1500";
  EXPECT_EQ(RetryAfter(r), milliseconds(1500));
}

}  // namespace
}  // namespace kope::llm
