// `kope optimize` on a PyTorch problem with --language torch, driven by a scripted LLM: the reply
// is a ModelNew with a Python tunable, evaluated on the CPU through the bridge, recorded with its
// language, then tuned by the offline tuner; and the refusals of a language that does not fit.
// Skips where there is no bridge (scripts/setup makes .venv).
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent_test_support.h"
#include "kope/agent/candidate_language.h"
#include "kope/base/file.h"
#include "kope/base/subprocess.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "kope/torch_bridge/bridge.h"
#include "testing/test_paths.h"

namespace kope::agent {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

std::string Kope() { return (fs::path(kope::testing::BinaryDir()) / "agent_test_kope").string(); }

std::string CacheEnv() {
  return "KOPE_CACHE_DIR=" + (fs::path(kope::testing::BinaryDir()) / "agent-test-cache").string();
}

fs::path Problem() {
  return fs::path(kope::testing::SourceDir()) / "src/torch_bridge/testdata/problems/scaled_relu.py";
}

constexpr char kModelNew[] = R"(import torch
import torch.nn as nn

CHUNK = 64  # kope:tune 32 64


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.cat([torch.relu(p) * self.scale for p in torch.split(x, CHUNK)])
)";

// Writes a scripted provider's configuration with these replies; returns its path.
fs::path ScriptedConfig(const fs::path& dir, const std::vector<std::string>& replies) {
  nlohmann::json list = nlohmann::json::array();
  for (const std::string& r : replies) list.push_back({{"text", r}});
  std::ofstream(dir / "replies.json") << list.dump();
  std::ofstream(dir / "llm.toml")
      << "default = \"script\"\n[providers.script]\nkind = \"scripted\"\nmodel = \"scripted\"\n"
         "replies = \"replies.json\"\n";
  return dir / "llm.toml";
}

TEST(ModelNewTest, OptimizeProposesATorchModelNewAndTunesIt) {
  Result<TorchBridge> bridge = FindTorchBridge();
  if (!bridge.ok()) GTEST_SKIP() << bridge.status().message();
  ScratchDir scratch;
  const fs::path config = ScriptedConfig(
      scratch.path(),
      {"DECISION: scale and clamp the rows in chunks; the tuner may try smaller ones\n"
       "TAGS: fusion\n```python\n" +
       std::string(kModelNew) + "```\n"});
  ProcessOptions options;
  options.timeout_seconds = 840;
  options.extra_env = {CacheEnv()};
  options.working_dir = scratch.path();
  auto result = RunProcess(
      {Kope(), "optimize", Problem().string(), "--llm", "--llm-config", config.string(),
       "--language", "torch", "--backend", "cpu", "--store", (scratch.path() / "store.db").string(),
       "--attempts", "2", "--no-confirm", "--json", "-q"},
      options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->exit_code, 0) << result->output;
  nlohmann::json report = nlohmann::json::parse(result->output, nullptr, false);
  ASSERT_TRUE(report.is_object()) << result->output;
  EXPECT_EQ(report["language"], "torch");
  ASSERT_EQ(report["attempts"].size(), 2u) << result->output;
  const nlohmann::json& first = report["attempts"][0];
  EXPECT_EQ(first["proposer"], "llm:scripted@torch");
  EXPECT_EQ(first["language"], "torch");
  EXPECT_EQ(first["verdict"], "valid") << first["message"];
  const nlohmann::json& second = report["attempts"][1];
  EXPECT_EQ(second["proposer"], "tuner@torch");
  EXPECT_EQ(second["language"], "torch");
  EXPECT_EQ(second["decision"], "tune CHUNK 64 -> 32");
  EXPECT_EQ(second["verdict"], "valid") << second["message"];
  // The best ModelNew is written as a Python file, and the graph holds the source as proposed.
  const fs::path best = scratch.path() / (report["task"].get<std::string>() + "_best.py");
  ASSERT_TRUE(fs::exists(best)) << result->output;
  EXPECT_NE(ReadFileText(best).value_or("").find("class ModelNew(nn.Module):"), std::string::npos);
  auto store = memory::OpenSqliteStore(scratch.path() / "store.db");
  ASSERT_TRUE(store.ok());
  auto attempt = (*store)->GetAttempt(first["id"].get<int64_t>());
  ASSERT_TRUE(attempt.ok());
  auto source = (*store)->GetSource(attempt->source_hash);
  ASSERT_TRUE(source.ok());
  EXPECT_EQ(*source, kModelNew);
}

TEST(ModelNewTest, ALanguageThatDoesNotFitIsBadUsage) {
  ScratchDir scratch;
  ProcessOptions options;
  options.extra_env = {CacheEnv()};
  const std::string task = testing::TestTaskDir("scale_small").string();
  for (const char* language : {"triton", "torch", "alternate", "cuda"}) {
    SCOPED_TRACE(language);
    auto result = RunProcess({Kope(), "optimize", task, "--language", language, "--backend", "cpu",
                              "--store", (scratch.path() / "store.db").string(), "-q"},
                             options);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(result->exit_code, 2) << result->output;
    EXPECT_NE(result->output.find(language == std::string("cuda") ? "--backend" : "PyTorch"),
              std::string::npos)
        << result->output;
  }
  EXPECT_FALSE(fs::exists(scratch.path() / "store.db")) << "refused before the store is opened";
}

}  // namespace
}  // namespace kope::agent
