// The CUDA backend with the real nvcc. Compiling needs no GPU (the target is
// given); the tests that run kernels skip cleanly where no GPU is present.
#include "kope/backend/cuda/cuda_backend.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "kope/kernel.h"
#include "kope/runner/sandbox.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGood = R"(
#include "kope/kernel.h"
__global__ void Twice(const float* __restrict__ x, float* __restrict__ y, long n) {
  __shared__ float tile[256];
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n) y[i] = 2.f * tile[threadIdx.x];
}
extern "C" int kope_kernel(const kope_tensor* in, int, kope_tensor* out, int, void* stream) {
  long n = in[0].shape[0];
  Twice<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>((const float*)in[0].data,
                                                             (float*)out[0].data, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)";

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kope-cuda-backend-test-" + std::to_string(std::random_device{}()));
    CudaBackendOptions options;
    options.cache_dir = dir_;
    options.launcher = KOPE_CUDA_LAUNCH;
    gpu_ = CudaDevicePresent();
    if (!gpu_) options.arch = "sm_90a";  // compile for an H100/H200 without one
    auto backend = CreateCudaBackend(options);
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    backend_ = std::move(backend).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  bool gpu_ = false;
  std::unique_ptr<Backend> backend_;
};

TEST_F(CudaBackendTest, NamesItsLanguageAndRunnerDevice) {
  EXPECT_EQ(backend_->name(), "cuda");
  EXPECT_EQ(backend_->language(), "cuda");
  EXPECT_EQ(backend_->runner_device(), "cuda:0");
}

TEST_F(CudaBackendTest, CompilesCachesAndKeepsTheResourceReport) {
  auto first = backend_->Compile(kGood, "good.cu");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->ok()) << first->log;
  EXPECT_FALSE(first->cache_hit);
  EXPECT_TRUE(fs::exists(first->artifact));
  ASSERT_EQ(first->resources.size(), 1u) << first->log;
  EXPECT_NE(first->resources[0].function.find("Twice"), std::string::npos);
  EXPECT_GT(first->resources[0].registers, 0);
  EXPECT_EQ(first->resources[0].shared_bytes, 1024);

  auto second = backend_->Compile(kGood, "renamed.cu");
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(second->artifact, first->artifact);
  ASSERT_EQ(second->resources.size(), 1u);  // read back from the cache
  EXPECT_EQ(second->resources[0].registers, first->resources[0].registers);

  auto changed = backend_->Compile(std::string(kGood) + "\n// changed\n", "good.cu");
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(changed->cache_hit);
  EXPECT_NE(changed->cache_key, first->cache_key);
}

TEST_F(CudaBackendTest, ParallelCompilesOfOneSourceAgree) {
  std::vector<std::thread> threads;
  std::vector<Result<CompiledKernel>> results(3, Status::Internal("not run"));
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] { results[i] = backend_->Compile(kGood, "good.cu"); });
  }
  for (auto& t : threads) t.join();
  for (auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(r->ok()) << r->log;
    EXPECT_EQ(r->artifact, results[0]->artifact);
  }
}

TEST_F(CudaBackendTest, ErrorsAreLocatedInTheCandidatesFile) {
  auto r = backend_->Compile(
      "#include \"kope/kernel.h\"\n__global__ void f(float* y) { y[0] = undefined_thing; }\n",
      "broken.cu");
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->ok());
  ASSERT_FALSE(r->diagnostics.empty()) << r->log;
  EXPECT_EQ(r->diagnostics[0].file, "broken.cu");
  EXPECT_EQ(r->diagnostics[0].line, 2);
  EXPECT_EQ(r->diagnostics[0].severity, "error");
  EXPECT_NE(r->diagnostics[0].message.find("undefined_thing"), std::string::npos);
}

TEST_F(CudaBackendTest, MissingOrMangledEntryPointIsACompileError) {
  for (const char* source :
       {"__global__ void k() {}\n",
        "#include \"kope/kernel.h\"\nint kope_kernel(const kope_tensor*, int, kope_tensor*, int, "
        "void*) { return 0; }\n"}) {
    auto r = backend_->Compile(source, "noentry.cu");
    ASSERT_TRUE(r.ok());
    ASSERT_FALSE(r->ok()) << source;
    ASSERT_FALSE(r->diagnostics.empty()) << r->log;
    EXPECT_NE(r->diagnostics[0].message.find("kope_kernel"), std::string::npos) << r->log;
  }
}

TEST_F(CudaBackendTest, UndefinedSymbolIsACompileError) {
  auto r = backend_->Compile(
      "#include \"kope/kernel.h\"\nextern \"C\" int helper_missing();\n"
      "extern \"C\" int kope_kernel(const kope_tensor*, int, kope_tensor*, int, void*) "
      "{ return helper_missing(); }\n",
      "undef.cu");
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->ok());
  ASSERT_FALSE(r->diagnostics.empty());
  EXPECT_NE(r->diagnostics[0].message.find("helper_missing"), std::string::npos) << r->log;
}

TEST_F(CudaBackendTest, CompilerCannotIncludeFilesOutsideTheSystem) {
  if (!BubblewrapAvailable()) GTEST_SKIP() << "bubblewrap is not available here";
  // The sandboxed compiler works: the failure below is the include's, not nvcc's.
  auto good = backend_->Compile(kGood, "good.cu");
  ASSERT_TRUE(good.ok() && good->ok()) << (good.ok() ? good->log : good.status().ToString());
  fs::path secret = dir_ / "secret.h";
  std::ofstream(secret) << "#error the secret was readable\n";
  auto r = backend_->Compile("#include \"" + secret.string() + "\"\n", "leak.cu");
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->ok());
  for (const Diagnostic& d : r->diagnostics) {
    EXPECT_EQ(d.message.find("the secret was readable"), std::string::npos) << d.message;
  }
}

// --- With a GPU --------------------------------------------------------------------------

TEST_F(CudaBackendTest, HardwareDescribesAndMeasuresTheGpu) {
  if (!gpu_) GTEST_SKIP() << "no CUDA GPU here";
  auto hw = backend_->Hardware();
  ASSERT_TRUE(hw.ok()) << hw.status().ToString();
  EXPECT_EQ(hw->backend, "cuda");
  EXPECT_FALSE(hw->device.empty());
  EXPECT_EQ(hw->architecture.rfind("sm_", 0), 0u);
  EXPECT_GT(hw->cores, 0);
  EXPECT_GT(hw->last_level_cache_bytes, 0u);
  EXPECT_GT(hw->memory_bytes, 0u);
  EXPECT_FALSE(hw->driver.empty());
  EXPECT_GT(hw->bandwidth_bytes_per_s, 0);
  EXPECT_GT(hw->peak_flops, 0);
  // Cached: a second backend on the same folder reads the same figures.
  CudaBackendOptions options;
  options.cache_dir = dir_;
  auto again = CreateCudaBackend(options);
  ASSERT_TRUE(again.ok());
  auto hw2 = (*again)->Hardware();
  ASSERT_TRUE(hw2.ok());
  EXPECT_EQ(hw2->bandwidth_bytes_per_s, hw->bandwidth_bytes_per_s);
}

TEST_F(CudaBackendTest, ProfilesAValidKernelOrSaysWhyNot) {
  if (!gpu_) GTEST_SKIP() << "no CUDA GPU here";
  auto compiled = backend_->Compile(kGood, "good.cu");
  ASSERT_TRUE(compiled.ok() && compiled->ok());
  LaunchShapes shapes;
  shapes.inputs = {{KOPE_F32, {1 << 22}}};
  shapes.outputs = {{KOPE_F32, {1 << 22}}};
  auto profile = backend_->Profile(*compiled, shapes);
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  if (profile->metrics.empty()) {
    EXPECT_FALSE(profile->note.empty());  // the tool is missing or could not read counters
    GTEST_SKIP() << "no counters: " << profile->note;
  }
  std::map<std::string, double> m(profile->metrics.begin(), profile->metrics.end());
  EXPECT_GT(m["duration_ns"], 0);
  EXPECT_NE(profile->kernel.find("Twice"), std::string::npos);
  EXPECT_FALSE(profile->limiter.empty());
}

TEST_F(CudaBackendTest, SanitizerPassesACleanKernelAndStopsAnOutOfBoundsOne) {
  if (!gpu_) GTEST_SKIP() << "no CUDA GPU here";
  auto clean = backend_->Compile(kGood, "good.cu");
  ASSERT_TRUE(clean.ok() && clean->ok());
  LaunchShapes shapes;
  shapes.inputs = {{KOPE_F32, {1001}}};
  shapes.outputs = {{KOPE_F32, {1001}}};
  auto report = backend_->Sanitize(*clean, {shapes});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  if (report->tools.empty()) GTEST_SKIP() << "compute-sanitizer did not run: " << report->note;
  EXPECT_TRUE(report->clean) << report->first_error;

  std::string oob = kGood;
  oob.replace(oob.find("if (i < n) y[i]"), 15, "if (i <= n) y[i]");
  auto bad = backend_->Compile(oob, "oob.cu");
  ASSERT_TRUE(bad.ok() && bad->ok()) << bad->log;
  auto bad_report = backend_->Sanitize(*bad, {shapes});
  ASSERT_TRUE(bad_report.ok());
  EXPECT_FALSE(bad_report->clean) << bad_report->note;
  EXPECT_NE(bad_report->first_error.find("memcheck"), std::string::npos) << bad_report->first_error;
}

}  // namespace
}  // namespace kope
