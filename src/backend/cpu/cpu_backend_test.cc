#include "kope/backend/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "backend/cpu/testing/cpu_test_backend.h"
#include "kope/runner/sandbox.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

class CpuBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() / ("kope-backend-test-" + std::to_string(std::random_device{}()));
    auto backend = CpuTestBackend(dir_);
    ASSERT_TRUE(backend.ok()) << backend.status().ToString();
    backend_ = std::move(backend).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::unique_ptr<Backend> backend_;
};

constexpr const char* kGood = R"(
#include "kope/kernel.h"
extern "C" int kope_kernel(const kope_tensor* in, int, kope_tensor* out, int, void*) {
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < in[0].shape[0]; ++i) y[i] = 2 * x[i];
  return 0;
}
)";

TEST_F(CpuBackendTest, CompilesAndCachesByContent) {
  auto first = backend_->Compile(kGood, "good.cc");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(first->ok()) << first->log;
  EXPECT_FALSE(first->cache_hit);
  EXPECT_TRUE(fs::exists(first->artifact));

  auto second = backend_->Compile(kGood, "other-name.cc");
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(second->artifact, first->artifact);

  auto changed = backend_->Compile(std::string(kGood) + "\n// changed\n", "good.cc");
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(changed->cache_hit);
  EXPECT_NE(changed->cache_key, first->cache_key);
}

TEST_F(CpuBackendTest, SyntaxErrorGivesLocatedDiagnostic) {
  auto r = backend_->Compile("#include \"kope/kernel.h\"\nint x = ;\n", "broken.cc");
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->ok());
  ASSERT_FALSE(r->diagnostics.empty());
  EXPECT_EQ(r->diagnostics[0].file, "broken.cc");
  EXPECT_EQ(r->diagnostics[0].line, 2);
  EXPECT_EQ(r->diagnostics[0].severity, "error");
}

TEST_F(CpuBackendTest, MissingEntryPointIsACompileError) {
  auto r = backend_->Compile("int kope_kernel_typo() { return 0; }\n", "noentry.cc");
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->ok());
  ASSERT_FALSE(r->diagnostics.empty());
  EXPECT_NE(r->diagnostics[0].message.find("kope_kernel"), std::string::npos)
      << r->diagnostics[0].message;
}

TEST_F(CpuBackendTest, MangledEntryPointIsACompileError) {
  // Defined with C++ linkage: the symbol is mangled and not found.
  auto r = backend_->Compile(
      "#include \"kope/kernel.h\"\nint kope_kernel(const kope_tensor*, int, kope_tensor*, int, "
      "void*) { return 0; }\n",
      "mangled.cc");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->ok());
}

TEST_F(CpuBackendTest, UndefinedSymbolIsACompileError) {
  auto r = backend_->Compile(
      "#include \"kope/kernel.h\"\nextern \"C\" int helper_that_does_not_exist();\n"
      "extern \"C\" int kope_kernel(const kope_tensor*, int, kope_tensor*, int, void*) { return "
      "helper_that_does_not_exist(); }\n",
      "undef.cc");
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->ok());
  ASSERT_FALSE(r->diagnostics.empty());
  EXPECT_NE(r->diagnostics[0].message.find("helper_that_does_not_exist"), std::string::npos);
}

TEST_F(CpuBackendTest, HardwareDescribesThisMachine) {
  auto hw = backend_->Hardware();
  ASSERT_TRUE(hw.ok()) << hw.status().ToString();
  EXPECT_EQ(hw->backend, "cpu");
  EXPECT_GT(hw->cores, 0);
  EXPECT_GT(hw->bandwidth_bytes_per_s, 0);
  EXPECT_GT(hw->peak_flops, 0);
  EXPECT_FALSE(hw->measured_at.empty());
  // A second backend on the same cache reads the cached figures.
  auto again = CpuTestBackend(dir_);
  ASSERT_TRUE(again.ok());
  auto hw2 = (*again)->Hardware();
  ASSERT_TRUE(hw2.ok());
  EXPECT_EQ(hw2->bandwidth_bytes_per_s, hw->bandwidth_bytes_per_s);
}

}  // namespace
}  // namespace kope

namespace kope {
namespace {

TEST_F(CpuBackendTest, CompilerCannotIncludeFilesOutsideTheSystem) {
  if (!BubblewrapAvailable()) GTEST_SKIP() << "bubblewrap is not available here";
  // A file the compiler could read if it were not sandboxed.
  fs::path secret = dir_ / "secret.h";
  std::ofstream(secret) << "#error the secret was readable\n";
  auto r = backend_->Compile("#include \"" + secret.string() + "\"\n", "leak.cc");
  ASSERT_TRUE(r.ok());
  ASSERT_FALSE(r->ok());
  for (const Diagnostic& d : r->diagnostics) {
    EXPECT_EQ(d.message.find("the secret was readable"), std::string::npos) << d.message;
  }
}

}  // namespace
}  // namespace kope
