// `kope optimize` as a child process: killed with SIGKILL mid-episode and resumed, and driven by a
// scripted LLM from a configuration file.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "agent_test_support.h"
#include "kope/base/file.h"
#include "kope/base/subprocess.h"
#include "kope/record/graph_nodes.h"
#include "testing/test_paths.h"

extern char** environ;

namespace kope::agent {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

std::string Kope() { return (fs::path(kope::testing::BinaryDir()) / "agent_test_kope").string(); }

std::string CacheEnv() {
  return "KOPE_CACHE_DIR=" + (fs::path(kope::testing::BinaryDir()) / "agent-test-cache").string();
}

std::vector<std::string> ChildEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).rfind("KOPE_CACHE_DIR=", 0) != 0) env.push_back(*e);
  }
  env.push_back(CacheEnv());
  return env;
}

int RunAttemptCount(const fs::path& store_path) {
  auto store = memory::OpenSqliteStore(store_path, {.create_if_missing = false});
  if (!store.ok()) return 0;
  auto runs = (*store)->ListRuns(0);
  if (!runs.ok() || runs->empty()) return 0;
  auto attempts = (*store)->RunAttempts(runs->back().id);
  return attempts.ok() ? static_cast<int>(attempts->size()) : 0;
}

// `kope optimize` of the small test task: five attempts, no other stop rule, the report as JSON.
std::vector<std::string> OptimizeArgv(const fs::path& scratch, const fs::path& store_path) {
  return {Kope(),
          "optimize",
          testing::TestTaskDir("scale_small").string(),
          "--store",
          store_path.string(),
          "--attempts",
          "5",
          "--patience",
          "0",
          "--sol",
          "0",
          "--no-confirm",
          "--json",
          "-q",
          "--out",
          (scratch / "best.cc").string()};
}

// Starts `argv` and kills it with SIGKILL at a random moment once two attempts are recorded.
void StartAndKillMidway(const std::vector<std::string>& argv, const fs::path& scratch,
                        const fs::path& store_path) {
  SpawnOptions spawn;
  spawn.env = ChildEnvironment();
  const int log = open((scratch / "first.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(log, 0);
  spawn.fds = {{1, log}, {2, log}};
  auto pid = SpawnProcess(argv, spawn);
  close(log);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  bool exited = false;
  while (RunAttemptCount(store_path) < 2) {
    int status = 0;
    if (waitpid(*pid, &status, WNOHANG) == *pid) {
      exited = true;
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << ReadFileText(scratch / "first.log").value_or("");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(exited) << "the episode ended before it could be killed: "
                       << ReadFileText(scratch / "first.log").value_or("");
  std::mt19937 random(static_cast<unsigned>(std::random_device{}()));
  std::this_thread::sleep_for(std::chrono::milliseconds(random() % 1500));
  ASSERT_EQ(kill(*pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  EXPECT_TRUE(WIFSIGNALED(status) || WIFEXITED(status));
  EXPECT_GE(RunAttemptCount(store_path), 2);
}

// The graph: one run (`run_id`), five attempts with distinct sources, one outcome each.
void ExpectFiveAttemptsEachEvaluatedOnce(const fs::path& store_path, int64_t run_id) {
  auto store = memory::OpenSqliteStore(store_path);
  ASSERT_TRUE(store.ok());
  auto runs = (*store)->ListRuns(0);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(run_id, runs->front().id);
  auto attempts = (*store)->RunAttempts(runs->front().id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 5u);
  std::set<std::string> sources;
  for (const memory::AttemptView& view : *attempts) {
    EXPECT_TRUE(sources.insert(view.attempt.source_hash).second)
        << "a" << view.attempt.id << " repeats a source";
    auto outcomes = (*store)->Outcomes(view.attempt.id);
    ASSERT_TRUE(outcomes.ok());
    EXPECT_EQ(outcomes->size(), 1u)
        << "a" << view.attempt.id << " was evaluated " << outcomes->size() << " times";
    for (const memory::OutcomeNode& o : *outcomes) EXPECT_EQ(record::TimingPolicyOf(o), "screen");
  }
  EXPECT_TRUE((*store)->CheckIntegrity().ok());
}

TEST(ResumeTest, AnEpisodeKilledMidwayResumesWithoutEvaluatingAnythingTwice) {
  ScratchDir scratch;
  const fs::path store_path = scratch.path() / "store.db";
  const std::vector<std::string> argv = OptimizeArgv(scratch.path(), store_path);
  StartAndKillMidway(argv, scratch.path(), store_path);
  if (HasFatalFailure()) return;

  // Resume: the same command again.
  ProcessOptions options;
  options.timeout_seconds = 600;
  options.extra_env = {CacheEnv()};
  auto second = RunProcess(argv, options);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  ASSERT_EQ(second->exit_code, 0) << second->output;
  nlohmann::json report = nlohmann::json::parse(second->output, nullptr, false);
  ASSERT_TRUE(report.is_object()) << second->output;
  EXPECT_TRUE(report["resumed"].get<bool>());
  EXPECT_EQ(report["stop_reason"], "attempts");
  EXPECT_EQ(report["attempts"].size(), 5u);
  EXPECT_TRUE(fs::exists(scratch.path() / "best.cc"));

  ExpectFiveAttemptsEachEvaluatedOnce(store_path, report["run"].get<int64_t>());
}

TEST(ResumeTest, OptimizeWithAScriptedLlmFromTheConfiguration) {
  ScratchDir scratch;
  const std::string kernel =
      "#include <cstdint>\n#include \"kope/kernel.h\"\n"
      "extern \"C\" int kope_kernel(const kope_tensor* in, int ni, kope_tensor* out, int no, "
      "void*) {\n  if (ni != 1 || no != 1) return 1;\n"
      "  const float* x = static_cast<const float*>(in[0].data);\n"
      "  float* y = static_cast<float*>(out[0].data);\n"
      "  for (int64_t i = 0; i < in[0].shape[0]; ++i) y[i] = x[i] + x[i];\n  return 0;\n}\n";
  nlohmann::json replies = nlohmann::json::array(
      {{{"text", "DECISION: add x to itself instead of multiplying\n```cpp\n" + kernel + "```\n"},
        {"prompt_tokens", 1200},
        {"completion_tokens", 150}}});
  std::ofstream(scratch.path() / "replies.json") << replies.dump();
  std::ofstream(scratch.path() / "llm.toml")
      << "default = \"script\"\n[providers.script]\nkind = \"scripted\"\nmodel = \"scripted\"\n"
         "replies = \"replies.json\"\n"
         "[prices.scripted]\nprompt_usd_per_mtok = 2\ncompletion_usd_per_mtok = 10\n";

  ProcessOptions options;
  options.timeout_seconds = 300;
  options.extra_env = {CacheEnv()};
  auto result =
      RunProcess({Kope(), "optimize", testing::TestTaskDir("scale_small").string(), "--llm",
                  "--llm-config", (scratch.path() / "llm.toml").string(), "--store",
                  (scratch.path() / "store.db").string(), "--attempts", "1", "--no-confirm",
                  "--json", "-q", "--out", (scratch.path() / "best.cc").string()},
                 options);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->exit_code, 0) << result->output;
  nlohmann::json report = nlohmann::json::parse(result->output, nullptr, false);
  ASSERT_TRUE(report.is_object()) << result->output;
  EXPECT_EQ(report["proposer"], "llm:script/scripted+tuner");
  ASSERT_EQ(report["attempts"].size(), 1u);
  EXPECT_EQ(report["attempts"][0]["proposer"], "llm:scripted");
  EXPECT_EQ(report["attempts"][0]["verdict"], "valid");
  EXPECT_EQ(report["attempts"][0]["tokens"], 1350);
  EXPECT_EQ(report["prompt_tokens"], 1200);
  EXPECT_EQ(ReadFileText(scratch.path() / "best.cc").value_or(""), kernel);
  // The attempt keeps what its call cost at the configured price.
  auto store = memory::OpenSqliteStore(scratch.path() / "store.db", {.create_if_missing = false});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto attempt = (*store)->GetAttempt(report["attempts"][0]["id"].get<int64_t>());
  ASSERT_TRUE(attempt.ok()) << attempt.status().ToString();
  EXPECT_DOUBLE_EQ(attempt->cost_usd, (1200 * 2.0 + 150 * 10.0) / 1e6);
}

TEST(ResumeTest, BadUsageIsExitCodeTwo) {
  ProcessOptions options;
  options.extra_env = {CacheEnv()};
  auto result = RunProcess({Kope(), "optimize", "/nonexistent/task"}, options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->exit_code, 2) << result->output;
  EXPECT_NE(result->output.find("task.toml"), std::string::npos) << result->output;
}

}  // namespace
}  // namespace kope::agent
