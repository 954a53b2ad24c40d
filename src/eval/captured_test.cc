// Inputs captured where a kernel runs (task/captured.h): the safetensors reader, the trials a
// file makes at a size set, and verification on them with the CPU backend: a kernel right on
// every random draw but wrong on the captured inputs is incorrect there, and a right one is
// verified on them.
#include "kope/task/captured.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "backend/cpu/testing/cpu_test_backend.h"
#include "kope/base/file.h"
#include "kope/base/temp_folder.h"
#include "kope/eval/evaluator.h"
#include "task/testing/safetensors_writer.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

using testing::FloatBytes;
using testing::SafetensorsBytes;
using testing::WriteBytes;

TEST(ReadSafetensors, ReadsTensorsAndRefusesMalformedFiles) {
  TempFolder dir = TempFolder::Create("", "kope-captured").value();
  const fs::path file = dir.path() / "a.safetensors";
  WriteBytes(file,
             SafetensorsBytes({{"entry0.decode.x", "F32", {2, 3}, FloatBytes({1, 2, 3, 4, 5, 6})},
                               {"entry0.decode.i", "I64", {1}, std::string(8, '\1')}}));
  auto read = ReadSafetensors(file);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), 2u);
  const CapturedTensor& x = (*read)[0].name == "entry0.decode.x" ? (*read)[0] : (*read)[1];
  EXPECT_EQ(x.dtype, KOPE_F32);
  EXPECT_EQ(x.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.bytes, FloatBytes({1, 2, 3, 4, 5, 6}));

  struct Bad {
    const char* what;
    std::string bytes;
    const char* message;
  };
  const testing::SafetensorsEntry ok{"x", "F32", {2}, FloatBytes({1, 2})};
  const std::vector<Bad> bad = {
      {"short", "abc", "not a safetensors file"},
      {"header cut off", SafetensorsBytes({ok}).substr(0, 20), "cut off"},
      {"unknown dtype", SafetensorsBytes({{"x", "F8_E4M3", {2}, "ab"}}), "not supported"},
      {"shape and bytes disagree", SafetensorsBytes({{"x", "F32", {3}, FloatBytes({1, 2})}}),
       "its shape needs 12"},
      {"offsets outside",
       SafetensorsBytes({ok},
                        [](nlohmann::json& h) {
                          h["x"]["data_offsets"] = {0, 800};
                        }),
       "outside the file"},
      {"no shape", SafetensorsBytes({ok}, [](nlohmann::json& h) { h["x"].erase("shape"); }),
       "needs a dtype, a shape"},
      {"negative dimension",
       SafetensorsBytes({ok}, [](nlohmann::json& h) { h["x"]["shape"] = {-2}; }), "no size"},
  };
  for (const Bad& b : bad) {
    WriteBytes(file, b.bytes);
    auto r = ReadSafetensors(file);
    ASSERT_FALSE(r.ok()) << b.what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << b.what;
    EXPECT_NE(r.status().message().find(b.message), std::string::npos)
        << b.what << ": " << r.status().message();
  }
}

Task RowSum() {
  auto task = LoadTask(fs::path(kope::testing::SourceDir()) / "examples/row_sum");
  EXPECT_TRUE(task.ok()) << task.status().ToString();
  return *task;
}

TEST(CapturedTrials, AreThePrefixesWhoseTensorsFitTheSet) {
  const Task task = RowSum();  // x: f32 [rows, cols]
  const SizeSet set{"check[2]", {{"rows", 7}, {"cols", 33}}};
  const std::string fits = FloatBytes(std::vector<float>(7 * 33, 1.0f));
  std::vector<CapturedTensor> tensors = {
      {"entry0.decode.x", KOPE_F32, {7, 33}, fits},
      {"entry1.decode.x",
       KOPE_F32,
       {7, 34},
       FloatBytes(std::vector<float>(7 * 34))},                                // other shape
      {"entry2.decode.x", KOPE_BF16, {7, 33}, std::string(7 * 33 * 2, '\0')},  // other dtype
      {"entry3.decode.y", KOPE_F32, {7, 33}, fits},                            // not an input
  };
  const std::vector<CapturedTrial> trials = CapturedTrials(task, set, tensors);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0].label, "entry0.decode");
  ASSERT_EQ(trials[0].inputs.size(), 1u);
  EXPECT_EQ(trials[0].inputs[0], &tensors[0]);
}

// Row sums, right unless a row holds the value 1000.25 (which no random draw of row_sum's
// laws gives): then its sum is left out.
constexpr const char* kWrongOnTheCaptured = R"(
#include <cstdint>
#include "kope/kernel.h"
extern "C" int kope_kernel(const kope_tensor* in, int, kope_tensor* out, int, void*) {
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    bool marked = false;
    for (int64_t c = 0; c < cols; ++c) {
      s += x[r * cols + c];
      marked |= x[r * cols + c] == 1000.25f;
    }
    y[r] = marked ? 0.0f : static_cast<float>(s);
  }
  return 0;
}
)";

TEST(CapturedVerification, AKernelWrongOnlyOnTheCapturedInputsIsIncorrect) {
  Backend* backend = SharedCpuTestBackend();
  ASSERT_NE(backend, nullptr);
  TempFolder dir = TempFolder::Create("", "kope-captured").value();
  const fs::path folder = dir.path() / "row_sum";
  fs::copy(fs::path(kope::testing::SourceDir()) / "examples/row_sum", folder,
           fs::copy_options::recursive);
  std::vector<float> x(7 * 33, 0.5f);
  x[40] = 1000.25f;
  WriteBytes(folder / "activations.safetensors",
             SafetensorsBytes({{"entry0.decode.x", "F32", {7, 33}, FloatBytes(x)}}));
  testing::NameCapturedInputs(folder, "activations.safetensors");
  auto task = LoadTask(folder);
  ASSERT_TRUE(task.ok()) << task.status().ToString();

  EvalOptions options;
  options.runner_exe = TestRunnerExecutable();
  options.trials = 2;
  options.timing.min_seconds = 0.01;
  options.timing.max_seconds = 0.1;
  Evaluator evaluator(*backend, options);
  auto wrong = evaluator.Evaluate(*task, kWrongOnTheCaptured, "wrong_on_captured.cc");
  ASSERT_TRUE(wrong.ok()) << wrong.status().ToString();
  EXPECT_EQ(wrong->verdict, Verdict::kIncorrect) << FormatOutcome(*wrong);
  ASSERT_TRUE(wrong->mismatch.has_value()) << FormatOutcome(*wrong);
  EXPECT_EQ(wrong->mismatch->reason, "captured_inputs");
  EXPECT_EQ(wrong->mismatch->size_set, "check[2]");
  EXPECT_NE(wrong->message.find("captured inputs entry0.decode"), std::string::npos)
      << wrong->message;

  // The same task without its captured inputs cannot tell.
  auto plain = LoadTask(fs::path(kope::testing::SourceDir()) / "examples/row_sum");
  ASSERT_TRUE(plain.ok());
  auto unseen = evaluator.Evaluate(*plain, kWrongOnTheCaptured, "wrong_on_captured.cc");
  ASSERT_TRUE(unseen.ok()) << unseen.status().ToString();
  EXPECT_EQ(unseen->verdict, Verdict::kValid) << FormatOutcome(*unseen);

  auto right =
      evaluator.Evaluate(*task, ReadFileText(folder / "baseline.cc").value_or(""), "baseline.cc");
  ASSERT_TRUE(right.ok()) << right.status().ToString();
  EXPECT_EQ(right->verdict, Verdict::kValid) << FormatOutcome(*right);
  EXPECT_EQ(right->captured_inputs_checked, std::vector<std::string>{"check[2] entry0.decode"});
  EXPECT_NE(FormatOutcome(*right).find("captured inputs: verified on check[2] entry0.decode"),
            std::string::npos);
}

}  // namespace
}  // namespace kope
