// Adversarial kernels: each tries one way out of the sandbox, and each test
// checks from the parent's side that it stayed in.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "kope/runner/runner.h"
#include "runner_test_support.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

using testing::CompileKernel;
using testing::LivingDescendants;
using testing::ProcessGone;
using testing::RunnerFixture;
using testing::Slot;
using testing::WaitUntilGone;
using Kind = CallOutcome::Kind;

class ContainmentTest : public RunnerFixture {
 protected:
  // Runs a kernel whose only tensor is an i64 output of `n` results at offset 0
  // (plus an optional i64 input at 4096), and returns the results.
  std::vector<int64_t> RunProbe(const std::filesystem::path& kernel, size_t n,
                                RunnerOptions options, std::vector<int64_t> input = {},
                                pid_t* runner_pid = nullptr) {
    auto arena = Arena(8192);
    auto runner = Prepared(kernel, *arena, options);
    if (runner == nullptr) return {};
    if (runner_pid != nullptr) *runner_pid = runner->pid();
    CallSpec call;
    call.outputs = {Slot(KOPE_I64, {static_cast<int64_t>(n)}, 0)};
    if (!input.empty()) {
      std::memcpy(arena->data() + 4096, input.data(), input.size() * sizeof(int64_t));
      call.inputs = {Slot(KOPE_I64, {static_cast<int64_t>(input.size())}, 4096)};
    }
    auto out = runner->Call(call, 120);
    EXPECT_TRUE(out.ok() && out->ok()) << (out.ok() ? out->detail : out.status().ToString());
    if (runner_pid != nullptr) {
      // Nothing the kernel started may still be alive beside the runner.
      EXPECT_TRUE(LivingDescendants(*runner_pid).empty());
    }
    const int64_t* r = reinterpret_cast<const int64_t*>(arena->data());
    return std::vector<int64_t>(r, r + n);
  }
};

TEST_P(ContainmentTest, ForkBombIsContained) {
  pid_t pid = 0;
  auto r = RunProbe(CompileKernel("fork_bomb"), 8, Options(), {}, &pid);
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(r[0], 0) << "forks succeeded";
  EXPECT_EQ(r[1], EPERM);
  EXPECT_EQ(r[2], 0) << "vfork succeeded";
  EXPECT_EQ(r[3], 0) << "clone without CLONE_THREAD succeeded";
  EXPECT_NE(r[4], 0) << "posix_spawn succeeded";
  EXPECT_NE(r[5], 0) << "system() ran a shell";  // glibc reports a failed spawn as status 127
  EXPECT_EQ(r[6], 1) << "threads must keep working";
  EXPECT_EQ(r[7], ENOSYS);
  EXPECT_TRUE(WaitUntilGone(pid));
}

TEST_P(ContainmentTest, MemoryExhaustionStaysInTheRunner) {
  auto arena = Arena(4096);
  RunnerOptions options = Options();
  options.sandbox.limits.max_address_space_bytes = 1ull << 30;
  auto runner = Prepared(CompileKernel("malloc_bomb"), *arena, options);
  ASSERT_NE(runner, nullptr);
  auto out = runner->Call(CallSpec{}, 120);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // Either malloc failed (rc 3) or the runner died; never rc 0 (8 GiB allocated).
  EXPECT_TRUE((out->kind == Kind::kKernelError && out->rc == 3) || out->kind == Kind::kCrash)
      << "kind " << static_cast<int>(out->kind) << " rc " << out->rc << ": " << out->detail;
  auto fresh = Prepared(CompileKernel("return_code"), *arena);
  ASSERT_NE(fresh, nullptr);
  auto ok = fresh->Call(CallSpec{}, 30);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->rc, 7);
}

TEST_P(ContainmentTest, DiskFillingStopsAtTheLimits) {
  // Beside kope-runner, which the sandbox shows (read-only) at the same path.
  const std::filesystem::path outside =
      kope::testing::BinaryDir() + "/kope-sandbox-outside-" + std::to_string(getpid());
  RunnerOptions options = Options();
  const auto kernels = std::filesystem::canonical(options.sandbox.scratch_dir) / "kernels";
  options.sandbox.limits.max_file_bytes = 4 << 20;
  options.sandbox.limits.writable_bytes = 16 << 20;
  const auto kernel = CompileKernel("disk_fill", {"OUTSIDE_PATH=\"" + outside.string() + "\"",
                                                  "KERNELS_DIR=\"" + kernels.string() + "\""});
  // Without bubblewrap the working folder is on the real disk: three files only.
  const int64_t max_files = GetParam() ? 1000 : 3;
  auto r = RunProbe(kernel, 8, options, {max_files, GetParam() ? 1 : 0});
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(r[0], 4 << 20) << "the first file stops at RLIMIT_FSIZE";
  EXPECT_EQ(r[1], EFBIG);
  const auto work = options.sandbox.scratch_dir / "work";
  if (GetParam()) {
    // The writable tmpfs fills up; nothing reaches the disk.
    EXPECT_LE(r[2], 16 << 20);
    EXPECT_EQ(r[3], ENOSPC);
    // A build folder under /tmp lies inside the sandbox's private /tmp (a tmpfs that
    // vanishes with it), where the write succeeds without reaching the disk.
    if (outside.string().rfind("/tmp/", 0) != 0) {
      EXPECT_EQ(r[4], EROFS) << "wrote outside scratch";
    }
    EXPECT_FALSE(std::filesystem::exists(outside)) << "wrote outside scratch";
    EXPECT_EQ(r[5], EROFS);
    EXPECT_NE(r[6], 0) << "planted a file among the kernels";
    EXPECT_FALSE(std::filesystem::exists(kernels / "planted.so"));
    EXPECT_EQ(r[7], 0) << "the sandbox's own /tmp is writable";
    EXPECT_FALSE(std::filesystem::exists("/tmp/kope-sandbox-test")) << "/tmp is not private";
    EXPECT_TRUE(std::filesystem::is_empty(work));
    EXPECT_FALSE(std::filesystem::exists("/usr/kope-sandbox-test"));
  } else {
    EXPECT_EQ(r[2], 3 * (4 << 20));
    EXPECT_EQ(std::filesystem::file_size(work / "big0"), 4u << 20);
    EXPECT_EQ(std::filesystem::file_size(work / "big2"), 4u << 20);
    EXPECT_EQ(r[4], -1);
  }
}

TEST_P(ContainmentTest, NetworkIsClosed) {
  auto r = RunProbe(CompileKernel("network"), 8, Options());
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(r[0], EPERM) << "AF_INET";
  EXPECT_EQ(r[1], EPERM) << "AF_INET6";
  EXPECT_EQ(r[2], EPERM) << "AF_NETLINK";
  EXPECT_EQ(r[3], EPERM) << "AF_PACKET";
  EXPECT_EQ(r[4], 0) << "AF_UNIX must stay allowed";
  EXPECT_EQ(r[5], 0) << "socketpair(AF_UNIX) must stay allowed";
  EXPECT_EQ(r[6], -1) << "the x32 ABI got around the filter";
  EXPECT_EQ(r[7], -1) << "int 0x80 got around the filter";
}

TEST_P(ContainmentTest, SandboxWallsHold) {
  const auto secret = dir_ / "secret.txt";
  std::ofstream(secret) << "the reference outputs";
  setenv("KOPE_TEST_SECRET", "api-key", 1);
  const auto kernel = CompileKernel(
      "probe_escape", {"SECRET_PATH=\"" + secret.string() + "\"",
                       "SOURCE_FILE=\"" + kope::testing::SourceDir() + "/CMakeLists.txt\""});
  struct stat before;
  ASSERT_EQ(stat("/dev/null", &before), 0);
  auto r = RunProbe(kernel, 18, Options());
  unsetenv("KOPE_TEST_SECRET");
  ASSERT_EQ(r.size(), 18u);
  if (GetParam()) {
    EXPECT_EQ(r[0], ENOENT) << "read a file outside scratch";
    EXPECT_EQ(r[1], ENOENT) << "read the source tree";
    EXPECT_EQ(r[2], ENOENT) << "read /etc/passwd";
    EXPECT_EQ(r[15], EROFS) << "/proc/sys is writable";
  }
  EXPECT_EQ(r[3], 0) << "the parent's environment leaked";
  EXPECT_EQ(r[4], EPERM) << "signalled pid 1";
  EXPECT_EQ(r[5], EPERM) << "chmod";
  EXPECT_EQ(r[6], 4) << "descriptors other than 0, 1, 2 and the socket";
  EXPECT_EQ(r[7], 0b1111);
  EXPECT_EQ(r[8], EPERM) << "execve";
  EXPECT_EQ(r[9], EPERM) << "ptrace";
  EXPECT_EQ(r[10], EPERM) << "unshare";
  EXPECT_EQ(r[11], EPERM) << "mount";
  EXPECT_EQ(r[12], EPERM) << "disarming the death signal";
  EXPECT_EQ(r[13], EPERM) << "raising a limit";
  EXPECT_EQ(r[14], EPERM) << "io_uring";
  EXPECT_EQ(r[16], 0) << "signalling itself must work";
  EXPECT_EQ(r[17], 1) << "stdin is not /dev/null";
  struct stat after;
  ASSERT_EQ(stat("/dev/null", &after), 0);
  EXPECT_EQ(before.st_mode, after.st_mode);
}

// The parent is killed while the runner is busy in a kernel that never
// returns, so that only the death signal (not the closed socket) can end it.
TEST_P(ContainmentTest, RunnerDiesWithItsParent) {
  const auto kernel = CompileKernel("infinite_loop");
  ASSERT_FALSE(kernel.empty());
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  const auto scratch = dir_ / "parent-scratch";
  std::filesystem::create_directory(scratch);
  SpawnOptions spawn;
  spawn.env = {"PATH=/usr/bin:/bin"};
  spawn.fds = {{1, out[1]}};
  auto parent = SpawnProcess({kope::testing::BinaryDir() + "/src/runner/kope_runner_test_parent",
                              kope::testing::BinaryDir() + "/kope-runner", scratch.string(),
                              GetParam() ? "1" : "0", kernel.string()},
                             spawn);
  close(out[1]);
  ASSERT_TRUE(parent.ok()) << parent.status().ToString();
  std::string line;
  char c;
  while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
  close(out[0]);
  ASSERT_FALSE(line.empty());
  ASSERT_NE(line.rfind("error", 0), 0u) << line;
  const pid_t runner = std::stoi(line);
  ASSERT_GT(runner, 0);
  // Wait until the kernel spins (the runner is running, not waiting for a request).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (testing::ProcessState(runner) != 'R' && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(testing::ProcessState(runner), 'R');
  std::vector<pid_t> family = LivingDescendants(*parent);
  EXPECT_FALSE(family.empty());

  kill(*parent, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(*parent, &status, 0), *parent);
  EXPECT_TRUE(WaitUntilGone(runner)) << "the runner outlived its parent";
  for (pid_t pid : family) EXPECT_TRUE(WaitUntilGone(pid)) << pid << " outlived the parent";
}

INSTANTIATE_TEST_SUITE_P(Modes, ContainmentTest, ::testing::Bool(), testing::ModeName);

}  // namespace
}  // namespace kope
