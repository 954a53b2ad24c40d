// The profiler's protocol: its lines parsed, and a child that speaks it (a shell script standing
// in for the Python side) relayed: progress, the done line, errors, exit codes and the log.
#include "kope/deploy/profiler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kope/base/temp_folder.h"

namespace kope::deploy {
namespace {

using Type = ProfilerEvent::Type;

struct LineCase {
  std::string line;
  Type type;
  std::string text;  // ProgressText for progress, else the message or profile
};

const LineCase kLines[] = {
    {R"({"type": "progress", "step": "prefill", "entry": 1, "done": 3, "total": 8, "message": "x"})",
     Type::kProgress, "prefill entry 1 3/8: x"},
    {R"({"type": "progress", "step": "build", "message": "LlamaForCausalLM"})", Type::kProgress,
     "build: LlamaForCausalLM"},
    {R"({"type": "progress"})", Type::kProgress, "working"},
    {R"({"type": "done", "profile": "out/profile.json"})", Type::kDone, "out/profile.json"},
    {R"({"type": "error", "message": "CUDA asked for but absent"})", Type::kError,
     "CUDA asked for but absent"},
    {R"({"type": "error"})", Type::kError, "the profiler reported an error without a message"},
    {R"({"type": "hello"})", Type::kText, R"({"type": "hello"})"},
    {"Loading checkpoint shards", Type::kText, "Loading checkpoint shards"},
    {"[1, 2]", Type::kText, "[1, 2]"},
};

class ProfilerLineTest : public ::testing::TestWithParam<LineCase> {};

TEST_P(ProfilerLineTest, Parses) {
  ProfilerEvent e = ParseProfilerLine(GetParam().line);
  EXPECT_EQ(e.type, GetParam().type);
  switch (e.type) {
    case Type::kProgress:
      EXPECT_EQ(ProgressText(e), GetParam().text);
      break;
    case Type::kDone:
      EXPECT_EQ(e.profile, GetParam().text);
      break;
    default:
      EXPECT_EQ(e.message, GetParam().text);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ProfilerLineTest, ::testing::ValuesIn(kLines));

class RunProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<TempFolder> dir = TempFolder::Create("", "kope-deploy-test");
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    dir_ = std::move(*dir);
  }

  ProfilerResult Run(const std::string& script) {
    ProfilerCommand command;
    command.argv = {"/bin/sh", "-c", script};
    command.env = {"PATH=/usr/bin:/bin"};
    command.log = dir_.path() / "profile.log";
    Result<ProfilerResult> r =
        RunProfiler(command, [&](const ProfilerEvent& e) { progress_.push_back(ProgressText(e)); });
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : ProfilerResult{};
  }

  TempFolder dir_;
  std::vector<std::string> progress_;
};

TEST_F(RunProfilerTest, RelaysProgressAndTheProfile) {
  ProfilerResult r =
      Run("echo '{\"type\": \"progress\", \"step\": \"build\", \"message\": \"m\"}'; "
          "echo 'a warning' >&2; "
          "echo '{\"type\": \"progress\", \"step\": \"decode\", \"entry\": 0, \"done\": 2, "
          "\"total\": 4}'; "
          "printf '{\"type\": \"done\", \"profile\": \"d/profile.json\"}'");
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.profile, "d/profile.json");
  EXPECT_EQ(progress_, (std::vector<std::string>{"build: m", "decode entry 0 2/4"}));
  EXPECT_TRUE(r.log_tail.empty());
}

TEST_F(RunProfilerTest, RelaysTheErrorExitCodeAndLog) {
  ProfilerResult r =
      Run("echo 'Traceback (most recent call last):' >&2; echo 'ValueError: no build()' >&2; "
          "echo '{\"type\": \"error\", \"message\": \"infer.py has no build()\"}'; exit 2");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.error, "infer.py has no build()");
  EXPECT_EQ(r.log_tail, "Traceback (most recent call last):\nValueError: no build()");
}

TEST_F(RunProfilerTest, ExplainsAnEndWithoutAProfile) {
  ProfilerResult r = Run("echo 'plain output'; exit 3");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.error, "the profiler exited with code 3");
  EXPECT_EQ(r.log_tail, "plain output");
  r = Run("exit 0");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.error, "the profiler ended without reporting its profile");
  r = Run("kill -9 $$");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_EQ(r.error, "the profiler was killed by signal 9");
}

TEST_F(RunProfilerTest, AProgramThatDoesNotStartIsAStatus) {
  ProfilerCommand command;
  command.argv = {(dir_.path() / "absent").string()};
  command.log = dir_.path() / "profile.log";
  EXPECT_FALSE(RunProfiler(command, nullptr).ok());
}

}  // namespace
}  // namespace kope::deploy
