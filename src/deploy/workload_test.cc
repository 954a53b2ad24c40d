// Workload validation as data: bad files with the error each must give, good files
// (testdata/workloads/*.toml) with the workload.json each must give.
#include "kope/deploy/workload.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "kope/base/file.h"
#include "testing/test_paths.h"

namespace kope::deploy {
namespace {

namespace fs = std::filesystem;

fs::path DataDir() {
  return fs::path(kope::testing::SourceDir()) / "src/deploy/testdata/workloads";
}

// A valid file's parts, to build bad ones from.
constexpr const char* kModel = "[model]\narchitecture = \"LlamaForCausalLM\"\n";
constexpr const char* kRequest = "[[requests]]\nbatch = 1\nprompt = 8\ndecode = 2\n";

struct BadCase {
  std::string text;
  std::string error;  // after "<file>: "
};

std::string WithModel(const std::string& rest) { return std::string(kModel) + rest; }
std::string Valid(const std::string& extra) { return WithModel(std::string(kRequest) + extra); }

const BadCase kBadCases[] = {
    {"name = \"x\"\n", "model: missing (a [model] table is required)"},
    {WithModel(""), "requests: missing (at least one [[requests]] entry)"},
    {"[model]\n" + std::string(kRequest),
     "model: give exactly one of architecture, checkpoint, script"},
    {"[model]\narchitecture = \"A\"\nscript = \"infer.py\"\n" + std::string(kRequest),
     "model: give exactly one of architecture, checkpoint, script"},
    {"[model]\ncheckpoint = \"ckpt\"\nscript = \"infer.py\"\n" + std::string(kRequest),
     "model: give exactly one of architecture, checkpoint, script"},
    {"[model]\narchitecture = \"\"\n" + std::string(kRequest),
     "model.architecture: must be a non-empty string (got \"\")"},
    {"[model]\narchitecture = 3\n" + std::string(kRequest),
     "model.architecture: must be a non-empty string (got 3)"},
    {"[model]\nscript = \"infer.py\"\n[model.config]\nhidden_size = 64\n" + std::string(kRequest),
     "model.config: only with model.architecture (a checkpoint or script has its own)"},
    {"[model]\narchitecture = \"A\"\nconfig = 3\n" + std::string(kRequest),
     "model.config: must be a table (got 3)"},
    {"[model]\narchitecture = \"A\"\n[model.config]\nwhen = 1979-05-27\n" + std::string(kRequest),
     "model.config.when: dates and times are not allowed"},
    {"[model]\narchitecture = \"A\"\nseed = -1\n" + std::string(kRequest),
     "model.seed: must be a non-negative integer (got -1)"},
    {"[model]\ncheckpoint = \"ckpt\"\nseed = 1\n" + std::string(kRequest),
     "model.seed: not with model.checkpoint (its weights are given)"},
    {"[model]\ncheckpoint = \"missing\"\n" + std::string(kRequest),
     "model.checkpoint: 'missing' does not exist"},
    {"[model]\ncheckpoint = \"infer.py\"\n" + std::string(kRequest),
     "model.checkpoint: 'infer.py' is not a folder"},
    {"[model]\ncheckpoint = \".\"\n" + std::string(kRequest),
     "model.checkpoint: '<dir>' has no config.json (expected a Hugging Face checkpoint folder)"},
    {"[model]\nscript = \"ckpt\"\n" + std::string(kRequest),
     "model.script: 'ckpt' is not a regular file"},
    {"[model]\narchitecture = \"A\"\nweights = \"w\"\n" + std::string(kRequest),
     "model.weights: unknown key (expected one of: architecture, seed, config, checkpoint, "
     "script)"},
    {Valid("colour = 1\n"),
     "requests[0].colour: unknown key (expected one of: batch, prompt, decode, weight)"},
    {Valid("[server]\nport = 1\n"),
     "server: unknown key (expected one of: name, model, run, requests, accuracy, extract)"},
    {Valid("[run]\ndtype = \"bf17\"\n"), "run.dtype: unknown value \"bf17\" (bf16, fp16, fp32)"},
    {Valid("[run]\ndevice = \"tpu\"\n"), "run.device: unknown value \"tpu\" (cuda, cpu)"},
    {Valid("[run]\nattention = \"flash\"\n"),
     "run.attention: unknown value \"flash\" (eager, sdpa)"},
    {Valid("[run]\nmode = \"compile\"\n"),
     "run.mode: unknown value \"compile\" (generate, static-compile, cuda-graphs)"},
    {Valid("[run]\ndtype = 16\n"), "run.dtype: must be a string, one of bf16, fp16, fp32 (got 16)"},
    {Valid("[run]\nthreads = 4\n"),
     "run.threads: unknown key (expected one of: dtype, device, attention, mode)"},
    {Valid("[[requests]]\nbatch = 0\nprompt = 8\ndecode = 2\n"),
     "requests[1].batch: must be a positive integer (got 0)"},
    {Valid("[[requests]]\nbatch = 1\nprompt = 8.5\ndecode = 2\n"),
     "requests[1].prompt: must be a positive integer (got 8.5)"},
    {Valid("[[requests]]\nbatch = 1\nprompt = \"8\"\ndecode = 2\n"),
     "requests[1].prompt: must be a positive integer (got \"8\")"},
    {Valid("[[requests]]\nbatch = 1\nprompt = 8\n"),
     "requests[1].decode: missing (a positive integer)"},
    {Valid("[[requests]]\nbatch = 1\nprompt = 8\ndecode = 2\nweight = 0\n"),
     "requests[1].weight: must be a positive number (got 0)"},
    {Valid("[[requests]]\nbatch = 1\nprompt = 8\ndecode = 2\nweight = -0.5\n"),
     "requests[1].weight: must be a positive number (got -0.5)"},
    {Valid("[[requests]]\nbatch = 1\nprompt = 8\ndecode = 2\nweight = nan\n"),
     "requests[1].weight: must be a positive number (got nan)"},
    {"requests = 3\n" + std::string(kModel), "requests: must be an array of tables ([[requests]])"},
    {"requests = []\n" + std::string(kModel), "requests: needs at least one entry"},
    {"requests = [1]\n" + std::string(kModel), "requests[0]: must be a table (got 1)"},
    {Valid("[accuracy]\nprompts = [\"a\"]\nrandom_prompts = 2\n"),
     "accuracy: give one of prompts, random_prompts"},
    {Valid("[accuracy]\nprompts = []\n"), "accuracy.prompts: must be a non-empty array of strings"},
    {Valid("[accuracy]\nprompts = [\"a\", 2]\n"),
     "accuracy.prompts[1]: must be a non-empty string (got 2)"},
    {Valid("[accuracy]\nrandom_prompts = 0\n"),
     "accuracy.random_prompts: must be a positive integer (got 0)"},
    {Valid("[accuracy]\nmin_token_match = 1.5\n"),
     "accuracy.min_token_match: must be a number in (0, 1] (got 1.5)"},
    {Valid("[accuracy]\nmax_logit_diff = 0\n"),
     "accuracy.max_logit_diff: must be a positive number (got 0)"},
    {Valid("[accuracy]\ntolerance = 1\n"),
     "accuracy.tolerance: unknown key (expected one of: prompts, random_prompts, "
     "min_token_match, max_logit_diff)"},
    {Valid("[extract]\ntop = 0\n"), "extract.top: must be a positive integer (got 0)"},
    {Valid("[extract]\nmax = 3\n"), "extract.max: unknown key (expected one of: top)"},
    {"name = \"a b\"\n" + Valid(""), "name: \"a b\" must be letters, digits, '-', '_' or '.'"},
    {"name = 1\n" + Valid(""), "name: must be a non-empty string (got 1)"},
    {Valid("[run\n"),
     "line 7, column 5: TOML syntax error: Error while parsing table header: "
     "expected ']', saw '\\n'"},
};

class BadWorkloadTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadWorkloadTest, GivesItsError) {
  const fs::path file = DataDir() / "workload.toml";
  Result<Workload> w = ParseWorkload(GetParam().text, file);
  ASSERT_FALSE(w.ok()) << GetParam().text;
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  std::string expected = GetParam().error;
  if (size_t at = expected.find("<dir>"); at != std::string::npos) {
    expected.replace(at, 5, DataDir().string());
  }
  EXPECT_EQ(w.status().message(), file.string() + ": " + expected) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(Table, BadWorkloadTest, ::testing::ValuesIn(kBadCases));

class GoodWorkloadTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GoodWorkloadTest, GivesItsJson) {
  const fs::path dir = DataDir();
  Result<Workload> w = LoadWorkload(dir / (std::string(GetParam()) + ".toml"));
  ASSERT_TRUE(w.ok()) << w.status().message();
  Result<std::string> expected = ReadFileText(dir / (std::string(GetParam()) + ".json"));
  ASSERT_TRUE(expected.ok());
  std::string want = *expected;
  for (size_t at = want.find("<dir>"); at != std::string::npos; at = want.find("<dir>")) {
    want.replace(at, 5, dir.string());
  }
  EXPECT_EQ(WorkloadToJson(*w), want);
}

INSTANTIATE_TEST_SUITE_P(Files, GoodWorkloadTest,
                         ::testing::Values("tiny_llama", "checkpoint_defaults", "script"));

TEST(WorkloadTest, MissingFileIsNotFound) {
  Result<Workload> w = LoadWorkload(DataDir() / "absent.toml");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
  EXPECT_NE(w.status().message().find("absent.toml: no such workload file"), std::string::npos);
}

TEST(WorkloadTest, WeightsDefaultToEqualShares) {
  Result<Workload> w = ParseWorkload(Valid(kRequest), DataDir() / "w.toml");
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->requests.size(), 2u);
  EXPECT_EQ(w->requests[0].weight, 0.5);
  EXPECT_EQ(w->requests[1].weight, 0.5);
  EXPECT_EQ(w->name, "w");
}

}  // namespace
}  // namespace kope::deploy
