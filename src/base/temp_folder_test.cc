#include "kope/base/temp_folder.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

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

}  // namespace
}  // namespace kope
