// `kope deploy` as a user runs it, without the Python side: usage errors for a missing or
// unknown subcommand or missing arguments, a bad workload file refused (exit 2) before anything
// is written, and a whole profile with a stand-in for the Python side (a shell script as the
// bridge's interpreter, $KOPE_PYTHON, that writes the sample profile and two task folders).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kope/base/subprocess.h"
#include "kope/base/temp_folder.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

struct UsageCase {
  std::vector<std::string> args;  // after `kope`
  std::string error;              // a line the output must contain
};

ProcessResult RunKope(const std::vector<std::string>& args,
                      const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {kope::testing::BinaryDir() + "/kope"};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions options;
  options.extra_env = env;
  Result<ProcessResult> r = RunProcess(argv, options);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ProcessResult{};
}

const UsageCase kUsageCases[] = {
    {{"deploy"}, "kope deploy: a workload or a subcommand is required (run, profile)"},
    {{"deploy", "frobnicate"},
     "kope deploy: unknown subcommand 'frobnicate' (expected: run, "
     "profile, or a workload file)"},
    {{"deploy", "w.toml"}, "--out is required"},  // the closed loop: kope deploy run w.toml
    {{"deploy", "profile"}, "workload is required"},
    {{"deploy", "profile", "w.toml"}, "--out is required"},
    {{"deploy", "profile", "w.toml", "--out", "d", "--top", "0"}, "--top: Value 0 not in range 1"},
};

class DeployUsageTest : public ::testing::TestWithParam<UsageCase> {};

TEST_P(DeployUsageTest, IsAUsageError) {
  ProcessResult r = RunKope(GetParam().args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(GetParam().error), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Table, DeployUsageTest, ::testing::ValuesIn(kUsageCases));

TEST(DeployCommandTest, ABadWorkloadIsRefusedBeforeAnythingIsWritten) {
  Result<TempFolder> dir = TempFolder::Create("", "kope-deploy-cli-test");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  const fs::path workload = dir->path() / "workload.toml";
  std::ofstream(workload) << "[model]\narchitecture = \"LlamaForCausalLM\"\n"
                             "[[requests]]\nbatch = 0\nprompt = 8\ndecode = 2\n";
  const fs::path out = dir->path() / "out";
  ProcessResult r = RunKope({"deploy", "profile", workload.string(), "--out", out.string(),
                             "--store", (dir->path() / "store.db").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("kope deploy profile: " + workload.string() +
                          ": requests[0].batch: must be a positive integer (got 0)"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(dir->path() / "store.db"));
}

// Stands in for `python3 -m kope_deploy.profile --workload W --out DIR` (and answers the bridge's
// probe, `python3 -c ...`): the sample profile, two example tasks as its task folders.
constexpr const char* kFakePython = R"sh(#!/bin/sh
[ "$1" = "-c" ] && exit 0
out=$6
if [ -n "$FAKE_FAIL" ]; then
  echo 'Traceback: ValueError: no build()' >&2
  echo '{"type": "error", "message": "infer.py has no build()"}'
  exit 2
fi
[ -f "$out/workload.json" ] || exit 9
for t in gelu:llamamlp_decode rmsnorm:llamarmsnorm; do
  mkdir -p "$out/tasks/${t#*:}" && cp -r "$SOURCE/examples/${t%%:*}/." "$out/tasks/${t#*:}/"
done
cp "$SOURCE/src/deploy/testdata/profile/profile.json" "$out/profile.json"
echo '{"type": "progress", "step": "build", "message": "fake"}'
echo "{\"type\": \"done\", \"profile\": \"$out/profile.json\"}"
)sh";

class DeployProfileCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<TempFolder> dir = TempFolder::Create("", "kope-deploy-cli-test");
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    dir_ = std::move(*dir);
    const fs::path python = dir_.path() / "venv/bin/python3";
    fs::create_directories(python.parent_path());
    std::ofstream(python) << kFakePython;
    fs::permissions(python, fs::perms::owner_all);
    env_ = {"KOPE_PYTHON=" + python.string(), "SOURCE=" + kope::testing::SourceDir()};
    fs::copy(fs::path(kope::testing::SourceDir()) / "src/deploy/testdata/workloads/tiny_llama.toml",
             dir_.path() / "tiny_llama.toml");
  }

  ProcessResult Profile(std::vector<std::string> env = {}) {
    env.insert(env.end(), env_.begin(), env_.end());
    return RunKope({"deploy", "profile", (dir_.path() / "tiny_llama.toml").string(), "--out",
                    (dir_.path() / "out").string(), "--store", store().string()},
                   env);
  }
  fs::path store() const { return dir_.path() / "store.db"; }

  TempFolder dir_;
  std::vector<std::string> env_;
};

TEST_F(DeployProfileCommand, PrintsTheSummaryAndRecordsOnce) {
  ProcessResult r = Profile();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("profile of tiny-llama on cpu: 4 phases"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("recorded 2 tasks from workload w1 in " + store().string()),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("build: fake"), std::string::npos) << "progress only on a terminal";
  EXPECT_TRUE(fs::is_regular_file(dir_.path() / "out/workload.json"));
  r = Profile();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("recorded 2 tasks from workload w1"), std::string::npos) << r.output;
  auto opened = memory::OpenSqliteStore(store());
  ASSERT_TRUE(opened.ok());
  memory::StoreStats stats = *(*opened)->Stats();
  EXPECT_EQ(stats.workloads, 1);
  EXPECT_EQ(stats.tasks, 2);
  EXPECT_EQ(stats.from_workload_edges, 2);
}

TEST_F(DeployProfileCommand, RelaysTheProfilersErrorAndExitCode) {
  ProcessResult r = Profile({"FAKE_FAIL=1"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("kope deploy profile: infer.py has no build()"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("  | Traceback: ValueError: no build()"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(store()));
}

TEST_F(DeployProfileCommand, SaysWhenTheBridgeIsNotSetUp) {
  ProcessResult r = Profile({"KOPE_PYTHON=" + (dir_.path() / "absent/bin/python3").string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("the Python side of kope deploy is not set up"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace kope
