#include "kope/llm/scripted.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>

#include "kope/llm/config.h"
#include "kope/llm/open_provider.h"
#include "testing/test_paths.h"

namespace kope::llm {
namespace {

namespace fs = std::filesystem;
const fs::path kScripts = fs::path(kope::testing::SourceDir()) / "src/llm/testdata/scripted";

LlmRequest Ask(std::string text) {
  LlmRequest r;
  r.messages = {{Role::kUser, std::move(text)}};
  return r;
}

TEST(ScriptedProviderTest, RepliesInOrderThenRunsOut) {
  ScriptedProvider p({{"one"}, {"two"}});
  EXPECT_EQ(p.Complete(Ask("a"))->text, "one");
  Result<LlmResponse> second = p.Complete(Ask("b"));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->text, "two");
  EXPECT_TRUE(second->usage.estimated);
  EXPECT_EQ(second->usage.completion_tokens, 1);
  EXPECT_EQ(second->model, "scripted");
  Result<LlmResponse> third = p.Complete(Ask("c"));
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(third.status().message().find("no reply left: call 3 of a script of 2"),
            std::string::npos);
  ASSERT_EQ(p.received().size(), 3u);
  EXPECT_EQ(p.received()[1].messages[0].content, "b");
}

TEST(ScriptedProviderTest, CyclesWhenAsked) {
  ScriptedProvider p({{"x"}, {"y"}}, /*cycle=*/true);
  std::string seen;
  for (int i = 0; i < 5; ++i) seen += p.Complete(Ask("q"))->text;
  EXPECT_EQ(seen, "xyxyx");
}

TEST(ScriptedProviderTest, AnswersFromAFunction) {
  ScriptedProvider p([](const LlmRequest& r, size_t i) {
    ScriptedReply reply;
    reply.text = std::to_string(i) + ":" + r.messages.back().content;
    return reply;
  });
  EXPECT_EQ(p.Complete(Ask("hello"))->text, "0:hello");
  EXPECT_EQ(p.Complete(Ask("again"))->text, "1:again");
}

TEST(ScriptedProviderTest, LoadsRecordedRepliesFromJson) {
  auto p = ScriptedProvider::FromPath(kScripts / "replies.json");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Result<LlmResponse> first = (*p)->Complete(Ask("q"));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->usage.prompt_tokens, 100);
  EXPECT_EQ(first->usage.completion_tokens, 20);
  EXPECT_FALSE(first->usage.estimated);
  Result<LlmResponse> second = (*p)->Complete(Ask("q"));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->text.rfind("DECISION: second.", 0), 0u);
  EXPECT_TRUE(second->truncated());
  Result<LlmResponse> third = (*p)->Complete(Ask("q"));
  EXPECT_EQ(third.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(third.status().message(), "the scripted server is down");
  EXPECT_EQ((*p)->Complete(Ask("q")).status().code(), StatusCode::kInvalidArgument);
}

TEST(ScriptedProviderTest, LoadsAFolderInNameOrder) {
  auto p = ScriptedProvider::FromPath(kScripts / "folder");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->Complete(Ask("q"))->text, "first file reply\n");
  EXPECT_EQ((*p)->Complete(Ask("q"))->text.rfind("DECISION: second.", 0), 0u);
}

TEST(ScriptedProviderTest, BadScriptsAreErrors) {
  auto missing = ScriptedProvider::FromPath(kScripts / "nope.json");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto bad = ScriptedProvider::FromPath(kScripts / "bad_code.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("reply 0: unknown error code 'catastrophe'"),
            std::string::npos)
      << bad.status().message();
}

TEST(ScriptedProviderTest, ConcurrentCallsEachTakeOneReply) {
  std::vector<ScriptedReply> replies;
  for (int i = 0; i < 64; ++i) replies.push_back({std::to_string(i)});
  ScriptedProvider p(std::move(replies));
  std::mutex mu;
  std::set<std::string> seen;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 16; ++i) {
        std::string text = p.Complete(Ask("q"))->text;
        std::lock_guard<std::mutex> lock(mu);
        seen.insert(text);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_EQ(p.calls(), 64u);
}

TEST(ScriptedProviderTest, OpensFromConfiguration) {
  ProviderOverrides o;
  o.replies = kScripts / "folder";
  Result<ProviderConfig> c = SelectProvider(LlmConfig{}, "scripted", o);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto p = OpenProvider(*c);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->identity().kind, ProviderKind::kScripted);
  EXPECT_EQ((*p)->Complete(Ask("q"))->text, "first file reply\n");
}

TEST(ScriptedProviderTest, InvalidRequestsAreRejectedBeforeTheScript) {
  ScriptedProvider p({{"x"}});
  LlmRequest empty;
  EXPECT_EQ(p.Complete(empty).status().code(), StatusCode::kInvalidArgument);
  LlmRequest assistant_first;
  assistant_first.messages = {{Role::kAssistant, "hi"}};
  EXPECT_EQ(p.Complete(assistant_first).status().code(), StatusCode::kInvalidArgument);
  LlmRequest many_stops = Ask("q");
  many_stops.stop = {"a", "b", "c", "d", "e"};
  EXPECT_EQ(p.Complete(many_stops).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.calls(), 0u);
}

}  // namespace
}  // namespace kope::llm
