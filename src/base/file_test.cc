#include "kope/base/file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace kope {
namespace {

namespace fs = std::filesystem;

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kope-file-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FileTest, ReadsEveryByte) {
  const std::string bytes("line one\nline two\0after a NUL\r\n", 31);
  std::ofstream(dir_ / "f", std::ios::binary) << bytes;
  Result<std::string> text = ReadFileText(dir_ / "f");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, bytes);
  std::ofstream(dir_ / "empty", std::ios::binary);
  EXPECT_EQ(ReadFileText(dir_ / "empty").value(), "");
}

TEST_F(FileTest, SaysWhyAFileCannotBeRead) {
  Result<std::string> missing = ReadFileText(dir_ / "absent");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), (dir_ / "absent").string() + ": no such file");
  Result<std::string> folder = ReadFileText(dir_);
  EXPECT_EQ(folder.status().code(), StatusCode::kIoError);
  EXPECT_NE(folder.status().message().find("cannot read: not a regular file"), std::string::npos);
}

TEST_F(FileTest, MakesPrivateFoldersThatDoNotCollide) {
  Result<fs::path> a = MakeTempFolder(dir_, "kope-x");
  Result<fs::path> b = MakeTempFolder(dir_, "kope-x");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ(a->parent_path(), dir_);
  EXPECT_EQ(a->filename().string().rfind("kope-x-", 0), 0u);
  EXPECT_TRUE(fs::is_directory(*a));
  EXPECT_EQ(fs::status(*a).permissions() & fs::perms::all, fs::perms::owner_all);
  Result<fs::path> missing = MakeTempFolder(dir_ / "absent", "kope-x");
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  EXPECT_NE(missing.status().message().find("cannot create a scratch folder in"),
            std::string::npos);
}

}  // namespace
}  // namespace kope
