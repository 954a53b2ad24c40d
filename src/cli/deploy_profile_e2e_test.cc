// `kope deploy profile` end to end, both sides: a tiny random Llama (2 layers, hidden 64) on the
// CPU is profiled by the Python side, its profile read and summarized, its task folders recorded
// in a fresh store; profiling it again adds no node. Skips where the bridge's Python has no
// transformers (or no kope_deploy package).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kope/base/file.h"
#include "kope/base/subprocess.h"
#include "kope/base/temp_folder.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWorkload = R"(name = "tiny-llama"
[model]
architecture = "LlamaForCausalLM"
seed = 0
[model.config]
hidden_size = 64
intermediate_size = 128
num_hidden_layers = 2
num_attention_heads = 4
num_key_value_heads = 2
vocab_size = 256
max_position_embeddings = 128

[run]
dtype = "fp32"
device = "cpu"
attention = "sdpa"

[[requests]]
batch = 1
prompt = 16
decode = 4
weight = 0.75

[[requests]]
batch = 2
prompt = 32
decode = 2
weight = 0.25

[extract]
top = 3
)";

std::string BridgePython() {
  const char* env = std::getenv("KOPE_PYTHON");
  if (env != nullptr && *env != '\0') return env;
  return kope::testing::SourceDir() + "/.venv/bin/python3";
}

// Why the test cannot run here, or "".
std::string MissingPrerequisite() {
  const fs::path package = fs::path(kope::testing::SourceDir()) / "python/kope_deploy/profile.py";
  if (!fs::exists(package)) return "no python/kope_deploy/profile.py";
  if (!fs::exists(BridgePython())) return "no Python bridge (scripts/setup)";
  Result<ProcessResult> probe = RunProcess({BridgePython(), "-c", "import torch, transformers"});
  if (!probe.ok() || !probe->ok()) return "the bridge's Python has no transformers";
  return "";
}

ProcessResult Profile(const fs::path& dir) {
  ProcessOptions options;
  options.timeout_seconds = 300;
  Result<ProcessResult> r = RunProcess(
      {kope::testing::BinaryDir() + "/kope", "deploy", "profile", (dir / "workload.toml").string(),
       "--out", (dir / "out").string(), "-q", "--store", (dir / "store.db").string()},
      options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ProcessResult{};
}

TEST(DeployProfileEndToEnd, TinyLlamaOnTheCpu) {
  if (std::string missing = MissingPrerequisite(); !missing.empty()) GTEST_SKIP() << missing;
  Result<TempFolder> dir = TempFolder::Create("", "kope-deploy-e2e");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  std::ofstream(dir->path() / "workload.toml") << kWorkload;

  ProcessResult first = Profile(dir->path());
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("profile of tiny-llama on cpu"), std::string::npos) << first.output;
  const fs::path out = dir->path() / "out";
  for (const char* file : {"workload.json", "profile.json", "profile.svg"}) {
    EXPECT_TRUE(fs::is_regular_file(out / file)) << file;
  }
  // Decode phases of both entries, and the top 3 opportunities extracted as task folders.
  nlohmann::json profile = nlohmann::json::parse(*ReadFileText(out / "profile.json"));
  int decode_phases = 0;
  for (const auto& phase : profile["phases"]) decode_phases += phase["phase"] == "decode";
  EXPECT_EQ(decode_phases, 2);
  std::vector<std::string> tasks;
  for (const auto& o : profile["opportunities"]) {
    if (o["task"].is_string()) tasks.push_back(o["task"]);
  }
  ASSERT_GE(tasks.size(), 1u);
  EXPECT_LE(tasks.size(), 3u);
  for (const std::string& task : tasks) {
    EXPECT_TRUE(fs::is_regular_file(out / task / "task.toml")) << task;
    EXPECT_TRUE(fs::is_regular_file(out / task / "activations.safetensors")) << task;
  }

  auto stats = [&] {
    auto store = memory::OpenSqliteStore(dir->path() / "store.db");
    EXPECT_TRUE(store.ok());
    return *(*store)->Stats();
  };
  memory::StoreStats once = stats();
  EXPECT_EQ(once.workloads, 1);
  EXPECT_EQ(once.from_workload_edges, static_cast<int64_t>(tasks.size()));

  // Again: the same workload node, one edge per task, no task twice.
  ProcessResult second = Profile(dir->path());
  ASSERT_EQ(second.exit_code, 0) << second.output;
  memory::StoreStats twice = stats();
  EXPECT_EQ(twice.workloads, 1);
  EXPECT_EQ(twice.from_workload_edges, twice.tasks);
  nlohmann::json again = nlohmann::json::parse(*ReadFileText(out / "profile.json"));
  std::vector<std::string> tasks_again;
  for (const auto& o : again["opportunities"]) {
    if (o["task"].is_string()) tasks_again.push_back(o["task"]);
  }
  if (tasks_again == tasks) {
    EXPECT_EQ(twice.tasks, once.tasks);
  }
}

}  // namespace
}  // namespace kope
