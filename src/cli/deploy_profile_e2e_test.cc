// `kope deploy profile` end to end, both sides: a tiny random Llama (2 layers, hidden 64) on the
// CPU is profiled by the Python side, its profile read and summarized, its task folders recorded
// in a fresh store; profiling it again adds no node. Then the closed loop, `kope deploy`, on the
// same model with the offline proposer and one pack kernel: a native patch produced, validated
// in the model, recorded, packaged, and applied by a Python without kope. Skips where the
// bridge's Python has no transformers (or no kope_deploy package).
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

ProcessResult Kope(std::vector<std::string> args) {
  ProcessOptions options;
  options.timeout_seconds = 600;
  args.insert(args.begin(), kope::testing::BinaryDir() + "/kope");
  Result<ProcessResult> r = RunProcess(args, options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ProcessResult{};
}

ProcessResult Profile(const fs::path& dir) {
  return Kope({"deploy", "profile", (dir / "workload.toml").string(), "--out",
               (dir / "out").string(), "-q", "--store", (dir / "store.db").string()});
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

// In a Python without kope on its path: the artifact applied to the same model, built again from
// its config, run as the workload runs it (generate(): a patch is keyed on the shapes the
// workload gave its unit, and which linear layer ranks first depends on measured times),
// engaged, its tokens and logits those of the unpatched model within fp32 rounding, removed.
constexpr const char* kFresh = R"(
import importlib.util, json, sys, torch, transformers
sys.path.insert(0, sys.argv[1])
print("no-kope" if importlib.util.find_spec("kope_deploy") is None else "kope")
import kope_patch_tiny_llama as kp
config = transformers.LlamaConfig(**json.load(open(sys.argv[2]))["model"]["config"])
torch.manual_seed(0)
model = transformers.LlamaForCausalLM(config).eval()
ids = torch.randint(0, 256, (1, 16))
# As the workload runs it: generate(), whose prefill gives the LM head the last position only.
run = lambda: model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=4,
                             do_sample=False, pad_token_id=0, output_logits=True,
                             return_dict_in_generate=True)
with torch.no_grad():
    want = run()
    patches = kp.apply(model)
    got = run()
print("engaged" if all(p.engagement()["engaged"] for p in patches) else "idle")
same = torch.equal(want.sequences, got.sequences) and all(
    (a - b).abs().max().item() < 1e-3 for a, b in zip(want.logits, got.logits))
print("close" if same else "different")
kp.remove(model)
)";

TEST(DeployLoopEndToEnd, TinyLlamaWithThePacksLinearKernel) {
  if (std::string missing = MissingPrerequisite(); !missing.empty()) GTEST_SKIP() << missing;
  Result<TempFolder> dir = TempFolder::Create("", "kope-deploy-loop-e2e");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  const fs::path d = dir->path();
  std::ofstream(d / "workload.toml") << kWorkload;
  const std::string store = (d / "store.db").string();
  ProcessResult built =
      Kope({"pack", "build", kope::testing::SourceDir() + "/packs/llm-inference", "--kernel",
            "gemv_small_m_f32_cpu", "--quick", "--out", (d / "gemv.kpack").string()});
  ASSERT_EQ(built.exit_code, 0) << built.output;
  ProcessResult imported =
      Kope({"memory", "import", (d / "gemv.kpack").string(), "--store", store});
  ASSERT_EQ(imported.exit_code, 0) << imported.output;

  // The best ranked linear layer (the ranking follows the measured times): the pack's GEMV serves
  // it through an adapter.
  ProcessResult run = Kope({"deploy",
                            (d / "workload.toml").string(),
                            "--out",
                            (d / "out").string(),
                            "--store",
                            store,
                            "--top",
                            "10",
                            "--units",
                            "linear",
                            "--tasks",
                            "1",
                            "--attempts",
                            "2",
                            "--candidates",
                            "1",
                            "--rounds",
                            "1",
                            "--e2e-rounds",
                            "2",
                            "-q"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("accepted"), std::string::npos) << run.output;
  const fs::path out = d / "out";
  nlohmann::json v = nlohmann::json::parse(*ReadFileText(out / "validation.json"));
  ASSERT_GE(v["patches"].size(), 1u) << v.dump(1);
  std::vector<int64_t> attempts;
  for (const auto& task : v["tasks"]) {
    for (const auto& tried : task["tried"]) {
      attempts.push_back(tried["attempt"]);
      if (!tried["accepted"]) continue;
      EXPECT_EQ(tried["kind"], "native");
      EXPECT_TRUE(tried["gate"]["passed"]);
      EXPECT_EQ(tried["gate"]["greedy_agreement"], 1.0);
      EXPECT_TRUE(tried["gate"]["engagement"][0]["engaged"]);
    }
  }
  EXPECT_TRUE(fs::is_regular_file(out / "report.html"));

  // What the model said is on each attempt tried, as an in_model outcome.
  auto opened = memory::OpenSqliteStore(store);
  ASSERT_TRUE(opened.ok());
  for (int64_t a : attempts) {
    auto outcomes = (*opened)->Outcomes(a);
    ASSERT_TRUE(outcomes.ok());
    int in_model = 0;
    for (const auto& o : *outcomes) in_model += o.stage == "in_model";
    EXPECT_EQ(in_model, 1) << "a" << a;
  }
  // And the whole report is the workload's deployment record, for `kope serve`.
  auto workloads = (*opened)->ListWorkloads();
  ASSERT_TRUE(workloads.ok() && workloads->size() == 1u);
  auto deployments = (*opened)->WorkloadDeployments(workloads->front().id);
  ASSERT_TRUE(deployments.ok());
  ASSERT_FALSE(deployments->empty());
  EXPECT_EQ(nlohmann::json::parse(deployments->back().report_json), v);

  Result<ProcessResult> fresh =
      RunProcess({"env", "-u", "PYTHONPATH", BridgePython(), "-c", kFresh,
                  v["artifact"].get<std::string>() + "/..", (out / "workload.json").string()});
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(fresh->output.find("no-kope\nengaged\nclose"), std::string::npos) << fresh->output;
}

}  // namespace
}  // namespace kope
