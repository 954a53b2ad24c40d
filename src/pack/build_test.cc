// `kope pack build` end to end on the CPU: every CPU kernel of the shipped pack judged (quick:
// timed at its largest check set), the pack file checked, damaged and mismatched files refused,
// importing twice, and transfer: import -> the offline proposer's first attempt on a task whose
// inputs come in another order and rank, and on an imported KernelBench-format problem (through
// the Python bridge; skipped without it).
#include "kope/pack/build.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "kope/agent/episode.h"
#include "kope/agent/offline_proposer.h"
#include "kope/backend/cpu/cpu_backend.h"
#include "kope/base/file.h"
#include "kope/base/hash.h"
#include "kope/memory/exchange.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "kope/pack/pack_file.h"
#include "kope/torch_bridge/bridge.h"
#include "testing/test_paths.h"

namespace kope::pack {
namespace {

namespace fs = std::filesystem;

fs::path Source() { return fs::path(kope::testing::SourceDir()); }
fs::path Scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("kope-pack-build-" + std::to_string(getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

Backend* Cpu() {
  static Backend* backend = [] {
    CpuBackendOptions options;
    options.cache_dir = fs::path(kope::testing::BinaryDir()) / "test-cache";
    return CreateCpuBackend(options).value().release();
  }();
  return backend;
}

EvalOptions TestEval() {
  EvalOptions eval;
  eval.trials = 2;
  eval.runner_exe = fs::path(kope::testing::BinaryDir()) / "kope-runner";
  eval.torch_compile_reference = false;
  return eval;
}

class PackBuildTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto pack = LoadPackSource(Source() / "packs/llm-inference");
    ASSERT_TRUE(pack.ok()) << pack.status().ToString();
    PackBuildOptions options;
    options.out = Scratch() / "llm-inference.kpack";
    options.languages = {"cpp"};
    options.quick = true;
    options.eval = TestEval();
    options.backend = [](const std::string&) -> Result<Backend*> { return Cpu(); };
    auto built = BuildPack(*pack, options);
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    report_ = new PackBuildReport(std::move(*built));
  }
  static void TearDownTestSuite() {
    delete report_;
    std::error_code ec;
    fs::remove_all(Scratch(), ec);
  }
  static fs::path File() { return Scratch() / "llm-inference.kpack"; }
  static std::unique_ptr<memory::GraphStore> Store(const std::string& name) {
    auto store = memory::OpenSqliteStore(Scratch() / name);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(*store) : nullptr;
  }
  // A copy of the pack file with `edit` applied to its lines.
  static fs::path Edited(const std::string& name,
                         const std::function<void(std::vector<std::string>&)>& edit) {
    std::ifstream in(File());
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    edit(lines);
    const fs::path out = Scratch() / name;
    std::ofstream o(out);
    for (const std::string& l : lines) o << l << "\n";
    return out;
  }
  static PackBuildReport* report_;
};
PackBuildReport* PackBuildTest::report_ = nullptr;

TEST_F(PackBuildTest, EveryCpuKernelIsValidOnEveryTaskOfItsFamily) {
  ASSERT_NE(report_, nullptr);
  auto pack = LoadPackSource(Source() / "packs/llm-inference");
  ASSERT_TRUE(pack.ok());
  size_t expected = 0;
  for (const PackKernel& k : pack->kernels)
    expected += k.spec.language == "cpp" ? k.tasks.size() : 0;
  EXPECT_EQ(report_->verdicts.size(), expected);
  for (const PackVerdict& v : report_->verdicts) {
    EXPECT_EQ(v.verdict, "valid") << v.kernel << " on " << v.task << ": " << v.message;
  }
}

TEST_F(PackBuildTest, TheFileListsItsKernelsAndImportingTwiceChangesNothing) {
  auto info = ReadPackFile(File());
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->name, "llm-inference");
  EXPECT_FALSE(info->kernels.empty());
  EXPECT_GT(info->records["insight"], 0);
  auto store = Store("twice.db");
  auto first = memory::ImportJsonlFile(*store, File());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_GT(first->new_nodes, 0);
  auto second = memory::ImportJsonlFile(*store, File());
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->new_nodes, 0);
  EXPECT_EQ(second->new_edges, 0);
}

TEST_F(PackBuildTest, ADamagedOrMismatchedFileIsRefused) {
  const fs::path damaged = Edited("damaged.kpack", [](std::vector<std::string>& lines) {
    lines.back().insert(lines.back().size() - 1, " ");
  });
  auto read = ReadPackFile(damaged);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kCorruption);
  EXPECT_NE(read.status().message().find("damaged"), std::string::npos);
  auto store = Store("refused.db");
  auto imported = memory::ImportJsonlFile(*store, damaged);
  ASSERT_FALSE(imported.ok());
  EXPECT_NE(imported.status().message().find("damaged"), std::string::npos);
  EXPECT_EQ(store->Stats()->attempts, 0);

  // A header that names a kernel the file never evaluated (its hash kept consistent).
  const fs::path mismatched = Edited("mismatched.kpack", [](std::vector<std::string>& lines) {
    nlohmann::json h = nlohmann::json::parse(lines[0]);
    h["pack"]["kernels"][0]["source"] = ContentHash("another kernel");
    lines[0] = h.dump();
  });
  read = ReadPackFile(mismatched);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("mismatched"), std::string::npos)
      << read.status().message();

  // A header's integer out of any integer's range (the fuzzer's finding).
  const fs::path huge = Edited("huge.kpack", [](std::vector<std::string>& lines) {
    nlohmann::json h = nlohmann::json::parse(lines[0]);
    h["pack"]["built_at"] = 1.8e299;
    lines[0] = h.dump();
  });
  read = ReadPackFile(huge);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find("'built_at' is no integer"), std::string::npos)
      << read.status().message();

  // A record with a field of the wrong type (the fuzzer's finding; the hash kept consistent).
  size_t count_lines = 0;
  const fs::path wrong_type = Edited("wrong_type.kpack", [&](std::vector<std::string>& lines) {
    lines.push_back(R"({"type":"source","hash":5})");
    count_lines = lines.size();
    nlohmann::json h = nlohmann::json::parse(lines[0]);
    std::string body;
    for (size_t i = 1; i < lines.size(); ++i) body += lines[i] + "\n";
    h["content_hash"] = ContentHash(body);
    lines[0] = h.dump();
  });
  read = ReadPackFile(wrong_type);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(read.status().message().find(":" + std::to_string(count_lines) + ": not a record"),
            std::string::npos)
      << read.status().message();
}

// Imports the pack and runs one offline attempt on `task`; returns the episode.
Result<agent::EpisodeReport> FirstAttempt(memory::GraphStore& store, const Task& task) {
  KOPE_RETURN_IF_ERROR(memory::ImportJsonlFile(store, Scratch() / "llm-inference.kpack").status());
  auto proposer = agent::CreateOfflineProposer();
  agent::EpisodeOptions options;
  options.budgets.attempts = 1;
  options.stop.patience = 0;
  options.stop.speed_of_light = 0;
  options.confirm = false;
  options.eval = TestEval();
  return agent::RunEpisode(store, *Cpu(), task, *proposer, options);
}

TEST_F(PackBuildTest, ImportThenTransferGivesAValidFirstAttempt) {
  auto task = LoadTask(Source() / "src/pack/testdata/tasks/rms_weight_first");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  auto store = Store("transfer.db");
  auto episode = FirstAttempt(*store, *task);
  ASSERT_TRUE(episode.ok()) << episode.status().ToString();
  ASSERT_EQ(episode->attempts.size(), 1u) << episode->stop_reason << ": " << episode->error;
  EXPECT_EQ(episode->attempts[0].proposer, "transfer");
  EXPECT_NE(episode->attempts[0].decision.find("pack kernel rmsnorm_f32_cpu"), std::string::npos)
      << episode->attempts[0].decision;
  EXPECT_EQ(episode->attempts[0].verdict, "valid");
}

TEST_F(PackBuildTest, ImportThenTransferOnAKernelBenchProblem) {
  Result<TorchBridge> bridge = FindTorchBridge();
  if (!bridge.ok()) GTEST_SKIP() << bridge.status().message();
  auto task = LoadTask(Source() / "src/pack/testdata/kernelbench/rms_norm_last_dim");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  auto store = Store("kernelbench.db");
  auto episode = FirstAttempt(*store, *task);
  ASSERT_TRUE(episode.ok()) << episode.status().ToString();
  ASSERT_EQ(episode->attempts.size(), 1u) << episode->stop_reason << ": " << episode->error;
  EXPECT_EQ(episode->attempts[0].proposer, "transfer");
  EXPECT_EQ(episode->attempts[0].verdict, "valid") << episode->attempts[0].decision;
}

}  // namespace
}  // namespace kope::pack
