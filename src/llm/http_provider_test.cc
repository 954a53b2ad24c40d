// The HTTP providers against a real local server that speaks both formats.
#include "http_provider.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>

#include "kope/llm/open_provider.h"
#include "kope/llm/usage.h"
#include "llm/testing/llm_test_server.h"

namespace kope::llm {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing::LlmTestServer;
using testing::ServerAction;

// Records the waits between attempts instead of sleeping.
struct SleepLog {
  std::mutex mu;
  std::vector<milliseconds> waits;
  SleepFunction Function() {
    return [this](milliseconds d, const std::atomic<bool>* cancel) {
      std::lock_guard<std::mutex> lock(mu);
      waits.push_back(d);
      return !(cancel != nullptr && cancel->load());
    };
  }
};

LlmRequest Hello() {
  LlmRequest r;
  r.system = "Be brief.";
  r.messages = {{Role::kUser, "Say ok."}};
  return r;
}

class HttpProviderTest : public ::testing::TestWithParam<ProviderKind> {
 protected:
  void SetUp() override {
    auto server = LlmTestServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
  }

  ProviderConfig Config() const {
    ProviderConfig c = DefaultProviderConfig(GetParam(), "test");
    c.base_url = GetParam() == ProviderKind::kOpenAi ? server_->openai_base_url()
                                                     : server_->anthropic_base_url();
    c.model = "test-model";
    c.api_key_env = "";
    c.retries = 3;
    c.backoff_initial_s = 0.5;
    c.backoff_max_s = 4;
    c.timeout_s = 60;
    c.attempt_timeout_s = 60;
    return c;
  }

  std::unique_ptr<HttpProvider> Make(const ProviderConfig& c, std::string key = "") {
    auto wire = c.kind == ProviderKind::kOpenAi ? MakeOpenAiWire(c) : MakeAnthropicWire(c);
    return std::make_unique<HttpProvider>(c, std::move(key), std::move(wire),
                                          HttpProviderHooks{sleeps_.Function(), 42});
  }

  bool openai() const { return GetParam() == ProviderKind::kOpenAi; }

  std::unique_ptr<LlmTestServer> server_;
  SleepLog sleeps_;
};

TEST_P(HttpProviderTest, SendsTheDocumentedRequestAndReadsTheReply) {
  ProviderConfig c = Config();
  c.temperature = 0.3;
  c.max_tokens = 256;
  server_->RequireKey("key-123");
  server_->Enqueue(ServerAction::Reply("hello there", 42, 9));
  LlmRequest request = Hello();
  request.stop = {"STOP"};
  Result<LlmResponse> r = Make(c, "key-123")->Complete(request);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "hello there");
  EXPECT_EQ(r->usage.prompt_tokens, 42);
  EXPECT_EQ(r->usage.completion_tokens, 9);
  EXPECT_FALSE(r->usage.estimated);
  EXPECT_EQ(r->model, "test-model");
  EXPECT_EQ(r->finish_reason, openai() ? "stop" : "end_turn");
  EXPECT_EQ(r->request_id, "req-test-1");  // from the response header
  EXPECT_EQ(r->attempts, 1);
  EXPECT_GT(r->latency_seconds, 0);
  EXPECT_FALSE(r->cached);

  ASSERT_EQ(server_->requests().size(), 1u);
  const testing::ReceivedRequest got = server_->requests()[0];
  json body = json::parse(got.body);
  EXPECT_EQ(got.headers.at("content-type"), "application/json");
  EXPECT_EQ(body["model"], "test-model");
  EXPECT_EQ(body["temperature"], 0.3);
  EXPECT_EQ(body["max_tokens"], 256);
  if (openai()) {
    EXPECT_EQ(got.path, "/v1/chat/completions");
    EXPECT_EQ(got.headers.at("authorization"), "Bearer key-123");
    EXPECT_EQ(body["messages"][0], json({{"role", "system"}, {"content", "Be brief."}}));
    EXPECT_EQ(body["messages"][1], json({{"role", "user"}, {"content", "Say ok."}}));
    EXPECT_EQ(body["stop"], json::array({"STOP"}));
  } else {
    EXPECT_EQ(got.path, "/v1/messages");
    EXPECT_EQ(got.headers.at("x-api-key"), "key-123");
    EXPECT_EQ(got.headers.at("anthropic-version"), "2023-06-01");
    EXPECT_EQ(got.headers.count("authorization"), 0u);
    EXPECT_EQ(body["system"], "Be brief.");
    EXPECT_EQ(body["messages"], json::array({{{"role", "user"}, {"content", "Say ok."}}}));
    EXPECT_EQ(body["stop_sequences"], json::array({"STOP"}));
  }
}

TEST_P(HttpProviderTest, RequestOverridesTheConfiguredModelAndParameters) {
  ProviderConfig c = Config();
  c.temperature = 0.3;
  LlmRequest request = Hello();
  request.model = "other-model";
  request.temperature = 1.0;
  request.max_tokens = 99;
  ASSERT_TRUE(Make(c)->Complete(request).ok());
  json body = json::parse(server_->requests().at(0).body);
  EXPECT_EQ(body["model"], "other-model");
  EXPECT_EQ(body["temperature"], 1.0);
  EXPECT_EQ(body["max_tokens"], 99);
}

TEST_P(HttpProviderTest, EstimatesUsageWhenTheServerReportsNone) {
  ServerAction a = ServerAction::Reply("twelve bytes");
  a.omit_usage = true;
  server_->Enqueue(a);
  Result<LlmResponse> r = Make(Config())->Complete(Hello());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->usage.estimated);
  EXPECT_EQ(r->usage.completion_tokens, 3);
  EXPECT_EQ(r->usage.prompt_tokens, EstimatePromptTokens(Hello()));
}

TEST_P(HttpProviderTest, RetriesServerErrorsWithJitteredBackoff) {
  server_->Enqueue(ServerAction::Error(500));
  server_->Enqueue(ServerAction::Error(503));
  server_->Enqueue(ServerAction::Error(529));
  server_->Enqueue(ServerAction::Reply("finally"));
  Result<LlmResponse> r = Make(Config())->Complete(Hello());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "finally");
  EXPECT_EQ(r->attempts, 4);
  EXPECT_EQ(server_->requests().size(), 4u);
  ASSERT_EQ(sleeps_.waits.size(), 3u);
  // Full jitter: uniform in [0, min(max, initial * 2^n)].
  EXPECT_LE(sleeps_.waits[0], milliseconds(500));
  EXPECT_LE(sleeps_.waits[1], milliseconds(1000));
  EXPECT_LE(sleeps_.waits[2], milliseconds(2000));
}

TEST_P(HttpProviderTest, GivesUpAfterTheConfiguredRetries) {
  ProviderConfig c = Config();
  c.retries = 2;
  server_->SetDefault(ServerAction::Error(502));
  Result<LlmResponse> r = Make(c)->Complete(Hello());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("gave up after 3 attempts"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("HTTP 502"), std::string::npos);
  EXPECT_EQ(server_->requests().size(), 3u);
  EXPECT_EQ(sleeps_.waits.size(), 2u);
}

TEST_P(HttpProviderTest, HonoursRetryAfter) {
  server_->Enqueue(ServerAction::Error(429, "3"));
  ServerAction dated = ServerAction::Error(429, "Wed, 21 Oct 2015 07:28:00 GMT");  // in the past
  server_->Enqueue(dated);
  server_->Enqueue(ServerAction::Reply("after the wait"));
  Result<LlmResponse> r = Make(Config())->Complete(Hello());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "after the wait");
  ASSERT_EQ(sleeps_.waits.size(), 2u);
  EXPECT_EQ(sleeps_.waits[0], milliseconds(3000));
  EXPECT_EQ(sleeps_.waits[1], milliseconds(0));
}

TEST_P(HttpProviderTest, RetryAfterReallyWaits) {
  ProviderConfig c = Config();
  auto wire = openai() ? MakeOpenAiWire(c) : MakeAnthropicWire(c);
  HttpProvider provider(c, "", std::move(wire));  // the real sleep
  server_->Enqueue(ServerAction::Error(429, "1"));
  ASSERT_TRUE(provider.Complete(Hello()).ok());
  std::vector<testing::ReceivedRequest> got = server_->requests();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_GE(got[1].arrived - got[0].arrived, milliseconds(1000));
}

TEST_P(HttpProviderTest, RetryAfterBeyondTheTimeoutFailsAtOnce) {
  ProviderConfig c = Config();
  c.timeout_s = 5;
  server_->Enqueue(ServerAction::Error(429, "3600"));
  Result<LlmResponse> r = Make(c)->Complete(Hello());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("asked to wait 3600000 ms"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(sleeps_.waits.empty());
  EXPECT_EQ(server_->requests().size(), 1u);
}

TEST_P(HttpProviderTest, RetriesTruncatedMalformedAndWrongSchemaBodies) {
  server_->Enqueue(ServerAction::TruncatedBody());
  server_->Enqueue(ServerAction::MalformedJson());
  server_->Enqueue(ServerAction::WrongSchema());
  server_->Enqueue(ServerAction::Reply("good"));
  Result<LlmResponse> r = Make(Config())->Complete(Hello());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, "good");
  EXPECT_EQ(r->attempts, 4);
}

TEST_P(HttpProviderTest, EachBadBodyGivesAClearError) {
  struct Case {
    ServerAction action;
    std::string expected;
  } cases[] = {
      {ServerAction::TruncatedBody(), "was truncated"},
      {ServerAction::MalformedJson(), "is not valid JSON"},
      {ServerAction::WrongSchema(), openai() ? "has no \"choices\"" : "not an array of blocks"},
  };
  for (const Case& c : cases) {
    ProviderConfig config = Config();
    config.retries = 0;
    server_->Enqueue(c.action);
    Result<LlmResponse> r = Make(config)->Complete(Hello());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(r.status().message().find(c.expected), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("provider 'test'"), std::string::npos);
  }
}

TEST_P(HttpProviderTest, AuthenticationFailureIsNotRetriedAndHidesTheKey) {
  ProviderConfig c = Config();
  c.api_key_env = "KOPE_TEST_LLM_KEY";
  server_->RequireKey("the-right-key");
  const std::string wrong_key = "sk-wrong-0123456789-SECRET";
  Result<LlmResponse> r = Make(c, wrong_key)->Complete(Hello());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("authentication failed"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 401"), std::string::npos) << m;
  EXPECT_NE(m.find("$KOPE_TEST_LLM_KEY"), std::string::npos) << m;
  EXPECT_EQ(m.find(wrong_key), std::string::npos) << m;  // the server echoed it
  EXPECT_NE(m.find("[redacted]"), std::string::npos) << m;
  EXPECT_EQ(server_->requests().size(), 1u);
}

TEST_P(HttpProviderTest, UnknownModelIsNamed) {
  server_->SetKnownModels({"test-model"});
  LlmRequest request = Hello();
  request.model = "no-such-model";
  Result<LlmResponse> r = Make(Config())->Complete(request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("unknown model 'no-such-model'"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(server_->requests().size(), 1u);
}

TEST_P(HttpProviderTest, WrongBaseUrlPathIsExplained) {
  ProviderConfig c = Config();
  c.base_url = server_->anthropic_base_url() + "/wrong";
  Result<LlmResponse> r = Make(c)->Complete(Hello());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("does not exist (HTTP 404)"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("check base_url"), std::string::npos);
}

TEST_P(HttpProviderTest, OtherClientErrorsCarryTheServerMessage) {
  ServerAction bad = ServerAction::Error(400);
  bad.error_message = "messages.0.content: must not be empty";
  server_->Enqueue(bad);
  Result<LlmResponse> r = Make(Config())->Complete(Hello());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("HTTP 400"), std::string::npos);
  EXPECT_NE(r.status().message().find("must not be empty"), std::string::npos);
  EXPECT_TRUE(sleeps_.waits.empty());
}

TEST_P(HttpProviderTest, UnreachableUrlIsRetriedThenReported) {
  ProviderConfig c = Config();
  int port = server_->port();
  server_.reset();  // nothing listens on the port now
  c.base_url = "http://127.0.0.1:" + std::to_string(port) + (openai() ? "/v1" : "");
  c.retries = 2;
  Result<LlmResponse> r = Make(c)->Complete(Hello());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("cannot reach http://127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(sleeps_.waits.size(), 2u);
}

TEST_P(HttpProviderTest, ReportsUsageAndCost) {
  server_->Enqueue(ServerAction::Reply("a", 1000, 2000));
  server_->Enqueue(ServerAction::Reply("b", 500, 0));
  PriceTable prices;
  prices.Set("test-model", {3.0, 15.0});
  UsageLedger ledger(prices);
  auto provider = Make(Config());
  for (int i = 0; i < 2; ++i) {
    Result<LlmResponse> r = provider->Complete(Hello());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ledger.Record(*r);
  }
  UsageTotals t = ledger.totals();
  EXPECT_EQ(t.calls, 2);
  EXPECT_EQ(t.prompt_tokens, 1500);
  EXPECT_EQ(t.completion_tokens, 2000);
  EXPECT_DOUBLE_EQ(t.cost_usd, (1500 * 3.0 + 2000 * 15.0) / 1e6);
  EXPECT_EQ(t.unpriced_calls, 0);
}

TEST_P(HttpProviderTest, MissingKeyNamesTheVariable) {
  ProviderConfig c = Config();
  c.api_key_env = "KOPE_TEST_SURELY_UNSET_KEY";
  unsetenv("KOPE_TEST_SURELY_UNSET_KEY");
  auto provider = OpenProvider(c);
  ASSERT_FALSE(provider.ok());
  EXPECT_EQ(provider.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(provider.status().message().find("KOPE_TEST_SURELY_UNSET_KEY, which is not set"),
            std::string::npos)
      << provider.status().message();
  setenv("KOPE_TEST_SURELY_UNSET_KEY", "", 1);
  provider = OpenProvider(c);
  ASSERT_FALSE(provider.ok());
  EXPECT_NE(provider.status().message().find("which is empty"), std::string::npos);
  unsetenv("KOPE_TEST_SURELY_UNSET_KEY");
}

TEST_P(HttpProviderTest, OpenProviderReadsTheKeyFromTheEnvironment) {
  ProviderConfig c = Config();
  c.api_key_env = "KOPE_TEST_LLM_KEY_OK";
  setenv("KOPE_TEST_LLM_KEY_OK", "env-key-7", 1);
  server_->RequireKey("env-key-7");
  auto provider = OpenProvider(c);
  ASSERT_TRUE(provider.ok()) << provider.status().ToString();
  Result<LlmResponse> r = (*provider)->Complete(Hello());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  unsetenv("KOPE_TEST_LLM_KEY_OK");
}

INSTANTIATE_TEST_SUITE_P(BothFormats, HttpProviderTest,
                         ::testing::Values(ProviderKind::kOpenAi, ProviderKind::kAnthropic),
                         [](const ::testing::TestParamInfo<ProviderKind>& param_info) {
                           return std::string(ProviderKindName(param_info.param));
                         });

}  // namespace
}  // namespace kope::llm
