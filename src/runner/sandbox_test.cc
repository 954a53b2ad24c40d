#include "kope/runner/sandbox.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "bubblewrap.h"
#include "kope/base/subprocess.h"
#include "runner_test_support.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

using sandbox_internal::BubblewrapArgv;
using sandbox_internal::PlanRlimits;
using sandbox_internal::ScratchLayout;

bool Has(const std::vector<std::string>& args, std::initializer_list<std::string_view> seq) {
  auto it = std::search(args.begin(), args.end(), seq.begin(), seq.end(),
                        [](const std::string& a, std::string_view b) { return a == b; });
  return it != args.end();
}

TEST(ProtectionTest, DescribesLayersAndWhatIsMissing) {
  Protection full;
  full.bubblewrap = full.network_isolated = full.filesystem_read_only = true;
  full.seccomp = full.rlimits = true;
  std::string text = full.Describe();
  EXPECT_NE(text.find("bubblewrap (no network"), std::string::npos) << text;
  EXPECT_NE(text.find("read-only file system except scratch"), std::string::npos) << text;
  EXPECT_NE(text.find("+ seccomp + rlimits"), std::string::npos) << text;
  EXPECT_EQ(text.find("MISSING"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos);

  Protection weak;
  weak.rlimits = true;
  weak.notes = {"bwrap not found"};
  text = weak.Describe();
  EXPECT_NE(text.find("MISSING bubblewrap"), std::string::npos) << text;
  EXPECT_NE(text.find("network open"), std::string::npos) << text;
  EXPECT_NE(text.find("seccomp"), std::string::npos) << text;
  EXPECT_NE(text.find("[bwrap not found]"), std::string::npos) << text;
}

TEST(RlimitPlanTest, SaysWhichLimitsCannotApply) {
  SandboxLimits limits;
  auto plan = PlanRlimits(limits, /*is_root=*/true, /*own_user_namespace=*/false);
  EXPECT_FALSE(plan.processes);
  EXPECT_EQ(plan.address_space, !sandbox_internal::kAddressSanitizer);
  plan = PlanRlimits(limits, false, true);
  EXPECT_TRUE(plan.processes);
  plan = PlanRlimits(limits, false, false);
  EXPECT_FALSE(plan.processes);
  limits.max_address_space_bytes = 0;
  plan = PlanRlimits(limits, false, true);
  EXPECT_FALSE(plan.address_space);
  EXPECT_FALSE(plan.notes.empty());
}

TEST(BubblewrapArgvTest, IsolatesAndBindsWhatItShould) {
  SandboxOptions options;
  options.read_only = {"/opt/kope/kope-runner"};
  options.devices = {"/dev/nvidia0"};
  options.limits.writable_bytes = 1234;
  auto args = BubblewrapArgv("/usr/bin/bwrap", options, "/scratch/x", ScratchLayout::kRunnerWork,
                             {"/opt/kope/kope-runner", "--serve"});
  EXPECT_EQ(args.front(), "/usr/bin/bwrap");
  for (const char* flag : {"--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                           "--die-with-parent", "--new-session"}) {
    EXPECT_TRUE(Has(args, {flag})) << flag;
  }
  EXPECT_TRUE(Has(args, {"--cap-drop", "ALL"}));
  EXPECT_TRUE(Has(args, {"--ro-bind", "/usr", "/usr"}));
  EXPECT_TRUE(Has(args, {"--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"}));
  EXPECT_TRUE(Has(args, {"--dev-bind", "/dev/nvidia0", "/dev/nvidia0"}));
  EXPECT_TRUE(Has(args, {"--size", "1234", "--tmpfs", "/tmp"}));
  EXPECT_TRUE(Has(args, {"--ro-bind", "/scratch/x", "/scratch/x", "--size", "1234", "--tmpfs",
                         "/scratch/x/work", "--chdir", "/scratch/x/work"}));
  EXPECT_TRUE(Has(args, {"--ro-bind", "/opt/kope/kope-runner", "/opt/kope/kope-runner"}));
  EXPECT_TRUE(Has(args, {"--remount-ro", "/", "--", "/opt/kope/kope-runner", "--serve"}));
  EXPECT_FALSE(Has(args, {"--bind", "/", "/"}));
  EXPECT_FALSE(Has(args, {"--ro-bind", "/etc", "/etc"}));
  EXPECT_FALSE(Has(args, {"--ro-bind", "/home", "/home"}));

  options.limits.allow_network = true;
  args = BubblewrapArgv("bwrap", options, "/s", ScratchLayout::kReadWrite, {"cc"});
  EXPECT_FALSE(Has(args, {"--unshare-net"}));
  EXPECT_TRUE(Has(args, {"--bind", "/s", "/s", "--chdir", "/s"}));
}

TEST(BubblewrapCommandTest, RunsAToolWithOnlyScratchWritable) {
  if (!BubblewrapAvailable()) GTEST_SKIP() << "bubblewrap does not work here";
  const auto dir = testing::MakeTempDir("kope-sandbox-test");
  const auto scratch = dir / "scratch";
  std::filesystem::create_directory(scratch);
  std::ofstream(dir / "secret") << "s";
  SandboxOptions options;
  options.scratch_dir = scratch;
  auto command =
      BubblewrapCommand(options, {"sh", "-c",
                                  "echo made > out.txt; cat " + (dir / "secret").string() +
                                      " || echo secret-hidden; ls " + kope::testing::SourceDir() +
                                      " || echo source-hidden; "
                                      "touch /usr/x || echo usr-read-only"});
  ASSERT_TRUE(command.ok()) << command.status().ToString();
  auto r = RunProcess(*command);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok()) << r->output;
  EXPECT_NE(r->output.find("secret-hidden"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("source-hidden"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("usr-read-only"), std::string::npos) << r->output;
  std::ifstream made(scratch / "out.txt");
  std::string line;
  EXPECT_TRUE(std::getline(made, line));
  EXPECT_EQ(line, "made");
  std::filesystem::remove_all(dir);

  options.use_bubblewrap = false;
  EXPECT_EQ(BubblewrapCommand(options, {"true"}).status().code(), StatusCode::kFailedPrecondition);
}

TEST(ProbeProtectionTest, PredictsTheLayers) {
  SandboxOptions options;
  options.use_bubblewrap = false;
  Protection p = ProbeProtection(options);
  EXPECT_FALSE(p.bubblewrap);
  EXPECT_FALSE(p.filesystem_read_only);
  EXPECT_TRUE(p.rlimits);
  EXPECT_EQ(p.network_isolated, p.seccomp);
  EXPECT_NE(p.Describe().find("disabled by the caller"), std::string::npos);
  options.use_bubblewrap = true;
  p = ProbeProtection(options);
  EXPECT_EQ(p.bubblewrap, BubblewrapAvailable());
}

// kope-runner --probe as an unprivileged user: bubblewrap then needs a user
// namespace of its own, and RLIMIT_NPROC applies.
TEST(ProbeProtectionTest, UnprivilegedUserGetsTheSameLayers) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user";
  if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "setpriv is not installed";
  struct stat st;
  if (stat((kope::testing::BinaryDir() + "/kope-runner").c_str(), &st) != 0 ||
      (st.st_mode & S_IXOTH) == 0) {
    GTEST_SKIP() << "kope-runner is not executable by others";
  }
  auto r = RunProcess({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                       kope::testing::BinaryDir() + "/kope-runner", "--probe"});
  ASSERT_TRUE(r.ok());
  if (r->output.find("could not start") != std::string::npos) {
    GTEST_SKIP() << "the build folder is not reachable by nobody: " << r->output;
  }
  EXPECT_TRUE(r->ok()) << r->output;
  if (BubblewrapAvailable()) {
    EXPECT_NE(r->output.find("bubblewrap (no network"), std::string::npos) << r->output;
  }
  EXPECT_NE(r->output.find("seccomp + rlimits"), std::string::npos) << r->output;
  EXPECT_EQ(r->output.find("RLIMIT_NPROC not set"), std::string::npos) << r->output;
}

TEST(ProbeProtectionTest, RunnerProbePrintsOneLine) {
  auto r = RunProcess({kope::testing::BinaryDir() + "/kope-runner", "--probe"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok()) << r->output;
  EXPECT_NE(r->output.find("seccomp"), std::string::npos) << r->output;
  EXPECT_EQ(std::count(r->output.begin(), r->output.end(), '\n'), 1) << r->output;
  r = RunProcess({kope::testing::BinaryDir() + "/kope-runner", "--probe", "--no-bubblewrap"});
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->output.find("MISSING bubblewrap"), std::string::npos) << r->output;
}

}  // namespace
}  // namespace kope
