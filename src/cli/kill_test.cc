// `kope eval` killed mid-evaluation (SIGKILL, SIGTERM, and SIGINT to its process group as Ctrl-C
// sends it) leaves no process behind, and the next kope to start removes the scratch folders it
// left. The test process is a child subreaper: whatever kope started and left running would be
// reparented to it, and is looked for there.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kope/base/subprocess.h"
#include "testing/test_paths.h"

extern char** environ;

namespace kope {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct KillCase {
  std::string name;
  int signal;
  bool process_group;  // to the whole group, as a terminal's Ctrl-C
};

const KillCase kCases[] = {
    {"sigkill", SIGKILL, false},
    {"sigterm", SIGTERM, false},
    {"ctrl_c", SIGINT, true},
};

// The processes whose parent is this one (kope's leftovers are reparented here).
std::vector<int> Children() {
  std::vector<int> pids;
  const std::string self = std::to_string(getpid());
  for (const fs::directory_entry& e : fs::directory_iterator("/proc")) {
    std::ifstream status(e.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("PPid:", 0) != 0) continue;
      if (line.substr(line.find_first_not_of(" \t", 5)) == self) {
        pids.push_back(std::stoi(e.path().filename().string()));
      }
      break;
    }
  }
  return pids;
}

// Reaps what ended; true once no child is left, false if some are still there after `wait`.
bool NoChildrenWithin(std::chrono::seconds wait) {
  const auto deadline = Clock::now() + wait;
  while (true) {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (Children().empty()) return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::vector<std::string> KopeFolders(const fs::path& root) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(root)) {
    if (e.path().filename().string().rfind("kope-", 0) == 0) {
      names.push_back(e.path().filename().string());
    }
  }
  return names;
}

class KillMidEvaluation : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    root_ = fs::temp_directory_path() / ("kope-kill-test-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    // kope and everything it starts make their scratch folders in TMPDIR.
    const char* tmpdir = getenv("TMPDIR");
    saved_tmpdir_ = tmpdir != nullptr ? tmpdir : "";
    setenv("TMPDIR", root_.c_str(), 1);
    setenv("KOPE_CACHE_DIR", (fs::path(kope::testing::BinaryDir()) / "test-cache").c_str(), 1);
    for (char** e = environ; *e != nullptr; ++e) env_.emplace_back(*e);
  }
  void TearDown() override {
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    if (saved_tmpdir_.empty()) {
      unsetenv("TMPDIR");
    } else {
      setenv("TMPDIR", saved_tmpdir_.c_str(), 1);
    }
    fs::remove_all(root_);
  }

  std::vector<std::string> Eval(const std::string& candidate) const {
    const fs::path source = kope::testing::SourceDir();
    return {(fs::path(kope::testing::BinaryDir()) / "kope").string(), "eval", "-q",
            (source / "examples/gelu").string(), (source / candidate).string()};
  }

  fs::path root_;
  std::string saved_tmpdir_;
  std::vector<std::string> env_;
};

TEST_F(KillMidEvaluation, LeavesNoProcessAndNoScratchFolderPastTheNextStart) {
  std::mt19937 rng(20261202);
  for (const KillCase& c : kCases) {
    SpawnOptions spawn;
    spawn.env = env_;
    // A candidate that never returns: the evaluation is in a runner's call when the signal comes.
    Result<int> pid = SpawnProcess(Eval("src/eval/testdata/adversarial/infinite_loop.cc"), spawn);
    ASSERT_TRUE(pid.ok()) << pid.status().ToString();
    // Kope's runners are up once it has made its scratch folder; then a random moment more.
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (KopeFolders(root_).empty() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 800));
    ASSERT_EQ(kill(c.process_group ? -*pid : *pid, c.signal), 0) << c.name;
    int status = 0;
    ASSERT_EQ(waitpid(*pid, &status, 0), *pid) << c.name;
    EXPECT_TRUE(NoChildrenWithin(std::chrono::seconds(10)))
        << c.name << ": processes left behind: " << Children().size();
  }
  // The next start removes what the killed ones left.
  ProcessOptions options;
  options.timeout_seconds = 120;
  options.extra_env = {
      "TMPDIR=" + root_.string(),
      "KOPE_CACHE_DIR=" + (fs::path(kope::testing::BinaryDir()) / "test-cache").string()};
  Result<ProcessResult> next = RunProcess(Eval("examples/gelu/optimized.cc"), options);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(next->exit_code, 0) << next->output;
  EXPECT_TRUE(KopeFolders(root_).empty())
      << "left after the next start: " << ::testing::PrintToString(KopeFolders(root_));
  EXPECT_TRUE(NoChildrenWithin(std::chrono::seconds(10)));
}

}  // namespace
}  // namespace kope
