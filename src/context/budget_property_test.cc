// The property that matters most: over many randomized graphs, states, budgets and token
// calibrations, a built context never exceeds its budget.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kope/context/context_builder.h"
#include "test_graph.h"

namespace kope::context {
namespace {

using memory::NodeId;
using testing::AttemptSpec;
using testing::GraphBuilder;
using testing::InsightSpec;
using testing::TempDir;
using testing::ValueOrDie;

constexpr int kGraphs = 30;
constexpr int kContextsPerGraph = 12;

const char* const kWords[] = {"tile",
                              "shared",
                              "warp",
                              "shuffle",
                              "vectorize",
                              "float4",
                              "unroll",
                              "loop",
                              "online",
                              "softmax",
                              "fuse",
                              "epilogue",
                              "rows",
                              "block",
                              "grid",
                              "stride",
                              "register",
                              "occupancy",
                              "cache",
                              "simd",
                              "omp",
                              "threads",
                              "layout",
                              "transpose",
                              "\xC3\xA9t\xC3\xA9",
                              "\xE4\xB8\xAD\xE6\x96\x87",
                              "x_y_z",
                              "9999999"};

std::string RandomText(std::mt19937_64& rng, int min_words, int max_words) {
  std::string text;
  const int n =
      min_words + static_cast<int>(rng() % static_cast<uint64_t>(max_words - min_words + 1));
  for (int i = 0; i < n; ++i) {
    text += (i == 0 ? "" : (rng() % 9 == 0 ? "\n" : " ")) + std::string(kWords[rng() % 28]);
  }
  return text;
}

std::string RandomSource(std::mt19937_64& rng, int index) {
  std::string s = "#include \"kope/kernel.h\"\n// kernel " + std::to_string(index) + "\n";
  if (rng() % 2 == 0) s += "__global__ void k(float* x) {\n";
  const int lines = 1 + static_cast<int>(rng() % (rng() % 5 == 0 ? 400 : 40));
  for (int i = 0; i < lines; ++i) {
    s += std::string(static_cast<size_t>(rng() % 12), ' ') + RandomText(rng, 1, 12) + ";\n";
  }
  s += "extern \"C\" int kope_kernel(const kope_tensor* in, int n_in, kope_tensor* out, int n_out, "
       "void* stream) { return 0; }\n";
  return s;
}

struct Graph {
  std::vector<NodeId> attempts;
  std::vector<NodeId> hardware;
  std::vector<NodeId> runs;
};

Status Generate(memory::GraphWriter& w, std::mt19937_64& rng, Graph& g) {
  GraphBuilder b(w);
  const char* devices[][3] = {{"cuda", "NVIDIA H100", "sm_90"},
                              {"cuda", "NVIDIA A100", "sm_80"},
                              {"cpu", "Xeon", "x86_64-avx512"}};
  for (auto& d : devices) {
    KOPE_ASSIGN_OR_RETURN(NodeId id, b.Hardware(d[0], d[1], d[2]));
    g.hardware.push_back(id);
  }
  const char* families[] = {"softmax", "matmul", "reduce"};
  std::vector<NodeId> tasks;
  for (int t = 0, n = 1 + static_cast<int>(rng() % 5); t < n; ++t) {
    KOPE_ASSIGN_OR_RETURN(NodeId id, b.Task("task_" + std::to_string(t), families[rng() % 3],
                                            std::pow(10.0, 2 + static_cast<double>(rng() % 6)),
                                            RandomText(rng, 0, 30)));
    tasks.push_back(id);
  }
  int index = 0;
  for (int r = 0, n = 1 + static_cast<int>(rng() % 6); r < n; ++r) {
    KOPE_ASSIGN_OR_RETURN(NodeId run, b.Run(tasks[rng() % tasks.size()], g.hardware[rng() % 3]));
    g.runs.push_back(run);
    std::vector<NodeId> episode;
    for (int a = 0, m = 1 + static_cast<int>(rng() % 30); a < m; ++a) {
      AttemptSpec spec;
      spec.run = run;
      spec.parent = episode.empty() || rng() % 10 == 0 ? 0 : episode[rng() % episode.size()];
      spec.decision = RandomText(rng, 1, rng() % 6 == 0 ? 300 : 20);
      spec.source = RandomSource(rng, index++);
      const int roll = static_cast<int>(rng() % 10);
      spec.verdict = roll < 6 ? "valid" : roll < 8 ? "compile_error" : "incorrect";
      spec.speedup = 0.2 + static_cast<double>(rng() % 500) / 100.0;
      if (spec.verdict == "compile_error") {
        spec.error = "kernel.cu(" + std::to_string(rng() % 99) +
                     "): error: " + RandomText(rng, 2, rng() % 8 == 0 ? 400 : 8);
      }
      if (rng() % 3 == 0) {
        spec.evidence_json = R"({"candidate_time":{"median_s":0.001,"spread":0.02},)"
                             R"("profile":{"limiter":"dram","metrics":{"dram_pct":81.5}}})";
      }
      KOPE_ASSIGN_OR_RETURN(NodeId id, b.Attempt(spec));
      episode.push_back(id);
      g.attempts.push_back(id);
    }
  }
  for (int i = 0, n = static_cast<int>(rng() % 40); i < n; ++i) {
    InsightSpec s;
    s.kind = rng() % 4 == 0 ? "failure_rule" : "lesson";
    s.text = RandomText(rng, 3, rng() % 5 == 0 ? 200 : 25);
    s.scope.op_family = rng() % 4 == 0 ? "" : families[rng() % 3];
    if (rng() % 2 == 0) {
      s.scope.backend = "cuda";
      s.scope.arch = rng() % 2 == 0 ? "sm_90" : "sm_80";
    }
    s.support = static_cast<int>(rng() % 6);
    s.contradiction = static_cast<int>(rng() % 3);
    s.effect = 1.0 + static_cast<double>(rng() % 100) / 100.0;
    KOPE_RETURN_IF_ERROR(b.Insight(s).status());
  }
  return Status::Ok();
}

TEST(BudgetProperty, NeverExceededOverRandomizedGraphs) {
  TempDir dir;
  int built = 0;
  int refused = 0;
  for (int graph = 0; graph < kGraphs; ++graph) {
    std::mt19937_64 rng(1000 + static_cast<uint64_t>(graph));
    auto store = testing::OpenStore(dir / ("g" + std::to_string(graph) + ".db"));
    Graph g;
    KOPE_ASSERT_OK(store->Write([&](memory::GraphWriter& w) { return Generate(w, rng, g); }));
    // Some used edges with credit, so that usefulness enters the scores.
    KOPE_ASSERT_OK(store->Write([&](memory::GraphWriter& w) -> Status {
      for (size_t i = 0; i + 1 < g.attempts.size(); i += 3) {
        memory::UsedEdge e;
        e.attempt_id = g.attempts[i + 1];
        e.target = {memory::NodeKind::kAttempt, g.attempts[rng() % g.attempts.size()]};
        e.section = "exemplars";
        KOPE_RETURN_IF_ERROR(w.AddUsed(e).status());
        KOPE_RETURN_IF_ERROR(w.CreditUsed(g.attempts[i + 1], rng() % 2 == 0 ? 1.0 : -0.2).status());
      }
      return Status::Ok();
    }));
    for (int k = 0; k < kContextsPerGraph; ++k) {
      ContextRequest request;
      request.node = rng() % 6 == 0 ? 0 : g.attempts[rng() % g.attempts.size()];
      if (request.node == 0) request.task_id = 1 + static_cast<NodeId>(rng() % 2);
      const auto hw = ValueOrDie(store->GetHardware(g.hardware[rng() % 3]));
      if (request.node == 0 || rng() % 2 == 0) {
        request.hardware.backend = hw.backend;
        request.hardware.device = hw.device;
        request.hardware.architecture = hw.arch;
      }
      request.budget_tokens = 200 + static_cast<int64_t>(rng() % 20000);
      request.mode = rng() % 4 == 0 ? ContextMode::kPassive : ContextMode::kActive;
      TokenCalibration calibration;
      if (rng() % 2 == 0) {
        const int64_t reported = 500 + static_cast<int64_t>(rng() % 1500);
        for (int s = 0; s < 10; ++s) KOPE_ASSERT_OK(calibration.Record("m", 1000, reported));
        request.model = "m";
        request.calibration = &calibration;
      }
      const TokenCounter counter = calibration.CounterFor("m");
      Result<BuiltContext> c = BuildContext(*store, request);
      if (!c.ok()) {
        // The only acceptable failure: a budget too small for the task itself.
        ASSERT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status().ToString();
        ASSERT_NE(c.status().message().find("too small"), std::string::npos);
        ++refused;
        continue;
      }
      ++built;
      ASSERT_LE(c->total_tokens, request.budget_tokens);
      // Recounted from the text alone.
      const int64_t raw = EstimateTokens(c->system_prompt) + EstimateTokens(c->user_prompt);
      ASSERT_EQ(raw, c->raw_tokens);
      ASSERT_LE(counter.Bound(raw), request.budget_tokens)
          << "graph " << graph << " context " << k << " budget " << request.budget_tokens;
      int64_t items = 0;
      for (const ContextItem& item : c->items) items += item.tokens;
      ASSERT_LE(items, request.budget_tokens);
      // Deterministic.
      Result<BuiltContext> again = BuildContext(*store, request);
      ASSERT_TRUE(again.ok());
      ASSERT_EQ(again->user_prompt, c->user_prompt);
    }
  }
  EXPECT_GT(built, kGraphs * kContextsPerGraph / 2);
  EXPECT_GT(refused, 0);  // tiny budgets were tried
}

}  // namespace
}  // namespace kope::context
