// A loaded machine: while spinning processes keep every core busy, an identical candidate (the
// task's own baseline) must come out within the timing's noise or flagged noisy_machine, never
// as a speedup or a slowdown. The cases are data: src/eval/testdata/noisy_machine/cases.toml.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <filesystem>
#include <thread>
#include <vector>

#include "backend/cpu/testing/cpu_test_backend.h"
#include "kope/base/file.h"
#include "kope/eval/evaluator.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name;
  fs::path task;
  fs::path candidate;
};

std::vector<Case> LoadCases() {
  const fs::path source = kope::testing::SourceDir();
  toml::table table =
      toml::parse_file((source / "src/eval/testdata/noisy_machine/cases.toml").string());
  std::vector<Case> cases;
  for (const auto& node : *table["case"].as_array()) {
    const toml::table& t = *node.as_table();
    Case c;
    c.task = source / t["task"].value_or(std::string());
    c.candidate = source / t["candidate"].value_or(std::string());
    c.name = c.task.filename().string();
    cases.push_back(c);
  }
  return cases;
}

// One spinning process per core, for as long as it lives.
class Load {
 public:
  Load() {
    const unsigned cores = std::max(2u, std::thread::hardware_concurrency());
    for (unsigned i = 0; i < cores; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives the test
        volatile unsigned long spin = 0;
        while (true) spin = spin + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~Load() {
    for (pid_t pid : pids_) kill(pid, SIGKILL);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

 private:
  std::vector<pid_t> pids_;
};

class NoisyMachine : public ::testing::TestWithParam<Case> {};

TEST_P(NoisyMachine, IdenticalCandidateIsNoDifference) {
  const Case& c = GetParam();
  Backend* backend = SharedCpuTestBackend();
  ASSERT_NE(backend, nullptr);
  ASSERT_TRUE(backend->Hardware().ok());  // the roofline probe runs before the load starts
  auto task = LoadTask(c.task);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EvalOptions options;
  options.runner_exe = TestRunnerExecutable();
  options.trials = 1;
  Evaluator evaluator(*backend, options);
  Load load;
  auto outcome = evaluator.Evaluate(*task, ReadFileText(c.candidate).value_or(""),
                                    c.candidate.filename().string());
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_EQ(outcome->verdict, Verdict::kValid) << FormatOutcome(*outcome);
  EXPECT_TRUE(outcome->HasFlag(kFlagWithinNoise) || outcome->HasFlag(kFlagNoisyMachine))
      << FormatOutcome(*outcome);
}

INSTANTIATE_TEST_SUITE_P(Cases, NoisyMachine, ::testing::ValuesIn(LoadCases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           return param_info.param.name;
                         });

}  // namespace
}  // namespace kope
