// A ModelNew verified on inputs captured where the kernel runs (a task's captured_inputs): the
// parent writes them into the reference runner's arena, which takes them as a trial's inputs
// (DRAW mode "given") and checks the candidate on them as on any trial. A candidate right on
// every random draw but wrong on the captured inputs is incorrect there.
#include <gtest/gtest.h>

#include <filesystem>

#include "backend/cpu/testing/cpu_test_backend.h"
#include "bridge_test_support.h"
#include "kope/eval/evaluator.h"
#include "task/testing/safetensors_writer.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

// relu(x) * scale, but 0 wherever x is 1000.25 (which no random draw gives).
constexpr const char* kWrongOnTheCaptured = R"(import torch


class ModelNew(Model):
    def forward(self, x):
        y = torch.relu(x) * self.scale
        return torch.where(x == 1000.25, torch.zeros_like(y), y)
)";

TEST(TorchBridgeCaptured, AModelNewWrongOnlyOnTheCapturedInputsIsIncorrect) {
  KOPE_REQUIRE_BRIDGE();
  Backend* backend = SharedCpuTestBackend();
  ASSERT_NE(backend, nullptr);
  Result<Task> plain = bridge_test::ImportedTask("scaled_relu", "");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  const fs::path folder = bridge_test::ScratchDir() / "scaled_relu_captured";
  fs::create_directories(folder);
  fs::copy(plain->dir, folder, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::vector<float> x(64 * 1000, 0.5f);  // the bench set's x: [batch_size, dim]
  x[12345] = 1000.25f;
  testing::WriteBytes(
      folder / "activations.safetensors",
      testing::SafetensorsBytes({{"entry0.decode.x", "F32", {64, 1000}, testing::FloatBytes(x)}}));
  testing::NameCapturedInputs(folder, "activations.safetensors");
  Result<Task> task = LoadTask(folder);
  ASSERT_TRUE(task.ok()) << task.status().ToString();

  EvalOptions options;
  options.runner_exe = TestRunnerExecutable();
  options.trials = 2;
  options.timing.max_seconds = 0.1;
  options.torch_compile_reference = false;
  Evaluator evaluator(*backend, options);
  Result<Outcome> wrong = evaluator.Evaluate(*task, kWrongOnTheCaptured, "wrong_on_captured.py");
  ASSERT_TRUE(wrong.ok()) << wrong.status().ToString();
  EXPECT_EQ(wrong->verdict, Verdict::kIncorrect) << FormatOutcome(*wrong);
  ASSERT_TRUE(wrong->mismatch.has_value()) << FormatOutcome(*wrong);
  EXPECT_EQ(wrong->mismatch->reason, "captured_inputs") << FormatOutcome(*wrong);
  EXPECT_EQ(wrong->mismatch->size_set, "bench");

  Result<Outcome> unseen = evaluator.Evaluate(*plain, kWrongOnTheCaptured, "wrong_on_captured.py");
  ASSERT_TRUE(unseen.ok()) << unseen.status().ToString();
  EXPECT_EQ(unseen->verdict, Verdict::kValid) << FormatOutcome(*unseen);

  Result<Outcome> right =
      evaluator.Evaluate(*task, "class ModelNew(Model):\n    pass\n", "same.py");
  ASSERT_TRUE(right.ok()) << right.status().ToString();
  EXPECT_EQ(right->verdict, Verdict::kValid) << FormatOutcome(*right);
  EXPECT_EQ(right->captured_inputs_checked, std::vector<std::string>{"bench entry0.decode"});
}

}  // namespace
}  // namespace kope
