#include "kope/runner/runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "runner_test_support.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

using testing::AffineCall;
using testing::CompileKernel;
using testing::ProcessGone;
using testing::RunnerFixture;
using testing::Slot;
using testing::WaitUntilGone;
using Kind = CallOutcome::Kind;

class RunnerTest : public RunnerFixture {};

TEST_P(RunnerTest, ComputesIntoTheArena) {
  auto arena = Arena(4096);
  ASSERT_NE(arena, nullptr);
  float* f = reinterpret_cast<float*>(arena->data());
  for (int i = 0; i < 10; ++i) f[i] = static_cast<float>(i);  // x at 0
  f[16] = 3.0f;                                               // a
  f[17] = 0.5f;                                               // b
  for (int i = 0; i < 20; ++i) f[32 + i] = -1.0f;             // y at 128, stride 2
  auto runner = Prepared(CompileKernel("affine"), *arena);
  ASSERT_NE(runner, nullptr);
  const CallSpec call = AffineCall();
  auto out = runner->Call(call, 30);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->kind, Kind::kOk) << out->detail;
  ASSERT_EQ(out->ns.size(), 1u);
  EXPECT_GE(out->ns[0], 0);
  EXPECT_GT(out->parent_seconds, 0.0);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(f[32 + 2 * i], 3.0f * static_cast<float>(i) + 0.5f) << i;
    EXPECT_EQ(f[32 + 2 * i + 1], -1.0f) << "the stride gap was written at " << i;
  }
  // New inputs, new outputs: nothing is cached on either side.
  f[16] = -2.0f;
  out = runner->Call(call, 30);
  ASSERT_TRUE(out.ok() && out->ok());
  EXPECT_EQ(f[32 + 2 * 9], -2.0f * 9 + 0.5f);
  EXPECT_TRUE(runner->alive());
}

TEST_P(RunnerTest, NonZeroReturnIsAKernelError) {
  auto arena = Arena(4096);
  auto runner = Prepared(CompileKernel("return_code"), *arena);
  ASSERT_NE(runner, nullptr);
  auto out = runner->Call(CallSpec{}, 30);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, Kind::kKernelError);
  EXPECT_EQ(out->rc, 7);
  EXPECT_TRUE(runner->alive());
  // The runner stays usable after a kernel error.
  out = runner->Call(CallSpec{}, 30);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->rc, 7);
}

TEST_P(RunnerTest, MissingSymbolIsAKernelErrorWithTheReason) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  auto out = runner->Load(CompileKernel("missing_symbol"), 30);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->kind, Kind::kKernelError);
  EXPECT_NE(out->detail.find("kope_kernel"), std::string::npos) << out->detail;
  EXPECT_TRUE(runner->alive());
}

TEST_P(RunnerTest, UnloadableObjectsAreKernelErrors) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  auto out = runner->Load(CompileKernel("undefined_reference"), 30);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, Kind::kKernelError);
  EXPECT_NE(out->detail.find("kope_function_that_does_not_exist"), std::string::npos)
      << out->detail;
  const auto garbage = dir_ / "garbage.so";
  std::ofstream(garbage) << "not an ELF file";
  out = runner->Load(garbage, 30);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, Kind::kKernelError);
  EXPECT_NE(out->detail.find("dlopen"), std::string::npos) << out->detail;
  // After failed loads, a good kernel still loads.
  out = runner->Load(CompileKernel("return_code"), 30);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->ok()) << out->detail;
}

TEST_P(RunnerTest, MissingSharedObjectIsAStatus) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  auto out = runner->Load(dir_ / "nope.so", 30);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kNotFound);
}

TEST_P(RunnerTest, SegfaultIsACrashAndAFreshRunnerWorks) {
  auto arena = Arena(4096);
  auto runner = Prepared(CompileKernel("segfault"), *arena);
  ASSERT_NE(runner, nullptr);
  const pid_t pid = runner->pid();
  auto out = runner->Call(CallSpec{}, 30);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->kind, Kind::kCrash);
  EXPECT_EQ(out->term_signal, SIGSEGV);
  EXPECT_NE(out->detail.find("SIGSEGV"), std::string::npos) << out->detail;
  EXPECT_NE(out->detail.find("kernel about to crash"), std::string::npos) << out->detail;
  EXPECT_FALSE(runner->alive());
  EXPECT_TRUE(WaitUntilGone(pid));
  // Every later request answers with the same outcome.
  auto again = runner->Call(CallSpec{}, 30);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kind, Kind::kCrash);

  auto fresh = Prepared(CompileKernel("return_code"), *arena);
  ASSERT_NE(fresh, nullptr);
  auto ok = fresh->Call(CallSpec{}, 30);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->rc, 7);
}

TEST_P(RunnerTest, InfiniteLoopTimesOutAndLeavesNoProcess) {
  auto arena = Arena(4096);
  auto runner = Prepared(CompileKernel("infinite_loop"), *arena);
  ASSERT_NE(runner, nullptr);
  const pid_t pid = runner->pid();
  auto out = runner->Call(CallSpec{}, 1.0);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, Kind::kTimeout) << out->detail;
  EXPECT_GE(out->parent_seconds, 1.0);
  EXPECT_FALSE(runner->alive());
  EXPECT_TRUE(WaitUntilGone(pid)) << "runner " << pid << " survived its timeout";
  auto again = runner->Time({CallSpec{}}, 3, false, 30);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kind, Kind::kTimeout);
}

TEST_P(RunnerTest, CpuTimeLimitEndsABusyKernel) {
  auto arena = Arena(4096);
  RunnerOptions options = Options();
  options.sandbox.limits.cpu_seconds = 1;
  auto runner = Prepared(CompileKernel("infinite_loop"), *arena, options);
  ASSERT_NE(runner, nullptr);
  auto out = runner->Call(CallSpec{}, 120);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, Kind::kCrash) << out->detail;
  EXPECT_TRUE(out->term_signal == SIGXCPU || out->term_signal == SIGKILL) << out->detail;
}

TEST_P(RunnerTest, TimeRotatesOverCallsAndFlushes) {
  auto arena = Arena(1 << 16);
  float* f = reinterpret_cast<float*>(arena->data());
  int64_t* fail_at = reinterpret_cast<int64_t*>(arena->data() + 256);
  *fail_at = 0;
  f[0] = 1.5f;   // x of spec A, at 0
  f[16] = 4.0f;  // x of spec B, at 64
  auto runner = Prepared(CompileKernel("counter"), *arena);
  ASSERT_NE(runner, nullptr);
  CallSpec a, b;
  a.inputs = {Slot(KOPE_F32, {1}, 0), Slot(KOPE_I64, {1}, 256)};
  a.outputs = {Slot(KOPE_F32, {2}, 1024)};
  b.inputs = {Slot(KOPE_F32, {1}, 64), Slot(KOPE_I64, {1}, 256)};
  // The last bytes of the arena: flushing must stay inside it.
  b.outputs = {Slot(KOPE_F32, {2}, (1 << 16) - 8)};
  auto out = runner->Time({a, b}, 9, /*flush=*/true, 60);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->kind, Kind::kOk) << out->detail;
  ASSERT_EQ(out->ns.size(), 9u);
  for (int64_t ns : out->ns) EXPECT_GE(ns, 0);
  // A ran calls 1, 3, 5, 7, 9 and B calls 2, 4, 6, 8.
  const float* out_b = reinterpret_cast<const float*>(arena->data() + (1 << 16) - 8);
  EXPECT_EQ(f[256], 9.0f);
  EXPECT_EQ(f[257], 3.0f);
  EXPECT_EQ(out_b[0], 8.0f);
  EXPECT_EQ(out_b[1], 8.0f);
  // Each call evicted its own tensors: 4 + 8 + 8 bytes.
  EXPECT_EQ(out->flushed_bytes, 9u * 20u);

  auto unflushed = runner->Time({a}, 4, /*flush=*/false, 60);
  ASSERT_TRUE(unflushed.ok());
  EXPECT_EQ(unflushed->ns.size(), 4u);
  EXPECT_EQ(unflushed->flushed_bytes, 0u);
  EXPECT_EQ(f[256], 13.0f);
}

TEST_P(RunnerTest, TimeStopsAtTheFirstFailure) {
  auto arena = Arena(4096);
  *reinterpret_cast<int64_t*>(arena->data() + 256) = 4;
  auto runner = Prepared(CompileKernel("counter"), *arena);
  ASSERT_NE(runner, nullptr);
  CallSpec a;
  a.inputs = {Slot(KOPE_F32, {1}, 0), Slot(KOPE_I64, {1}, 256)};
  a.outputs = {Slot(KOPE_F32, {2}, 1024)};
  auto out = runner->Time({a}, 100, true, 60);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, Kind::kKernelError);
  EXPECT_EQ(out->rc, 5);
  EXPECT_EQ(out->ns.size(), 4u);
}

TEST_P(RunnerTest, OpenMpKernelUsesSeveralThreads) {
  auto arena = Arena(1 << 16);
  float* x = reinterpret_cast<float*>(arena->data());
  for (int i = 0; i < 1000; ++i) x[i] = static_cast<float>(i);
  auto runner = Prepared(CompileKernel("openmp"), *arena);
  ASSERT_NE(runner, nullptr);
  CallSpec call;
  call.inputs = {Slot(KOPE_F32, {1000}, 0)};
  call.outputs = {Slot(KOPE_F32, {1000}, 4096), Slot(KOPE_I64, {2}, 8192)};
  auto out = runner->Call(call, 60);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->kind, Kind::kOk) << out->detail;
  const float* y = reinterpret_cast<const float*>(arena->data() + 4096);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(y[i], static_cast<float>(i) + 1.0f) << i;
  const int64_t* stats = reinterpret_cast<const int64_t*>(arena->data() + 8192);
  EXPECT_EQ(stats[0], 4);
  EXPECT_EQ(stats[1], 0 + 1 + 2 + 3);
}

TEST_P(RunnerTest, RejectsTensorsOutsideTheArena) {
  auto arena = Arena(4096);
  auto runner = Prepared(CompileKernel("affine"), *arena);
  ASSERT_NE(runner, nullptr);
  CallSpec call;
  call.inputs = {Slot(KOPE_F32, {2000}, 0)};  // 8000 bytes
  auto out = runner->Call(call, 30);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  call.inputs = {Slot(KOPE_F32, {4}, 2)};  // misaligned
  EXPECT_FALSE(runner->Call(call, 30).ok());
  EXPECT_FALSE(runner->Time({}, 3, false, 30).ok());
  EXPECT_TRUE(runner->alive());
}

TEST_P(RunnerTest, CallWithoutArenaIsAFailedPrecondition) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  auto out = runner->Call(CallSpec{}, 30);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kFailedPrecondition);
}

TEST_P(RunnerTest, CallWithoutKernelIsRejectedByTheChild) {
  auto arena = Arena(4096);
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  ASSERT_TRUE(runner->MapArena(*arena, 30).ok());
  auto out = runner->Call(CallSpec{}, 30);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("no kernel loaded"), std::string::npos);
}

TEST_P(RunnerTest, DestructorLeavesNoProcess) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  const pid_t pid = runner->pid();
  ASSERT_GT(pid, 0);
  EXPECT_FALSE(ProcessGone(pid));
  runner.reset();
  EXPECT_TRUE(WaitUntilGone(pid));
  EXPECT_TRUE(testing::LivingDescendants(getpid()).empty());
}

TEST_P(RunnerTest, ScratchMustBeAnEmptyFolder) {
  RunnerOptions options = Options();
  std::ofstream(options.sandbox.scratch_dir / "leftover") << "x";
  auto runner = Runner::Start(options);
  ASSERT_FALSE(runner.ok());
  EXPECT_EQ(runner.status().code(), StatusCode::kFailedPrecondition);
  options.sandbox.scratch_dir = dir_ / "does-not-exist";
  EXPECT_FALSE(Runner::Start(options).ok());
  options = Options();
  options.runner_exe = dir_ / "no-runner-here";
  runner = Runner::Start(options);
  ASSERT_FALSE(runner.ok());
  EXPECT_EQ(runner.status().code(), StatusCode::kNotFound);
}

TEST_P(RunnerTest, FailureToStartSaysWhy) {
  RunnerOptions options = Options();
  if (GetParam()) {
    // bubblewrap refuses to bind a path that does not exist; its message ends up in the status.
    options.sandbox.read_only = {dir_ / "no-such-path"};
  } else {
    options.runner_exe = "/bin/false";  // exits at once, says nothing
  }
  auto runner = Runner::Start(options);
  ASSERT_FALSE(runner.ok());
  EXPECT_EQ(runner.status().code(), StatusCode::kUnavailable);
  if (GetParam()) {
    EXPECT_NE(runner.status().message().find("no-such-path"), std::string::npos)
        << runner.status().message();
  } else {
    EXPECT_NE(runner.status().message().find("exited with code 1"), std::string::npos)
        << runner.status().message();
  }
}

TEST_P(RunnerTest, ProtectionSaysWhatIsActive) {
  auto runner = StartRunner();
  ASSERT_NE(runner, nullptr);
  const Protection& p = runner->protection();
  EXPECT_EQ(p.bubblewrap, GetParam());
  EXPECT_EQ(p.filesystem_read_only, GetParam());
  EXPECT_TRUE(p.seccomp) << p.Describe();
  EXPECT_TRUE(p.rlimits) << p.Describe();
  EXPECT_TRUE(p.network_isolated);
  const std::string text = p.Describe();
  if (GetParam()) {
    EXPECT_NE(text.find("bubblewrap (no network"), std::string::npos) << text;
    EXPECT_EQ(text.find("MISSING"), std::string::npos) << text;
  } else {
    EXPECT_NE(text.find("MISSING bubblewrap"), std::string::npos) << text;
    EXPECT_NE(text.find("disabled by the caller"), std::string::npos) << text;
  }
}

TEST_P(RunnerTest, LogHoldsTheChildsOutput) {
  auto arena = Arena(4096);
  RunnerOptions options = Options();
  auto runner = Prepared(CompileKernel("segfault"), *arena, options);
  ASSERT_NE(runner, nullptr);
  ASSERT_TRUE(runner->Call(CallSpec{}, 30).ok());
  std::ifstream log(options.sandbox.scratch_dir / "runner.log");
  std::string text, line;
  while (std::getline(log, line)) text += line + "\n";
  EXPECT_NE(text.find("kernel about to crash"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Modes, RunnerTest, ::testing::Bool(), testing::ModeName);

TEST(FindRunnerExecutableTest, HonoursTheEnvironmentAndSaysWhatIsMissing) {
  setenv("KOPE_RUNNER", (kope::testing::BinaryDir() + "/kope-runner").c_str(), 1);
  auto found = FindRunnerExecutable();
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->string(), kope::testing::BinaryDir() + "/kope-runner");
  setenv("KOPE_RUNNER", "/nonexistent/kope-runner", 1);
  found = FindRunnerExecutable();
  ASSERT_FALSE(found.ok());
  EXPECT_NE(found.status().message().find("KOPE_RUNNER"), std::string::npos);
  unsetenv("KOPE_RUNNER");
  // The test binary is not beside kope-runner.
  found = FindRunnerExecutable();
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace kope
