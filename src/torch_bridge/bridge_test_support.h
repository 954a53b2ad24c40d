// What the torch bridge's test files share: the test data folder, one scratch folder per test
// binary, imported problems, and skipping where there is no bridge (.venv from scripts/setup).
#ifndef KOPE_SRC_TORCH_BRIDGE_BRIDGE_TEST_SUPPORT_H_
#define KOPE_SRC_TORCH_BRIDGE_BRIDGE_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "kope/base/status.h"
#include "kope/task/task.h"
#include "kope/torch_bridge/bridge.h"

namespace kope::bridge_test {

// src/torch_bridge/testdata.
std::filesystem::path TestData();
// One temporary folder for the whole binary, removed when the tests end; empty if none could
// be made.
const std::filesystem::path& ScratchDir();
// Imports `problem` (testdata/problems/<problem>.py) once; with `ops` set, a copy of the import
// whose task.toml has `ops = "<ops>"` in its [torch] table.
Result<Task> ImportedTask(const std::string& problem, const std::string& ops);

}  // namespace kope::bridge_test

#define KOPE_REQUIRE_BRIDGE()                                  \
  do {                                                         \
    Result<TorchBridge> found = FindTorchBridge();             \
    if (!found.ok()) GTEST_SKIP() << found.status().message(); \
  } while (0)

#endif  // KOPE_SRC_TORCH_BRIDGE_BRIDGE_TEST_SUPPORT_H_
