// Shared pieces of the agent's tests: a scratch folder with a real SQLite store, the CPU backend
// with a compile cache in the build folder, and the test tasks under testdata/tasks.
#ifndef KOPE_SRC_AGENT_AGENT_TEST_SUPPORT_H_
#define KOPE_SRC_AGENT_AGENT_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "kope/agent/episode.h"
#include "kope/backend/cpu/cpu_backend.h"
#include "kope/memory/sqlite/sqlite_store.h"
#include "kope/task/task.h"
#include "testing/test_paths.h"

namespace kope::agent::testing {

namespace fs = std::filesystem;

inline fs::path TestTaskDir(const std::string& name) {
  return fs::path(kope::testing::SourceDir()) / "src/agent/testdata/tasks" / name;
}

// A scratch folder removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("kope-agent-" + std::string(info->name()) + "-" + std::to_string(getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::unique_ptr<memory::GraphStore> OpenTestStore(const fs::path& path) {
  auto store = memory::OpenSqliteStore(path);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(*store) : nullptr;
}

inline std::unique_ptr<Backend> TestBackend() {
  CpuBackendOptions options;
  options.cache_dir = fs::path(kope::testing::BinaryDir()) / "agent-test-cache";
  auto backend = CreateCpuBackend(options);
  EXPECT_TRUE(backend.ok()) << backend.status().ToString();
  return backend.ok() ? std::move(*backend) : nullptr;
}

inline Task LoadTestTask(const std::string& name) {
  auto task = LoadTask(TestTaskDir(name));
  EXPECT_TRUE(task.ok()) << task.status().ToString();
  return task.ok() ? *task : Task{};
}

// Episode options for tests: the runner from the build folder, no confirmation re-timing
// unless asked, no patience rule.
inline EpisodeOptions TestEpisodeOptions(int attempts) {
  EpisodeOptions options;
  options.budgets.attempts = attempts;
  options.stop.patience = 0;
  options.stop.speed_of_light = 0;
  options.confirm = false;
  options.eval.runner_exe = fs::path(kope::testing::BinaryDir()) / "kope-runner";
  return options;
}

}  // namespace kope::agent::testing

#endif  // KOPE_SRC_AGENT_AGENT_TEST_SUPPORT_H_
