// Test support: the CPU backend the tests of several components evaluate with, and the runner
// they start. Header only; for test binaries (kope_add_test links testing/test_paths.h), which
// link kope_backend_cpu_testing and include "backend/cpu/testing/cpu_test_backend.h".
#ifndef KOPE_SRC_BACKEND_CPU_TESTING_CPU_TEST_BACKEND_H_
#define KOPE_SRC_BACKEND_CPU_TESTING_CPU_TEST_BACKEND_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "kope/backend/cpu/cpu_backend.h"
#include "kope/base/file.h"
#include "testing/test_paths.h"

namespace kope {

// A CPU backend whose compile cache is `cache_dir`.
inline Result<std::unique_ptr<Backend>> CpuTestBackend(const std::filesystem::path& cache_dir) {
  CpuBackendOptions options;
  options.cache_dir = cache_dir;
  return CreateCpuBackend(options);
}

// The test binary's one CPU backend, its compile cache shared by the build's tests
// (<build>/test-cache); never destroyed. Null, with the test failed, when it cannot be made.
inline Backend* SharedCpuTestBackend() {
  static Backend* backend = []() -> Backend* {
    auto created = CpuTestBackend(std::filesystem::path(kope::testing::BinaryDir()) / "test-cache");
    if (!created.ok()) {
      ADD_FAILURE() << created.status().ToString();
      return nullptr;
    }
    return std::move(created).value().release();
  }();
  return backend;
}

// The kope-runner the build made.
inline std::filesystem::path TestRunnerExecutable() {
  return std::filesystem::path(kope::testing::BinaryDir()) / "kope-runner";
}

}  // namespace kope

#endif  // KOPE_SRC_BACKEND_CPU_TESTING_CPU_TEST_BACKEND_H_
