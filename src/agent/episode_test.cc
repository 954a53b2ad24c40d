// Whole episodes on a small test task, with real compiles, runners and a real SQLite store: the
// offline proposer alone, and a scripted LLM beside the tuner.
#include "kope/agent/episode.h"

#include <gtest/gtest.h>

#include <set>

#include "agent_test_support.h"
#include "kope/agent/llm_proposer.h"
#include "kope/agent/offline_proposer.h"
#include "kope/agent/reflection.h"
#include "kope/agent/tunables.h"
#include "kope/llm/scripted.h"
#include "kope/record/graph_nodes.h"

namespace kope::agent {
namespace {

using testing::LoadTestTask;
using testing::OpenTestStore;
using testing::ScratchDir;
using testing::TestBackend;
using testing::TestEpisodeOptions;

class RecordingObserver : public EpisodeObserver {
 public:
  void OnStart(const EpisodeReport&) override { ++starts; }
  void OnActivity(std::string_view) override { ++activities; }
  void OnAttempt(const AttemptEvent& e) override { events.push_back(e); }
  void OnFinish(const EpisodeReport&) override { ++finishes; }
  int starts = 0, activities = 0, finishes = 0;
  std::vector<AttemptEvent> events;
};

std::string ConfigOf(const std::string& source) {
  return FormatPoint(CurrentPoint(FindTunables(source).tunables));
}

TEST(EpisodeTest, OfflineProposerTunesTheSeedAndTheGraphRecordsEveryStep) {
  ScratchDir scratch;
  auto store = OpenTestStore(scratch.path() / "store.db");
  auto backend = TestBackend();
  ASSERT_TRUE(store && backend);
  Task task = LoadTestTask("scale_small");
  auto proposer = CreateOfflineProposer();
  EpisodeOptions options = TestEpisodeOptions(8);
  RecordingObserver observer;
  options.observer = &observer;

  auto report = RunEpisode(*store, *backend, task, *proposer, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->error, "");
  // The seed and the four other values of its one tunable, then nothing is left to try.
  EXPECT_EQ(report->stop_reason, "exhausted");
  ASSERT_EQ(report->attempts.size(), 5u);
  EXPECT_EQ(report->session_attempts, 5);
  EXPECT_EQ(report->attempts[0].proposer, "seed");
  EXPECT_EQ(report->attempts[0].parent_id, 0);
  std::set<std::string> hashes;
  std::set<memory::NodeId> ids;
  for (const AttemptSummary& a : report->attempts) {
    EXPECT_EQ(a.verdict, "valid") << a.decision << ": " << a.message;
    EXPECT_TRUE(hashes.insert(a.source_hash).second) << "a source was evaluated twice";
    if (a.id != report->attempts[0].id) {
      EXPECT_EQ(a.proposer, "tuner");
      EXPECT_TRUE(ids.count(a.parent_id)) << "a" << a.id << " derives from outside the run";
      EXPECT_TRUE(ParseMoveDescription(a.decision).has_value()) << a.decision;
    }
    ids.insert(a.id);
  }
  // The best kernel does at most two passes (each pass costs about as much again).
  ASSERT_TRUE(report->best.has_value());
  const std::string best = ConfigOf(report->best_source);
  EXPECT_TRUE(best == "kRepeat=1" || best == "kRepeat=2") << best;
  EXPECT_EQ(report->session_evaluations, 5);

  // Reflection: halving the passes was faster, so "larger kRepeat is faster" is contradicted.
  memory::InsightQuery query;
  query.op_family = "scale";
  query.backend = "cpu";
  auto insights = store->FindInsights(query);
  ASSERT_TRUE(insights.ok());
  bool found = false;
  for (const memory::RankedInsight& r : *insights) {
    if (r.insight.text != TuningInsightText("kRepeat", "scale")) continue;
    found = true;
    EXPECT_GE(r.insight.contradiction, 1);
  }
  EXPECT_TRUE(found);

  EXPECT_EQ(observer.starts, 1);
  EXPECT_EQ(observer.finishes, 1);
  EXPECT_GE(observer.events.size(), 5u);
  EXPECT_GT(observer.activities, 0);

  // Running it again resumes the same run, which has nothing left: no evaluation at all.
  auto again = RunEpisode(*store, *backend, task, *proposer, options);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->resumed);
  EXPECT_EQ(again->run_id, report->run_id);
  EXPECT_EQ(again->session_evaluations, 0);
  EXPECT_EQ(again->attempts.size(), 5u);
  EXPECT_EQ(again->stop_reason, "exhausted");
}

std::string Reply(const std::string& decision, const std::string& body) {
  return "DECISION: " + decision + "\n```cpp\n" + body + "```\n";
}

std::string Kernel(const std::string& prelude, const std::string& loop) {
  return "#include <cstdint>\n#include \"kope/kernel.h\"\n" + prelude +
         "extern \"C\" int kope_kernel(const kope_tensor* inputs, int n_inputs, kope_tensor* "
         "outputs, int n_outputs, void*) {\n"
         "  if (n_inputs != 1 || n_outputs != 1) return 1;\n"
         "  const float* in = static_cast<const float*>(inputs[0].data);\n"
         "  float* out = static_cast<float*>(outputs[0].data);\n"
         "  const int64_t n = inputs[0].shape[0];\n" +
         loop + "  return 0;\n}\n";
}

// The script: a tunable one-pass kernel, replies that cannot be parsed, a kernel that does not
// compile, a wrong one, a slower one, and a repeat of the first.
std::vector<llm::ScriptedReply> ScriptedReplies() {
  const std::string good = Kernel("constexpr int kPasses = 1;  // kope:tune 1 2\n",
                                  "  for (int r = 0; r < kPasses; ++r) {\n"
                                  "    for (int64_t i = 0; i < n; ++i) out[i] = 2.0f * in[i];\n"
                                  "    asm volatile(\"\" : : : \"memory\");\n  }\n");
  const std::string broken = Kernel("", "  return undefined_name_in_this_kernel;\n");
  const std::string wrong =
      Kernel("", "  for (int64_t i = 0; i < n; ++i) out[i] = 3.0f * in[i];\n");
  const std::string slow = Kernel("",
                                  "  for (int r = 0; r < 8; ++r) {\n"
                                  "    for (int64_t i = 0; i < n; ++i) out[i] = 2.0f * in[i];\n"
                                  "    asm volatile(\"\" : : : \"memory\");\n  }\n");
  return {
      Reply("one pass over the data; the tuner may try more passes", good),  // a1
      std::string("I would vectorize this loop."),                           // unparseable
      Reply("read through an undeclared helper", broken),                    // a3 compile_error
      Reply("scale by three", wrong),                                        // a4 incorrect
      Reply("eight passes", slow),                                           // a5 slower
      std::string("Let me think about it."),                                 // unparseable
      std::string("Still thinking."),                                        // unparseable again
      Reply("one pass over the data again", good),                           // repeats a1
  };
}

// What the model saw: the reply format and the tunables paragraph; after an unusable reply,
// that reply and the parser's reason.
void ExpectRequestsShowTheFormatAndTheReason(const std::vector<llm::LlmRequest>& requests) {
  ASSERT_EQ(requests.size(), 8u);
  for (const llm::LlmRequest& r : requests) {
    EXPECT_NE(r.system.find("kope:tune"), std::string::npos);
  }
  ASSERT_EQ(requests[2].messages.size(), 3u);
  EXPECT_NE(requests[2].messages[2].content.find("could not be used"), std::string::npos);
  EXPECT_EQ(requests[1].messages.size(), 1u);
}

// Two passes were slower than one: "larger kPasses is faster" is contradicted.
void ExpectTheTuningInsightContradicted(memory::GraphStore& store) {
  memory::InsightQuery query;
  query.op_family = "scale";
  query.backend = "cpu";
  auto insights = store.FindInsights(query);
  ASSERT_TRUE(insights.ok());
  bool found = false;
  for (const memory::RankedInsight& r : *insights) {
    if (r.insight.text == TuningInsightText("kPasses", "scale")) {
      found = true;
      EXPECT_EQ(r.insight.contradiction, 1);
    }
  }
  EXPECT_TRUE(found);
}

TEST(EpisodeTest, ScriptedLlmWithTheTunerThroughGoodAndBadReplies) {
  llm::ScriptedProvider provider(ScriptedReplies());

  ScratchDir scratch;
  auto store = OpenTestStore(scratch.path() / "store.db");
  auto backend = TestBackend();
  ASSERT_TRUE(store && backend);
  Task task = LoadTestTask("scale_small");
  auto proposer = CreateMixedProposer(CreateLlmProposer(provider), CreateOfflineProposer());
  EpisodeOptions options = TestEpisodeOptions(7);

  auto report = RunEpisode(*store, *backend, task, *proposer, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->error, "");
  EXPECT_EQ(report->stop_reason, "attempts");
  EXPECT_EQ(provider.calls(), 8u);
  EXPECT_EQ(report->failed_proposals, 2);
  EXPECT_EQ(report->reused, 1);
  ASSERT_EQ(report->attempts.size(), 5u);
  const auto& a = report->attempts;
  EXPECT_EQ(a[0].proposer, "llm:scripted");
  EXPECT_EQ(a[0].verdict, "valid");
  EXPECT_EQ(a[1].proposer, "tuner");
  EXPECT_EQ(a[1].decision, "tune kPasses 1 -> 2");
  EXPECT_EQ(a[1].parent_id, a[0].id);
  EXPECT_EQ(a[1].verdict, "valid");
  EXPECT_EQ(a[2].verdict, "compile_error");
  EXPECT_NE(a[2].message.find("undefined_name_in_this_kernel"), std::string::npos) << a[2].message;
  EXPECT_EQ(a[3].verdict, "incorrect");
  EXPECT_EQ(a[4].verdict, "valid");
  for (size_t i = 2; i < a.size(); ++i) {
    EXPECT_EQ(a[i].proposer, "llm:scripted");
    EXPECT_NE(a[i].parent_id, 0);
  }
  // The unparseable reply's tokens are charged to the attempt that followed it.
  auto third = store->GetAttempt(a[2].id);
  auto fourth = store->GetAttempt(a[3].id);
  ASSERT_TRUE(third.ok() && fourth.ok());
  EXPECT_GT(third->prompt_tokens, fourth->prompt_tokens);
  EXPECT_GT(third->completion_tokens, 0);
  EXPECT_GT(report->tokens(), 0);
  // The best is the one-pass kernel.
  ASSERT_TRUE(report->best.has_value());
  EXPECT_EQ(report->best->id, a[0].id);

  ExpectRequestsShowTheFormatAndTheReason(provider.received());
  ExpectTheTuningInsightContradicted(*store);
}

TEST(EpisodeTest, ANewBestIsReTimedWithTheConfirmingPolicy) {
  ScratchDir scratch;
  auto store = OpenTestStore(scratch.path() / "store.db");
  auto backend = TestBackend();
  ASSERT_TRUE(store && backend);
  Task task = LoadTestTask("scale_small");
  auto proposer = CreateOfflineProposer();
  EpisodeOptions options = TestEpisodeOptions(2);
  options.confirm = true;
  auto report = RunEpisode(*store, *backend, task, *proposer, options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_FALSE(report->attempts.empty());
  // The seed was the first valid kernel, so it was re-timed: a second outcome of the same attempt
  // (and a third when a busy machine made the parent's clock disagree with the confirming
  // timing, which is then repeated once).
  auto outcomes = store->Outcomes(report->attempts[0].id);
  ASSERT_TRUE(outcomes.ok());
  ASSERT_TRUE(outcomes->size() == 2u || outcomes->size() == 3u) << outcomes->size();
  EXPECT_EQ(record::TimingPolicyOf((*outcomes)[0]), "screen");
  EXPECT_EQ(record::TimingPolicyOf((*outcomes)[1]), "confirm");
  if (outcomes->size() == 3u) {
    EXPECT_NE((*outcomes)[1].evidence_json.find(kFlagWallClockMismatch), std::string::npos);
    EXPECT_EQ(record::TimingPolicyOf((*outcomes)[2]), "confirm");
  }
  EXPECT_TRUE(report->attempts[0].confirmed);
  EXPECT_GT(report->session_evaluations, static_cast<int>(report->attempts.size()));
  // The best, if any (a busy machine can make the careful timing flag a kernel), is confirmed.
  if (report->best) {
    EXPECT_TRUE(report->best->confirmed);
  }
}

TEST(EpisodeTest, ATaskWithoutABaselineForTheBackendIsRefused) {
  ScratchDir scratch;
  auto store = OpenTestStore(scratch.path() / "store.db");
  auto backend = TestBackend();
  ASSERT_TRUE(store && backend);
  Task task = LoadTestTask("scale_small");
  task.baselines.clear();
  auto proposer = CreateOfflineProposer();
  auto report = RunEpisode(*store, *backend, task, *proposer, TestEpisodeOptions(3));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kope::agent
