// RunnerPool: the task's runners are kept between evaluations, spares start ahead, and no
// candidate ever sees another's runner or folder.
#include "kope/eval/runner_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>

#include "backend/cpu/testing/cpu_test_backend.h"
#include "kernel_process.h"
#include "kope/base/file.h"
#include "kope/eval/evaluator.h"
#include "runner_pool_impl.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

// The example's own GELU, made to refuse (rc 7) when its working folder already holds the marker
// an earlier candidate left there, and to fail (rc 8) when it cannot leave one itself.
std::string MarkerCandidate() {
  std::string source =
      ReadFileText(fs::path(kope::testing::SourceDir()) / "examples/gelu/baseline.cc").value_or("");
  const std::string entry = "extern \"C\" int kope_kernel(";
  const std::string marker = R"(
#include <cstdio>
#include <unistd.h>
static int MarkerCheck() {
  static int verdict = -1;
  if (verdict < 0) {
    verdict = access("kope-marker", F_OK) == 0 ? 7 : 0;
    std::FILE* f = std::fopen("kope-marker", "w");
    if (f == nullptr) verdict = 8;
    else std::fclose(f);
  }
  return verdict;
}
)";
  source.insert(source.find(entry), marker);
  const std::string body = "void* /*stream*/) {\n";
  source.insert(source.find(body) + body.size(), "  if (int rc = MarkerCheck()) return rc;\n");
  return source;
}

class RunnerPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = SharedCpuTestBackend();
    ASSERT_NE(backend_, nullptr);
  }
  EvalOptions Options(std::shared_ptr<RunnerPool> pool) {
    EvalOptions options;
    options.runner_exe = TestRunnerExecutable();
    options.trials = 2;
    options.timing.min_seconds = 0.02;
    options.timing.max_seconds = 0.2;
    options.pool = std::move(pool);
    return options;
  }
  Outcome MustEvaluate(Evaluator& e, const fs::path& task_dir, const std::string& source,
                       const std::string& name) {
    auto task = LoadTask(task_dir);
    EXPECT_TRUE(task.ok()) << task.status().ToString();
    auto outcome = e.Evaluate(*task, source, name);
    EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
    return outcome.ok() ? *outcome : Outcome{};
  }
  Backend* backend_ = nullptr;
  const fs::path examples_ = fs::path(kope::testing::SourceDir()) / "examples";
  const fs::path adversarial_ =
      fs::path(kope::testing::SourceDir()) / "src/eval/testdata/adversarial";
};

TEST_F(RunnerPoolTest, KeepsTheTaskRunnersForTheNextCandidateOfTheSameTask) {
  auto pool = std::make_shared<RunnerPool>();
  Evaluator evaluator(*backend_, Options(pool));
  const std::string good = ReadFileText(examples_ / "gelu/optimized.cc").value_or("");
  Outcome first = MustEvaluate(evaluator, examples_ / "gelu", good, "optimized.cc");
  EXPECT_TRUE(first.valid()) << FormatOutcome(first);
  EXPECT_EQ(first.runners_reused, 0);

  // A candidate that crashes leaves the task's runner as it was.
  Outcome crash =
      MustEvaluate(evaluator, examples_ / "gelu",
                   ReadFileText(adversarial_ / "segfault.cc").value_or(""), "segfault.cc");
  EXPECT_EQ(VerdictName(crash.verdict), "crash") << FormatOutcome(crash);
  EXPECT_EQ(crash.runners_reused, 1);

  Outcome again = MustEvaluate(evaluator, examples_ / "gelu", good, "optimized.cc");
  EXPECT_TRUE(again.valid()) << FormatOutcome(again);
  EXPECT_EQ(again.runners_reused, 1);

  // An evaluator sharing the pool with other runner settings gets runners of its own.
  EvalOptions stricter = Options(pool);
  stricter.limits.cpu_seconds = 30;
  Evaluator other_settings(*backend_, stricter);
  Outcome strict = MustEvaluate(other_settings, examples_ / "gelu", good, "optimized.cc");
  EXPECT_TRUE(strict.valid()) << FormatOutcome(strict);
  EXPECT_EQ(strict.runners_reused, 0);

  // Another task's runners replace them; a wrong candidate is still caught with kept runners.
  Outcome other =
      MustEvaluate(evaluator, examples_ / "row_sum",
                   ReadFileText(examples_ / "row_sum/optimized.cc").value_or(""), "optimized.cc");
  EXPECT_TRUE(other.valid()) << FormatOutcome(other);
  EXPECT_EQ(other.runners_reused, 0);
  Outcome wrong =
      MustEvaluate(evaluator, examples_ / "gelu",
                   ReadFileText(adversarial_ / "unwritten_output.cc").value_or(""), "unwritten.cc");
  EXPECT_EQ(VerdictName(wrong.verdict), "incorrect") << FormatOutcome(wrong);
  EXPECT_EQ(wrong.runners_reused, 0);
  Outcome wrong_again =
      MustEvaluate(evaluator, examples_ / "gelu",
                   ReadFileText(adversarial_ / "constant_output.cc").value_or(""), "constant.cc");
  EXPECT_EQ(VerdictName(wrong_again.verdict), "incorrect") << FormatOutcome(wrong_again);
  EXPECT_EQ(wrong_again.runners_reused, 1);
}

TEST_F(RunnerPoolTest, AnotherTasksKeptRunnersEndBeforeTheNewTaskRuns) {
  auto pool = std::make_shared<RunnerPool>();
  EvalOptions options = Options(pool);
  Evaluator evaluator(*backend_, options);
  Outcome first =
      MustEvaluate(evaluator, examples_ / "gelu",
                   ReadFileText(examples_ / "gelu/optimized.cc").value_or(""), "optimized.cc");
  EXPECT_TRUE(first.valid()) << FormatOutcome(first);
  ASSERT_GE(pool->impl().kept(), 1u);
  // While the next task is verified, the last task's runners no longer hold their memory.
  int steps = 0;
  size_t most_kept = 0;
  options.progress = [&](std::string_view line) {
    if (line.substr(0, 6) != "verify") return;
    ++steps;
    most_kept = std::max(most_kept, pool->impl().kept());
  };
  Evaluator next_task(*backend_, options);
  Outcome other =
      MustEvaluate(next_task, examples_ / "row_sum",
                   ReadFileText(examples_ / "row_sum/optimized.cc").value_or(""), "optimized.cc");
  EXPECT_TRUE(other.valid()) << FormatOutcome(other);
  EXPECT_GT(steps, 0);
  EXPECT_EQ(most_kept, 0u);
  EXPECT_GE(pool->impl().kept(), 1u);  // the new task's, for its next candidate
}

TEST_F(RunnerPoolTest, EveryCandidateGetsARunnerAndFolderNoKernelUsed) {
  RunnerPoolOptions options;
  options.spares = true;
  auto pool = std::make_shared<RunnerPool>(options);
  Evaluator evaluator(*backend_, Options(pool));
  const std::string source = MarkerCandidate();
  for (int i = 0; i < 3; ++i) {
    Outcome o = MustEvaluate(evaluator, examples_ / "gelu", source, "marker.cc");
    EXPECT_TRUE(o.valid()) << "evaluation " << i << "\n" << FormatOutcome(o);
    if (i > 0) {
      EXPECT_EQ(o.runners_reused, 1);
      EXPECT_EQ(o.runners_from_spares, 1);
    }
  }
  // Without a pool the same holds, trivially: each evaluation starts its own runners.
  Evaluator plain(*backend_, Options(nullptr));
  Outcome o = MustEvaluate(plain, examples_ / "gelu", source, "marker.cc");
  EXPECT_TRUE(o.valid()) << FormatOutcome(o);
  EXPECT_EQ(o.runners_reused + o.runners_from_spares, 0);
}

TEST_F(RunnerPoolTest, SparesForTheNextTaskStartEveryRunnerOfANewTaskAhead) {
  const std::string gelu = ReadFileText(examples_ / "gelu/optimized.cc").value_or("");
  const std::string row_sum = ReadFileText(examples_ / "row_sum/optimized.cc").value_or("");
  for (bool next_task : {false, true}) {
    RunnerPoolOptions options;
    options.spares = true;
    options.spares_for_next_task = next_task;
    auto pool = std::make_shared<RunnerPool>(options);
    Evaluator evaluator(*backend_, Options(pool));
    Outcome first = MustEvaluate(evaluator, examples_ / "gelu", gelu, "optimized.cc");
    EXPECT_TRUE(first.valid()) << FormatOutcome(first);
    // The task's runners and the candidate's, all of one kind (kope-runner on the CPU).
    const size_t runners = first.runner_overhead_seconds.size();
    ASSERT_GE(runners, 2u);
    // One spare per kind covers the next candidate; with spares for the next task, there are
    // as many as the new task's runners, started during the last evaluation.
    EXPECT_EQ(pool->impl().spares_waiting(), next_task ? runners : 1u) << next_task;
    Outcome other = MustEvaluate(evaluator, examples_ / "row_sum", row_sum, "optimized.cc");
    EXPECT_TRUE(other.valid()) << FormatOutcome(other);
    EXPECT_EQ(other.runners_reused, 0);
    EXPECT_EQ(other.runners_from_spares, static_cast<int>(other.runner_overhead_seconds.size()));
    EXPECT_EQ(pool->impl().spares_waiting(), next_task ? runners : 1u) << next_task;
  }
}

// Candidates that come faster than their runner starts (a PyTorch bridge's) find as many
// spares started ahead as the evaluator asks for; each start replaces the one it took.
TEST_F(RunnerPoolTest, AKindCanKeepSeveralSparesAhead) {
  RunnerPoolOptions options;
  options.spares = true;
  RunnerPool pool(options);
  RunnerOptions runner;
  runner.runner_exe = TestRunnerExecutable();
  for (int i = 0; i < 3; ++i) {
    pool.impl().BeginEvaluation();
    bool from_spare = false;
    auto process = pool.impl().Start("candidate", runner, Env::Default(), &from_spare, 2);
    ASSERT_TRUE(process.ok()) << process.status().ToString();
    EXPECT_EQ(from_spare, i > 0) << i;
    EXPECT_EQ(pool.impl().spares_waiting(), 2u) << i;
  }
  pool.impl().BeginEvaluation();
  bool from_spare = false;
  ASSERT_TRUE(pool.impl().Start("candidate", runner, Env::Default(), &from_spare).ok());
  EXPECT_TRUE(from_spare);
  EXPECT_EQ(pool.impl().spares_waiting(), 1u);  // one ahead, as asked now
}

TEST_F(RunnerPoolTest, AnAdoptedArenaIsZeroedAndServesALayoutOfItsSize) {
  auto task = LoadTask(examples_ / "gelu");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  auto layout = ArenaLayout::Build(*task, task->bench, 1);
  ASSERT_TRUE(layout.ok()) << layout.status().ToString();
  const fs::path scratch = fs::path(kope::testing::BinaryDir()) / "runner-pool-test-arena";
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  RunnerOptions runner;
  runner.runner_exe = TestRunnerExecutable();
  runner.sandbox.scratch_dir = scratch;
  auto process = KernelProcess::Spawn("candidate", runner, Env::Default());
  ASSERT_TRUE(process.ok()) << process.status().ToString();

  // An arena of another size is not used; one of the layout's size is, zeroed.
  auto small = SharedArena::Create(4096);
  ASSERT_TRUE(small.ok());
  std::vector<std::unique_ptr<SharedArena>> adopted;
  adopted.push_back(std::move(small).value());
  (*process)->AdoptArenas(std::move(adopted));
  auto mapped = (*process)->Prepare(*layout, 10);
  ASSERT_TRUE(mapped.ok() && mapped->ok());
  std::vector<std::unique_ptr<SharedArena>> used = (*process)->ReleaseArenas();
  ASSERT_EQ(used.size(), 1u);
  EXPECT_GE(used[0]->size(), layout->total_bytes);
  EXPECT_NE(used[0]->size(), 4096u);

  std::memset(used[0]->data(), 0xab, used[0]->size());
  const uint8_t* data = used[0]->data();
  const size_t size = used[0]->size();
  (*process)->AdoptArenas(std::move(used));
  mapped = (*process)->Prepare(*layout, 10);
  ASSERT_TRUE(mapped.ok() && mapped->ok());
  EXPECT_EQ((*process)->arena(), data);
  size_t nonzero = 0;
  for (size_t i = 0; i < size; ++i) nonzero += (*process)->arena()[i] != 0;
  EXPECT_EQ(nonzero, 0u);

  // Retained, the arenas a process stops using come back with the one it uses last.
  (*process)->retain_arenas();
  auto check = ArenaLayout::Build(*task, task->checks.front(), 1);
  ASSERT_TRUE(check.ok());
  mapped = (*process)->Prepare(*check, 10);
  ASSERT_TRUE(mapped.ok() && mapped->ok());
  std::vector<std::unique_ptr<SharedArena>> both = (*process)->ReleaseArenas();
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0]->data(), data);
  process->reset();
  fs::remove_all(scratch);
}

}  // namespace
}  // namespace kope
