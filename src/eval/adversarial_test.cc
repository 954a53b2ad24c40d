// The adversarial suite: one candidate per way a kernel can fool a harness
// (EVALUATION.md), each with the verdict it must get, plus legitimate tricky
// kernels that must pass and every bundled example's optimized kernel (valid; matmul's also not
// faster than the measured roofline).
// The cases are data: src/eval/testdata/adversarial/cases.toml.
#include <gtest/gtest.h>
#include <toml++/toml.h>

#include <filesystem>

#include "backend/cpu/testing/cpu_test_backend.h"
#include "kope/base/file.h"
#include "kope/eval/evaluator.h"
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
  double timeout = 5;  // per call, seconds
  std::string not_flag;
};

std::vector<Case> LoadCases() {
  std::vector<Case> cases;
  fs::path dir = fs::path(kope::testing::SourceDir()) / "src/eval/testdata/adversarial";
  toml::table table = toml::parse_file((dir / "cases.toml").string());
  for (const auto& node : *table["case"].as_array()) {
    const toml::table& t = *node.as_table();
    Case c;
    c.file = dir / t["file"].value_or(std::string());
    c.name = c.file.stem().string();
    c.task = fs::path(kope::testing::SourceDir()) / t["task"].value_or(std::string());
    c.expected = t["expected"].value_or(std::string());
    c.flag = t["flag"].value_or(std::string());
    c.timeout = t["timeout"].value_or(5.0);
    c.not_flag = t["not_flag"].value_or(std::string());
    cases.push_back(c);
  }
  // Every bundled example's optimized kernel must be valid; matmul's, compute-bound and far
  // from the FMA peak, also within the roofline the CPU probe measured: a known-good kernel
  // faster than the machine's peak means the probe is wrong. (The memory-bound examples are
  // left out: copy bandwidth probed on a busy machine can be below what a quiet moment gives.)
  for (const auto& entry :
       fs::directory_iterator(fs::path(kope::testing::SourceDir()) / "examples")) {
    if (!fs::exists(entry.path() / "optimized.cc")) continue;
    cases.push_back({"example_" + entry.path().filename().string(), entry.path() / "optimized.cc",
                     entry.path(), "valid", "", 5,
                     entry.path().filename() == "matmul" ? "faster_than_roofline" : ""});
  }
  std::sort(cases.begin(), cases.end(),
            [](const Case& a, const Case& b) { return a.name < b.name; });
  return cases;
}

class Adversarial : public ::testing::TestWithParam<Case> {};

TEST_P(Adversarial, GetsItsVerdict) {
  const Case& c = GetParam();
  Backend* backend = SharedCpuTestBackend();
  ASSERT_NE(backend, nullptr);
  auto task = LoadTask(c.task);
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EvalOptions options;
  options.runner_exe = TestRunnerExecutable();
  options.call_timeout_seconds = c.timeout;
  options.limits.cpu_seconds = 20;
  options.limits.max_address_space_bytes = 2ull << 30;
  options.timing.min_seconds = 0.02;
  options.timing.max_seconds = 0.3;
  Evaluator evaluator(*backend, options);
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
}

INSTANTIATE_TEST_SUITE_P(Cases, Adversarial, ::testing::ValuesIn(LoadCases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string n = param_info.param.name;
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace kope
