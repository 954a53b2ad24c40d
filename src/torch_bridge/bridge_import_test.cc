// Importing KernelBench-format problems through the bridge: inputs, parameters, shapes and
// the errors of broken or missing files.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "bridge_test_support.h"
#include "kope/base/file.h"
#include "kope/task/task.h"
#include "kope/torch_bridge/bridge.h"

namespace kope {
namespace {

namespace fs = std::filesystem;
using bridge_test::ImportedTask;
using bridge_test::ScratchDir;
using bridge_test::TestData;

std::vector<std::string> ShapeOf(const TensorSpec& spec) {
  std::vector<std::string> dims;
  for (const Expr& e : spec.shape) dims.push_back(e.text());
  return dims;
}

std::vector<std::string> Names(const std::vector<TensorSpec>& specs) {
  std::vector<std::string> names;
  for (const TensorSpec& s : specs) names.push_back(s.name);
  return names;
}

using Shape = std::vector<std::string>;
using Sizes = std::map<std::string, int64_t>;

// What every imported task shares: a torch baseline (the copied problem), checks that include a
// size of 1, sizes given for every global in every set, ops allowed by default.
void ExpectCommon(const Task& task, const std::string& problem,
                  const std::vector<std::string>& globals) {
  EXPECT_EQ(task.name, "kb_" + problem);
  ASSERT_TRUE(task.torch.has_value());
  EXPECT_EQ(task.torch->globals, globals);
  EXPECT_FALSE(task.torch->forbid_torch_ops);
  ASSERT_EQ(task.baselines.count("torch"), 1u);
  EXPECT_EQ(task.baselines.at("torch").language, "torch");
  EXPECT_EQ(ReadFileText(task.baselines.at("torch").path).value_or(""),
            ReadFileText(TestData() / "problems" / (problem + ".py")).value_or(""));
  ASSERT_FALSE(task.checks.empty());
  bool has_one = false;
  for (const SizeSet& set : AllSizeSets(task)) {
    for (const std::string& g : globals) {
      EXPECT_EQ(set.sizes.count(g), 1u) << set.label << " lacks " << g;
    }
    if (set.label != "bench") {
      for (const auto& [name, value] : set.sizes) has_one = has_one || value == 1;
    }
  }
  EXPECT_TRUE(has_one) << "no check set has a size of 1";
  // Small problems need no separate CPU bench set.
  EXPECT_TRUE(task.language_bench.empty());
  EXPECT_TRUE(task.bytes.has_value());
}

TEST(TorchBridgeImport, ScaledReluHasOneInputAndNoParameters) {
  KOPE_REQUIRE_BRIDGE();
  Result<Task> task = ImportedTask("scaled_relu", "");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  // `scale = 1.5` is a float: a constructor argument, not a size.
  ExpectCommon(*task, "scaled_relu", {"batch_size", "dim"});
  EXPECT_EQ(task->family, "elementwise");
  EXPECT_EQ(Names(task->inputs), (std::vector<std::string>{"x"}));
  EXPECT_EQ(ShapeOf(task->inputs[0]), (Shape{"batch_size", "dim"}));
  EXPECT_EQ(task->inputs[0].dtype, KOPE_F32);
  ASSERT_EQ(task->outputs.size(), 1u);
  EXPECT_EQ(ShapeOf(task->outputs[0]), (Shape{"batch_size", "dim"}));
  EXPECT_TRUE(task->torch->parameters.empty());
  EXPECT_EQ(task->bench.sizes, (Sizes{{"batch_size", 64}, {"dim", 1000}}));
}

TEST(TorchBridgeImport, RowSoftmaxKeepsItsShape) {
  KOPE_REQUIRE_BRIDGE();
  Result<Task> task = ImportedTask("row_softmax", "");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  ExpectCommon(*task, "row_softmax", {"batch_size", "dim"});
  EXPECT_EQ(task->family, "softmax");
  EXPECT_EQ(Names(task->inputs), (std::vector<std::string>{"x"}));
  EXPECT_EQ(ShapeOf(task->outputs[0]), (Shape{"batch_size", "dim"}));
  EXPECT_TRUE(task->torch->parameters.empty());
  EXPECT_EQ(task->bench.sizes, (Sizes{{"batch_size", 64}, {"dim", 1000}}));
}

TEST(TorchBridgeImport, LinearGeluPassesItsParametersAsInputs) {
  KOPE_REQUIRE_BRIDGE();
  Result<Task> task = ImportedTask("linear_gelu", "");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  ExpectCommon(*task, "linear_gelu", {"batch_size", "in_features", "out_features"});
  // Forward inputs first, then named_parameters() order.
  EXPECT_EQ(task->torch->parameters, (std::vector<std::string>{"linear.weight", "linear.bias"}));
  ASSERT_EQ(Names(task->inputs), (std::vector<std::string>{"x", "linear_weight", "linear_bias"}));
  EXPECT_EQ(ShapeOf(task->inputs[0]), (Shape{"batch_size", "in_features"}));
  EXPECT_EQ(ShapeOf(task->inputs[1]), (Shape{"out_features", "in_features"}));
  EXPECT_EQ(ShapeOf(task->inputs[2]), (Shape{"out_features"}));
  ASSERT_EQ(task->outputs.size(), 1u);
  EXPECT_EQ(ShapeOf(task->outputs[0]), (Shape{"batch_size", "out_features"}));
  EXPECT_EQ(task->bench.sizes,
            (Sizes{{"batch_size", 64}, {"in_features", 256}, {"out_features", 128}}));
}

TEST(TorchBridgeImport, SumRowsReducesToOneValuePerRow) {
  KOPE_REQUIRE_BRIDGE();
  Result<Task> task = ImportedTask("sum_rows", "");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  ExpectCommon(*task, "sum_rows", {"batch_size", "dim"});
  EXPECT_EQ(task->family, "reduction");
  EXPECT_EQ(ShapeOf(task->inputs[0]), (Shape{"batch_size", "dim"}));
  ASSERT_EQ(task->outputs.size(), 1u);
  EXPECT_EQ(ShapeOf(task->outputs[0]), (Shape{"batch_size"}));
  EXPECT_EQ(task->bench.sizes, (Sizes{{"batch_size", 64}, {"dim", 1000}}));
}

TEST(TorchBridgeImport, OpsLineRewriteForbidsTorchOps) {
  KOPE_REQUIRE_BRIDGE();
  Result<Task> task = ImportedTask("scaled_relu", "forbid");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  ASSERT_TRUE(task->torch.has_value());
  EXPECT_TRUE(task->torch->forbid_torch_ops);
}

TEST(TorchBridgeImport, ProblemWithoutModelIsInvalidArgumentNamingTheFile) {
  KOPE_REQUIRE_BRIDGE();
  ASSERT_FALSE(ScratchDir().empty());
  const fs::path broken = TestData() / "broken" / "no_model.py";
  Result<Task> task =
      ImportKernelBenchProblem(*FindTorchBridge(), broken, ScratchDir() / "no_model");
  ASSERT_FALSE(task.ok());
  EXPECT_EQ(task.status().code(), StatusCode::kInvalidArgument) << task.status().ToString();
  EXPECT_NE(task.status().message().find(broken.string()), std::string::npos)
      << task.status().message();
  EXPECT_NE(task.status().message().find("Model"), std::string::npos) << task.status().message();
}

TEST(TorchBridgeImport, MissingProblemFileIsNotFound) {
  KOPE_REQUIRE_BRIDGE();
  Result<Task> task = ImportKernelBenchProblem(
      *FindTorchBridge(), TestData() / "problems" / "no_such_problem.py", ScratchDir() / "none");
  ASSERT_FALSE(task.ok());
  EXPECT_EQ(task.status().code(), StatusCode::kNotFound) << task.status().ToString();
}

// --- the cases --------------------------------------------------------------------------------

}  // namespace
}  // namespace kope
