// The prompt for ModelNew candidates (triton, torch) of a PyTorch task: the format, the problem's
// source, the ask; and the refusals where it does not apply.
#include <gtest/gtest.h>

#include <fstream>

#include "kope/context/context_builder.h"
#include "kope/llm/proposal.h"
#include "test_graph.h"
#include "testing/test_paths.h"

namespace kope::context {
namespace {

using memory::NodeId;
using testing::GraphBuilder;
using testing::TempDir;
using testing::Valid;
using testing::ValueOrDie;

constexpr char kProblem[] = R"(import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * self.scale


batch_size = 64
dim = 1000
scale = 1.5


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [scale]
)";

constexpr char kTaskToml[] = R"(name = "scaled_relu"
family = "elementwise"
description = "relu(x) * scale"

[[inputs]]
name = "x"
dtype = "f32"
shape = ["batch_size", "dim"]

[[outputs]]
name = "output"
dtype = "f32"
shape = ["batch_size", "dim"]

[sizes]
bench = { batch_size = 64, dim = 1000 }
check = [ { batch_size = 1, dim = 17 } ]

[baseline]
torch = "problem.py"

[torch]
globals = ["batch_size", "dim"]
parameters = []
ops = "allow"
)";

constexpr char kModelNewSource[] = R"(import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.clamp_min(x * self.scale, 0)
)";

// What the system prompt shows of a ModelNew's shape, word for word.
constexpr char kFormatSection[] = R"(A ModelNew has this shape:
```python
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, *init_args):  # Model's constructor arguments
        super().__init__()
        ...  # the same parameters as Model, in the same order

    def forward(self, *args):  # Model.forward's arguments
        ...  # the same outputs as Model.forward
```
)";

class ModelNewPromptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream(dir_ / "task.toml") << kTaskToml;
    std::ofstream(dir_ / "problem.py") << kProblem;
    Result<Task> task = LoadTask(dir_.path());
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    task_ = *task;
    store_ = testing::OpenStore(dir_ / "store.db");
    KOPE_ASSERT_OK(store_->Write([&](memory::GraphWriter& w) -> Status {
      GraphBuilder b(w);
      KOPE_ASSIGN_OR_RETURN(NodeId hw, b.Hardware("cpu", "Test CPU", "x86_64"));
      KOPE_ASSIGN_OR_RETURN(task_id_, b.Task("scaled_relu", "elementwise", 64000));
      KOPE_ASSIGN_OR_RETURN(NodeId run, b.Run(task_id_, hw));
      KOPE_ASSIGN_OR_RETURN(native_, b.Attempt(Valid(run, 0, "one loop over the rows", 1.1)));
      KOPE_ASSIGN_OR_RETURN(
          model_new_, b.Attempt(Valid(run, 0, "clamp_min of the product", 1.3, kModelNewSource)));
      return Status::Ok();
    }));
  }

  ContextRequest Request(const std::string& language, NodeId node = 0) {
    ContextRequest r;
    r.task = &task_;
    r.task_id = task_id_;
    r.node = node;
    r.hardware.backend = "cpu";
    r.hardware.device = "Test CPU";
    r.hardware.architecture = "x86_64";
    r.budget_tokens = 8000;
    r.language = language;
    return r;
  }

  BuiltContext Build(const ContextRequest& request) {
    return ValueOrDie(BuildContext(*store_, request));
  }

  TempDir dir_;
  Task task_;
  std::unique_ptr<memory::GraphStore> store_;
  NodeId task_id_ = 0;
  NodeId native_ = 0;
  NodeId model_new_ = 0;
};

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(ModelNewPromptTest, TritonFreshStartShowsTheFormatAndTheProblem) {
  BuiltContext c = Build(Request("triton"));
  EXPECT_TRUE(Has(c.system_prompt, kFormatSection)) << c.system_prompt;
  EXPECT_TRUE(Has(c.system_prompt,
                  "class ModelNew(nn.Module), whose constructor takes the same "
                  "arguments as the problem's Model"));
  EXPECT_TRUE(Has(c.system_prompt, "Triton kernels (@triton.jit"));
  EXPECT_TRUE(Has(c.system_prompt, "in host memory"));
  EXPECT_TRUE(Has(c.system_prompt,
                  std::string(llm::ReplyFormatInstructions(llm::SourceFormat::kModelNew))));
  EXPECT_TRUE(Has(c.system_prompt, "TAGS that kope recognizes:"));
  EXPECT_FALSE(Has(c.system_prompt, "kope_kernel")) << "no native ABI for a ModelNew";
  EXPECT_TRUE(Has(c.user_prompt,
                  "# The problem (PyTorch): its Model is the reference and the baseline\n"
                  "```python\n" +
                      std::string(kProblem) + "```\n"))
      << c.user_prompt;
  EXPECT_TRUE(Has(c.user_prompt, "Tensors (forward's arguments, then Model's parameters)"));
  EXPECT_TRUE(Has(c.user_prompt, "# No ModelNew yet: write the first one"));
  EXPECT_TRUE(Has(c.user_prompt,
                  "Write a first ModelNew for this problem (a ModelNew whose "
                  "kernels are Triton)"));
  // The problem is shown once: not again as a baseline kernel to change.
  EXPECT_EQ(c.user_prompt.find("class Model("), c.user_prompt.rfind("class Model("));
  EXPECT_LE(c.total_tokens, 8000);
}

TEST_F(ModelNewPromptTest, TorchAsksForPyTorchOperations) {
  BuiltContext c = Build(Request("torch"));
  EXPECT_TRUE(Has(c.system_prompt, kFormatSection));
  EXPECT_TRUE(Has(c.system_prompt, "Write forward with PyTorch operations"));
  EXPECT_FALSE(Has(c.system_prompt, "Triton kernels (@triton.jit"));
  EXPECT_TRUE(Has(c.user_prompt, "(a ModelNew in PyTorch)"));
}

TEST_F(ModelNewPromptTest, AModelNewNodeIsShownAsPythonAndChanged) {
  BuiltContext c = Build(Request("triton", model_new_));
  EXPECT_TRUE(Has(c.user_prompt, "```python\n" + std::string(kModelNewSource) + "```\n"))
      << c.user_prompt;
  EXPECT_TRUE(Has(c.user_prompt, "Propose one change to attempt a" + std::to_string(model_new_)));
}

TEST_F(ModelNewPromptTest, ANativeNodeIsRewrittenInTheLanguageAsked) {
  BuiltContext triton = Build(Request("triton", native_));
  EXPECT_TRUE(Has(triton.user_prompt, "Rewrite attempt a" + std::to_string(native_) +
                                          " as a ModelNew whose kernels are Triton"));
  EXPECT_TRUE(Has(triton.user_prompt, "```cpp\n"));
  // And back: a native proposal from a ModelNew.
  BuiltContext native = Build(Request("", model_new_));
  EXPECT_TRUE(Has(native.system_prompt, "kope_kernel"));
  EXPECT_TRUE(Has(native.user_prompt, "Rewrite attempt a" + std::to_string(model_new_) +
                                          " as a native kernel (kope_kernel, cpp)"));
  EXPECT_TRUE(Has(native.user_prompt, "```python\n"));
}

TEST_F(ModelNewPromptTest, ANativePromptShowsTheProblemAsPython) {
  BuiltContext c = Build(Request("cpp"));
  EXPECT_TRUE(Has(c.user_prompt, "# The kernel to change: the task's baseline"));
  EXPECT_TRUE(Has(c.user_prompt, "```python\nimport torch\n"));
  EXPECT_FALSE(Has(c.user_prompt, "# The problem (PyTorch)"));
}

TEST_F(ModelNewPromptTest, RefusesWhatDoesNotFit) {
  Result<Task> native =
      LoadTask(std::filesystem::path(kope::testing::SourceDir()) / "examples/softmax_rows");
  ASSERT_TRUE(native.ok()) << native.status().ToString();
  ContextRequest request = Request("triton");
  request.task = &*native;
  request.task_id = 0;
  Result<BuiltContext> no_problem = BuildContext(*store_, request);
  ASSERT_FALSE(no_problem.ok());
  EXPECT_EQ(no_problem.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Has(no_problem.status().message(), "PyTorch baseline"));
  Result<BuiltContext> unknown = BuildContext(*store_, Request("rust"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  Result<BuiltContext> other = BuildContext(*store_, Request("cuda"));
  EXPECT_FALSE(other.ok()) << "cuda candidates on a cpu context";
}

}  // namespace
}  // namespace kope::context
