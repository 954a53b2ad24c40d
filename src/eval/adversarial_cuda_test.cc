// The GPU adversarial suite: one CUDA candidate per way a kernel can fool (or
// harm) a GPU harness, each with the verdict it must get, plus legitimate
// kernels that must pass and every bundled example's optimized.cu. The cases
// are data: src/eval/testdata/adversarial_cuda/cases.toml. Every case skips
// where no CUDA GPU is present; the cases file is still checked.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "kope/backend/cuda/cuda_backend.h"
#include "kope/base/file.h"
#include "kope/eval/evaluator.h"
#include "kope/eval/runner_pool.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name;
  fs::path file;
  fs::path task;
  std::string expected;
  std::string flag;
  std::string not_flag;
  double max_speedup = 0;
};

std::vector<Case> LoadCases() {
  std::vector<Case> cases;
  const fs::path dir = fs::path(kope::testing::SourceDir()) / "src/eval/testdata/adversarial_cuda";
  toml::table table = toml::parse_file((dir / "cases.toml").string());
  for (const auto& node : *table["case"].as_array()) {
    const toml::table& t = *node.as_table();
    Case c;
    c.file = dir / t["file"].value_or(std::string());
    c.name = c.file.stem().string();
    c.task = fs::path(kope::testing::SourceDir()) / t["task"].value_or(std::string());
    c.expected = t["expected"].value_or(std::string());
    c.flag = t["flag"].value_or(std::string());
    c.not_flag = t["not_flag"].value_or(std::string());
    c.max_speedup = t["max_speedup"].value_or(0.0);
    cases.push_back(c);
  }
  for (const auto& entry :
       fs::directory_iterator(fs::path(kope::testing::SourceDir()) / "examples")) {
    if (!fs::exists(entry.path() / "optimized.cu")) continue;
    Case c;
    c.name = "example_" + entry.path().filename().string();
    c.file = entry.path() / "optimized.cu";
    c.task = entry.path();
    c.expected = "valid";
    c.not_flag = "faster_than_roofline";
    cases.push_back(c);
  }
  std::sort(cases.begin(), cases.end(),
            [](const Case& a, const Case& b) { return a.name < b.name; });
  return cases;
}

TEST(AdversarialCudaCases, EveryCaseNamesAnExistingFileAndTask) {
  for (const Case& c : LoadCases()) {
    EXPECT_TRUE(fs::exists(c.file)) << c.file;
    EXPECT_TRUE(fs::exists(c.task / "task.toml")) << c.task;
    EXPECT_TRUE(c.expected == "valid" || c.expected == "incorrect" || c.expected == "crash" ||
                c.expected == "timeout" || c.expected == "runtime_error" ||
                c.expected == "compile_error")
        << c.name << ": " << c.expected;
    auto task = LoadTask(c.task);
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    EXPECT_TRUE(task->baselines.count("cuda") > 0) << c.task;
  }
}

class AdversarialCuda : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    if (!CudaDevicePresent()) return;
    CudaBackendOptions options;
    options.cache_dir = fs::path(kope::testing::BinaryDir()) / "test-cache";
    auto backend = CreateCudaBackend(options);
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    backend_ = std::move(backend).value().release();
  }
  static Backend* backend_;
};
Backend* AdversarialCuda::backend_ = nullptr;

TEST_P(AdversarialCuda, GetsItsVerdict) {
  if (backend_ == nullptr) GTEST_SKIP() << "no CUDA GPU here";
  const Case& c = GetParam();
  auto task = LoadTask(c.task);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EvalOptions options;
  options.runner_exe = fs::path(kope::testing::BinaryDir()) / "kope-runner";
  options.call_timeout_seconds = 5;
  options.limits.cpu_seconds = 60;
  options.timing.min_seconds = 0.02;
  options.timing.max_seconds = 0.3;
  Evaluator evaluator(*backend_, options);
  auto outcome =
      evaluator.Evaluate(*task, ReadFileText(c.file).value_or(""), c.file.filename().string());
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(VerdictName(outcome->verdict), c.expected) << FormatOutcome(*outcome);
  if (!c.flag.empty()) {
    EXPECT_TRUE(outcome->HasFlag(c.flag)) << FormatOutcome(*outcome);
  }
  if (!c.not_flag.empty()) {
    EXPECT_FALSE(outcome->HasFlag(c.not_flag)) << FormatOutcome(*outcome);
  }
  if (c.max_speedup > 0 && outcome->valid()) {
    EXPECT_LT(outcome->speedup, c.max_speedup) << FormatOutcome(*outcome);
  }
  std::printf("%s: %s\n", c.name.c_str(), FormatOutcome(*outcome).c_str());
}

// A GPU fault in one candidate (an illegal address, a hung kernel, all device memory taken)
// reaches neither the next candidate's verdict nor its timing: the same honest kernel is
// evaluated before and after each fault, through one runner pool as an optimization episode
// evaluates its candidates, and must be valid both times with its median time within the
// noise of its clean run (twice the larger of the two runs' noise, and at least 15%: a fault
// whose work outlived its runner would take the GPU from the kernel timed next).
TEST_F(AdversarialCuda, AFaultReachesNeitherTheNextVerdictNorItsTiming) {
  if (backend_ == nullptr) GTEST_SKIP() << "no CUDA GPU here";
  const fs::path dir = fs::path(kope::testing::SourceDir()) / "src/eval/testdata/adversarial_cuda";
  auto task = LoadTask(dir / "gelu_small");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  const fs::path clean = fs::path(kope::testing::SourceDir()) / "examples/gelu/optimized.cu";
  EvalOptions options;
  options.runner_exe = fs::path(kope::testing::BinaryDir()) / "kope-runner";
  options.call_timeout_seconds = 5;
  options.limits.cpu_seconds = 60;
  RunnerPoolOptions pool_options;
  pool_options.spares = true;
  options.pool = std::make_shared<RunnerPool>(pool_options);
  Evaluator evaluator(*backend_, options);
  auto evaluate = [&](const fs::path& file) {
    return evaluator.Evaluate(*task, ReadFileText(file).value_or(""), file.filename().string());
  };
  auto before = evaluate(clean);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_TRUE(before->valid() && before->candidate_time) << FormatOutcome(*before);
  const std::pair<const char*, const char*> faults[] = {{"illegal_address.cu", "crash"},
                                                        {"infinite_loop.cu", "timeout"},
                                                        {"device_memory_hog.cu", "runtime_error"},
                                                        {"launch_failure.cu", "runtime_error"}};
  std::printf("%-22s %-14s %12s %12s %8s %8s\n", "fault", "verdict", "clean us", "next us",
              "change", "noise");
  for (const auto& [file, expected] : faults) {
    auto fault = evaluate(dir / file);
    ASSERT_TRUE(fault.ok()) << fault.status().ToString();
    EXPECT_EQ(VerdictName(fault->verdict), expected) << FormatOutcome(*fault);
    auto next = evaluate(clean);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    ASSERT_TRUE(next->valid() && next->candidate_time) << file << "\n" << FormatOutcome(*next);
    const double change = next->candidate_time->median_s / before->candidate_time->median_s - 1;
    const double noise = std::max(before->timing_noise, next->timing_noise);
    std::printf("%-22s %-14s %12.2f %12.2f %+7.1f%% %7.1f%%\n", file,
                std::string(VerdictName(fault->verdict)).c_str(),
                before->candidate_time->median_s * 1e6, next->candidate_time->median_s * 1e6,
                change * 100, noise * 100);
    EXPECT_LE(std::abs(change), std::max(2 * noise, 0.15)) << file << "\n" << FormatOutcome(*next);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, AdversarialCuda, ::testing::ValuesIn(LoadCases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string n = param_info.param.name;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace kope
