#include "kope/base/temp_folder.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include "kope/base/file.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

class TempFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kope-temp-folder-test-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TempFolderTest, IsLockedWhileItLivesAndRemovedWithIt) {
  fs::path path;
  {
    Result<TempFolder> folder = TempFolder::Create(dir_, "kope-t");
    ASSERT_TRUE(folder.ok()) << folder.status().ToString();
    path = folder->path();
    EXPECT_EQ(path.parent_path(), dir_);
    EXPECT_EQ(path.filename().string().rfind("kope-t-", 0), 0u);
    EXPECT_TRUE(fs::is_regular_file(path / "owner.lock"));
    std::ofstream(path / "artifact") << "x";
    // Its owner lives: a sweep leaves it.
    EXPECT_EQ(RemoveAbandonedTempFolders(dir_, "kope-t"), 0);
    EXPECT_TRUE(fs::exists(path / "artifact"));
    TempFolder moved = std::move(folder).value();
    EXPECT_EQ(moved.path(), path);
  }
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(TempFolderTest, AFolderWhoseOwnerWasKilledIsRemovedByTheNextSweep) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The owner dies without cleaning up, as a killed kope would.
    Result<TempFolder> folder = TempFolder::Create(dir_, "kope-t");
    std::string path = folder.ok() ? folder->path().string() : "";
    ssize_t n = write(pipe_fds[1], path.data(), path.size());
    _exit(n == static_cast<ssize_t>(path.size()) ? 0 : 1);
  }
  close(pipe_fds[1]);
  char buf[4096];
  ssize_t n = read(pipe_fds[0], buf, sizeof(buf));
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_GT(n, 0);
  const fs::path left(std::string(buf, static_cast<size_t>(n)));
  ASSERT_TRUE(fs::exists(left / "owner.lock"));

  // Not ours to remove: another prefix, and a folder without a lock file.
  fs::create_directories(dir_ / "kope-other-1");
  std::ofstream(dir_ / "kope-other-1" / "owner.lock");
  fs::create_directories(dir_ / "kope-t-nolock");
  EXPECT_EQ(RemoveAbandonedTempFolders(dir_, "kope-t"), 1);
  EXPECT_FALSE(fs::exists(left));
  EXPECT_TRUE(fs::exists(dir_ / "kope-other-1"));
  EXPECT_TRUE(fs::exists(dir_ / "kope-t-nolock"));
}

// Runs `body` in a child process, which exits with its result.
pid_t Fork(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  return pid;
}

int ExitCode(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A child process that makes a TempFolder "PREFIX-XXXXXX" in `dir` and keeps it (and lives)
// until killed.
struct Owner {
  pid_t pid = -1;
  fs::path folder;
};

Owner StartOwner(const fs::path& dir, const std::string& prefix) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  Owner owner;
  owner.pid = Fork([&] {
    close(fds[0]);
    Result<TempFolder> folder = TempFolder::Create(dir, prefix);
    const std::string line = (folder.ok() ? folder->path().string() : "") + "\n";
    if (write(fds[1], line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 1;
    for (;;) pause();
  });
  close(fds[1]);
  std::string line;
  char c = 0;
  while (read(fds[0], &c, 1) == 1 && c != '\n') line += c;
  close(fds[0]);
  owner.folder = line;
  return owner;
}

// What a kope process starting up does: its first TempFolder of the prefix, in a fresh process
// (the sweep runs once per process and place).
int StartAnother(const fs::path& dir, const std::string& prefix) {
  return ExitCode(Fork([&] { return TempFolder::Create(dir, prefix).ok() ? 0 : 1; }));
}

char ProcessState(pid_t pid) {
  Result<std::string> stat = ReadFileText("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return '?';
  const size_t close = stat->rfind(')');
  return close != std::string::npos && close + 2 < stat->size() ? (*stat)[close + 2] : '?';
}

TEST_F(TempFolderTest, TheOwnerFileNamesTheOwningProcess) {
  Result<TempFolder> folder = TempFolder::Create(dir_, "kope-t");
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  Result<std::string> owner = ReadFileText(folder->path() / "owner.lock");
  ASSERT_TRUE(owner.ok());
  const std::string expected = "kope-temp-folder-owner pid=" + std::to_string(getpid()) + " start=";
  EXPECT_EQ(owner->rfind(expected, 0), 0u) << *owner;
  EXPECT_GT(owner->size(), expected.size() + 1) << *owner;
}

TEST_F(TempFolderTest, ASigkilledOwnersFolderIsRemovedByTheNextKopeToStartAndNothingElse) {
  const Owner owner = StartOwner(dir_, "kope-k");
  ASSERT_GT(owner.pid, 0);
  ASSERT_TRUE(fs::exists(owner.folder / "owner.lock")) << owner.folder;
  std::ofstream(owner.folder / "candidate.so") << "x";

  // While its owner lives, another kope starting leaves it.
  EXPECT_EQ(StartAnother(dir_, "kope-k"), 0);
  EXPECT_TRUE(fs::exists(owner.folder / "candidate.so"));

  // Not made by TempFolder, so never removed: a folder of the right name whose lock file holds
  // no owner record, and one of another name holding a dead owner's record.
  fs::create_directories(dir_ / "kope-k-abc123");
  std::ofstream(dir_ / "kope-k-abc123" / "owner.lock");
  fs::create_directories(dir_ / "kope-k-mine");

  kill(owner.pid, SIGKILL);
  EXPECT_EQ(ExitCode(owner.pid), 128 + SIGKILL);
  fs::copy_file(owner.folder / "owner.lock", dir_ / "kope-k-mine" / "owner.lock");
  EXPECT_TRUE(fs::exists(owner.folder / "candidate.so"));
  EXPECT_EQ(StartAnother(dir_, "kope-k"), 0);
  EXPECT_FALSE(fs::exists(owner.folder));
  EXPECT_TRUE(fs::exists(dir_ / "kope-k-abc123" / "owner.lock"));
  EXPECT_TRUE(fs::exists(dir_ / "kope-k-mine" / "owner.lock"));
}

TEST_F(TempFolderTest, AnOwnerKilledButNotYetReapedIsGone) {
  const Owner owner = StartOwner(dir_, "kope-z");
  ASSERT_GT(owner.pid, 0);
  EXPECT_EQ(RemoveAbandonedTempFolders(dir_, "kope-z"), 0);
  kill(owner.pid, SIGKILL);
  for (int i = 0; i < 500 && ProcessState(owner.pid) != 'Z'; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(ProcessState(owner.pid), 'Z');
  EXPECT_EQ(RemoveAbandonedTempFolders(dir_, "kope-z"), 1);
  EXPECT_FALSE(fs::exists(owner.folder));
  EXPECT_EQ(ExitCode(owner.pid), 128 + SIGKILL);
}

TEST_F(TempFolderTest, KopesStartingAtOnceSweepTheDeadAndKeepTheirOwn) {
  std::vector<fs::path> stale;
  for (int i = 0; i < 3; ++i) {
    const Owner owner = StartOwner(dir_, "kope-r");
    ASSERT_GT(owner.pid, 0);
    kill(owner.pid, SIGKILL);
    ASSERT_EQ(ExitCode(owner.pid), 128 + SIGKILL);
    stale.push_back(owner.folder);
  }
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> kopes;
  for (int i = 0; i < 6; ++i) {
    kopes.push_back(Fork([&] {
      close(go[1]);
      char c;
      if (read(go[0], &c, 1) != 0) return 2;  // released together when the pipe closes
      Result<TempFolder> folder = TempFolder::Create(dir_, "kope-r");
      if (!folder.ok()) return 3;
      std::ofstream(folder->path() / "work") << "x";
      // The others sweep meanwhile.
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return fs::exists(folder->path() / "work") ? 0 : 4;
    }));
  }
  close(go[0]);
  close(go[1]);
  for (pid_t pid : kopes) EXPECT_EQ(ExitCode(pid), 0);
  for (const fs::path& folder : stale) EXPECT_FALSE(fs::exists(folder)) << folder;
}

}  // namespace
}  // namespace kope
