// `kope eval` as a user runs it: exit codes and messages for good and bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "kope/base/subprocess.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

// A kernel that copies its input: wrong for every task here.
constexpr char kCopyKernel[] = R"(#include "kope/kernel.h"
extern "C" int kope_kernel(const kope_tensor* in, int, kope_tensor* out, int, void*) {
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  int64_t n = in[0].shape[0] * in[0].shape[1];
  for (int64_t i = 0; i < n; ++i) y[i] = x[i];
  return 0;
})";

class EvalCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kope-cli-test-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessResult Kope(std::vector<std::string> args) {
    args.insert(args.begin(), (fs::path(kope::testing::BinaryDir()) / "kope").string());
    ProcessOptions options;
    options.timeout_seconds = 120;
    options.extra_env = {"KOPE_CACHE_DIR=" +
                         (fs::path(kope::testing::BinaryDir()) / "test-cache").string()};
    auto r = RunProcess(args, options);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ProcessResult{};
  }
  std::string Example(const std::string& name) {
    return (fs::path(kope::testing::SourceDir()) / "examples" / name).string();
  }
  fs::path dir_;
};

TEST_F(EvalCommand, ValidCandidateExitsZeroWithSummary) {
  ProcessResult r =
      Kope({"eval", Example("softmax_rows"), Example("softmax_rows") + "/optimized.cc"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("valid"), std::string::npos);
  EXPECT_NE(r.output.find("speedup"), std::string::npos);
}

TEST_F(EvalCommand, JsonRecordHasTheVerdictAndTimes) {
  ProcessResult r =
      Kope({"eval", "--json", "-q", Example("gelu"), Example("gelu") + "/optimized.cc"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"verdict\": \"valid\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"candidate_time\""), std::string::npos);
  EXPECT_NE(r.output.find("\"roofline_fraction\""), std::string::npos);
}

TEST_F(EvalCommand, WrongCandidateExitsOneWithEvidence) {
  fs::path wrong = dir_ / "wrong.cc";
  std::ofstream(wrong) << kCopyKernel;
  ProcessResult r = Kope({"eval", Example("gelu"), wrong.string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("incorrect"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("expected"), std::string::npos) << r.output;
}

// Several candidates in one call: each evaluated in turn (one JSON record a line), the exit
// code the worst verdict's; one that cannot be read stops the call before anything runs.
TEST_F(EvalCommand, SeveralCandidatesAreEvaluatedInTurn) {
  fs::path wrong = dir_ / "copy.cc";
  std::ofstream(wrong) << kCopyKernel;
  const std::string good = Example("gelu") + "/optimized.cc";
  ProcessResult r = Kope({"eval", "--json", "-q", Example("gelu"), good, wrong.string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::vector<std::string> verdicts;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("{", 0) != 0) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    verdicts.push_back(j.value("verdict", ""));
  }
  EXPECT_EQ(verdicts, (std::vector<std::string>{"valid", "incorrect"})) << r.output;

  r = Kope({"eval", "-q", Example("gelu"), good, (dir_ / "missing.cc").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot read the candidate"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("valid"), std::string::npos)
      << "evaluated before the check: " << r.output;
}

TEST_F(EvalCommand, MalformedTaskNamesTheFieldAndExitsTwo) {
  fs::create_directories(dir_ / "bad");
  std::ofstream(dir_ / "bad" / "task.toml") << "name = \"bad\"\nfamily = \"x\"\n[[inputs]]\nname = "
                                               "\"x\"\ndtype = \"f8\"\nshape = [\"n\"]\n";
  ProcessResult r = Kope({"eval", (dir_ / "bad").string(), Example("gelu") + "/optimized.cc"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("task.toml"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dtype"), std::string::npos) << r.output;
}

TEST_F(EvalCommand, MissingCandidateFileExitsTwo) {
  ProcessResult r = Kope({"eval", Example("gelu"), (dir_ / "nope.cc").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nope.cc"), std::string::npos) << r.output;
}

TEST_F(EvalCommand, MissingTaskFolderExitsTwo) {
  ProcessResult r = Kope({"eval", (dir_ / "no-such-task").string(), "x.cc"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no-such-task"), std::string::npos) << r.output;
}

TEST_F(EvalCommand, CompileErrorShowsTheLine) {
  fs::path broken = dir_ / "broken.cc";
  std::ofstream(broken) << "#include \"kope/kernel.h\"\n\nint oops = ;\n";
  ProcessResult r = Kope({"eval", Example("gelu"), broken.string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("compile_error"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("broken.cc:3"), std::string::npos) << r.output;
}

TEST_F(EvalCommand, RecordPutsTheVerdictIntoTheStore) {
  fs::path store = dir_ / "experience.db";
  ProcessResult r = Kope({"eval", "-q", "--record", "--store", store.string(), Example("gelu"),
                          Example("gelu") + "/optimized.cc"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("recorded as attempt:1"), std::string::npos) << r.output;
  ProcessResult stats = Kope({"memory", "stats", "--store", store.string()});
  EXPECT_EQ(stats.exit_code, 0) << stats.output;
  EXPECT_NE(stats.output.find("attempts 1"), std::string::npos) << stats.output;
  EXPECT_NE(stats.output.find("outcomes 1"), std::string::npos) << stats.output;
}

TEST_F(EvalCommand, RecordToAnUnwritableStoreFailsBeforeAnyWork) {
  ProcessResult r = Kope({"eval", "-q", "--record", "--store", "/proc/kope-no-such/x.db",
                          Example("gelu"), Example("gelu") + "/optimized.cc"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("experience store"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("valid"), std::string::npos) << "evaluated before failing: " << r.output;
}

}  // namespace
}  // namespace kope
