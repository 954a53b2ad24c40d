// The runner's GPU mode (RunnerOptions::device = "cuda:0") with kernels compiled by nvcc.
// Without a GPU only the failure path runs: the kernel does not load, with a reason.
#include <cuda_runtime_api.h>

#include "runner_test_support.h"
#include "testing/test_paths.h"

namespace kope::testing {
namespace {

bool GpuPresent() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// Compiles testdata/<name>.cu with nvcc for the GPU here (sm_90a without one).
std::filesystem::path CompileCuda(const std::string& name,
                                  const std::vector<std::string>& defines) {
  static int count = 0;
  const std::filesystem::path out =
      KernelDir() / (name + "-cuda-" + std::to_string(count++) + ".so");
  std::string arch = "sm_90a";
  int device = 0, major = 0, minor = 0;
  if (GpuPresent() && cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess) {
    arch = "sm_" + std::to_string(major) + std::to_string(minor) + (major == 9 ? "a" : "");
  }
  const std::string compute = "compute_" + arch.substr(3);
  std::vector<std::string> argv = {
      KOPE_NVCC,    "-O2",    "-gencode=arch=" + compute + ",code=" + arch,
      "-Xcompiler", "-fPIC",  "-shared",
      "-cudart",    "shared", "-I" + kope::testing::SourceDir() + "/include"};
  for (const auto& d : defines) argv.push_back("-D" + d);
  argv.insert(argv.end(), {kope::testing::SourceDir() + "/src/runner/testdata/" + name + ".cu",
                           "-o", out.string()});
  auto r = RunProcess(argv);
  if (!r.ok() || !r->ok()) {
    ADD_FAILURE() << "nvcc " << name << ": " << (r.ok() ? r->output : r.status().ToString());
    return {};
  }
  return out;
}

class CudaRunner : public RunnerFixture {
 protected:
  RunnerOptions GpuOptions() {
    RunnerOptions options = Options();
    options.device = "cuda:0";
    return options;
  }
  // n floats in, n floats out, 4 KiB of guard after the output.
  static constexpr int64_t kN = 1000;
  static constexpr uint64_t kOut = 4096;
  CallSpec Spec() const {
    CallSpec call;
    call.inputs = {Slot(KOPE_F32, {kN}, 0)};
    call.outputs = {Slot(KOPE_F32, {kN}, kOut)};
    return call;
  }
  static float* F(SharedArena& a, uint64_t offset) {
    return reinterpret_cast<float*>(a.data() + offset);
  }
};

TEST_P(CudaRunner, WithoutAGpuTheKernelDoesNotLoadAndSaysWhy) {
  if (GpuPresent()) GTEST_SKIP() << "a GPU is present";
  auto kernel = CompileCuda("cuda_affine", {});
  ASSERT_FALSE(kernel.empty());
  auto runner = StartRunner(GpuOptions());
  ASSERT_NE(runner, nullptr);
  auto loaded = runner->Load(kernel, 60);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->kind, CallOutcome::Kind::kKernelError);
  EXPECT_NE(loaded->detail.find("GPU"), std::string::npos) << loaded->detail;
}

TEST_P(CudaRunner, CallCopiesBothWaysAndTimeReportsEveryCall) {
  if (!GpuPresent()) GTEST_SKIP() << "no CUDA GPU here";
  auto arena = Arena(2 * kOut);
  for (int i = 0; i < kN; ++i) F(*arena, 0)[i] = static_cast<float>(i);
  for (int i = 0; i < 1024; ++i) F(*arena, kOut)[i] = -1.0f;  // poison and guard
  auto runner = Prepared(CompileCuda("cuda_affine", {"A=3.0f", "B=0.5f"}), *arena, GpuOptions());
  ASSERT_NE(runner, nullptr);
  auto call = runner->Call(Spec(), 30);
  ASSERT_TRUE(call.ok() && call->ok()) << (call.ok() ? call->detail : call.status().ToString());
  for (int i = 0; i < kN; ++i) ASSERT_EQ(F(*arena, kOut)[i], 3.0f * i + 0.5f) << i;
  for (int i = kN; i < 1024; ++i) ASSERT_EQ(F(*arena, kOut)[i], -1.0f) << i;  // guard intact
  auto timed = runner->Time({Spec()}, 50, /*flush=*/true, 60);
  ASSERT_TRUE(timed.ok() && timed->ok())
      << (timed.ok() ? timed->detail : timed.status().ToString());
  ASSERT_EQ(timed->ns.size(), 50u);
  for (int64_t ns : timed->ns) EXPECT_GT(ns, 0);
  EXPECT_GT(timed->flushed_bytes, 0u);
}

TEST_P(CudaRunner, AWriteAfterTheOutputComesBackToTheParent) {
  if (!GpuPresent()) GTEST_SKIP() << "no CUDA GPU here";
  auto arena = Arena(2 * kOut);
  for (int i = 0; i < 1024; ++i) F(*arena, kOut)[i] = -1.0f;
  auto runner = Prepared(CompileCuda("cuda_affine", {"SCRIBBLE"}), *arena, GpuOptions());
  ASSERT_NE(runner, nullptr);
  auto call = runner->Call(Spec(), 30);
  ASSERT_TRUE(call.ok() && call->ok());
  EXPECT_EQ(F(*arena, kOut)[kN], 42.0f);
}

TEST_P(CudaRunner, AnIllegalAddressEndsTheRunnerAsACrash) {
  if (!GpuPresent()) GTEST_SKIP() << "no CUDA GPU here";
  auto arena = Arena(2 * kOut);
  auto runner = Prepared(CompileCuda("cuda_affine", {"WILD"}), *arena, GpuOptions());
  ASSERT_NE(runner, nullptr);
  auto call = runner->Call(Spec(), 30);
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(call->kind, CallOutcome::Kind::kCrash) << call->detail;
  EXPECT_NE(call->detail.find("illegal"), std::string::npos) << call->detail;
  EXPECT_FALSE(runner->alive());
}

TEST_P(CudaRunner, AHungKernelIsATimeout) {
  if (!GpuPresent()) GTEST_SKIP() << "no CUDA GPU here";
  auto arena = Arena(2 * kOut);
  auto runner = Prepared(CompileCuda("cuda_affine", {"HANG"}), *arena, GpuOptions());
  ASSERT_NE(runner, nullptr);
  auto call = runner->Call(Spec(), 3);
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(call->kind, CallOutcome::Kind::kTimeout) << call->detail;
  // The next runner on the same GPU works.
  auto next = Prepared(CompileCuda("cuda_affine", {}), *arena, GpuOptions());
  ASSERT_NE(next, nullptr);
  auto ok = next->Call(Spec(), 30);
  ASSERT_TRUE(ok.ok() && ok->ok()) << (ok.ok() ? ok->detail : ok.status().ToString());
}

TEST_P(CudaRunner, WorkOnAnUnsynchronizedSideStreamIsCompleteAndCounted) {
  if (!GpuPresent()) GTEST_SKIP() << "no CUDA GPU here";
  auto arena = Arena(2 * kOut);
  for (int i = 0; i < kN; ++i) F(*arena, 0)[i] = static_cast<float>(i);
  auto runner = Prepared(CompileCuda("cuda_affine", {"SIDE"}), *arena, GpuOptions());
  ASSERT_NE(runner, nullptr);
  auto call = runner->Call(Spec(), 30);
  ASSERT_TRUE(call.ok() && call->ok());
  for (int i = 0; i < kN; ++i) ASSERT_EQ(F(*arena, kOut)[i], 2.0f * i + 1.0f) << i;
}

INSTANTIATE_TEST_SUITE_P(Modes, CudaRunner, ::testing::Bool(), ModeName);

}  // namespace
}  // namespace kope::testing
