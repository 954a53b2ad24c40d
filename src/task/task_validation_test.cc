// Data-driven tests of every validation rule of task.toml.
//
// Each file in testdata/invalid/ is the task in testdata/minimal/ with one
// mistake; its first line is "# expect: <text>", a part of the error message
// that must follow "task.toml: ". The test loads each one from a scratch
// folder that also holds the minimal task's baseline.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "kope/base/file.h"
#include "kope/task/task.h"
#include "scratch_folder.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

const fs::path kTestdata = fs::path(kope::testing::SourceDir()) / "src/task/testdata";

struct InvalidCase {
  std::string name;
  std::string toml;
  std::string expected;
};

std::vector<InvalidCase> ReadInvalidCases() {
  std::vector<InvalidCase> cases;
  for (const fs::directory_entry& entry : fs::directory_iterator(kTestdata / "invalid")) {
    if (entry.path().extension() != ".toml") continue;
    InvalidCase c;
    c.name = entry.path().stem().string();
    c.toml = ReadFileText(entry.path()).value_or("");
    const std::string prefix = "# expect: ";
    if (c.toml.rfind(prefix, 0) == 0) {
      c.expected = c.toml.substr(prefix.size(), c.toml.find('\n') - prefix.size());
    }
    cases.push_back(std::move(c));
  }
  std::sort(cases.begin(), cases.end(),
            [](const InvalidCase& a, const InvalidCase& b) { return a.name < b.name; });
  return cases;
}

TEST(TaskValidationTest, MinimalTaskIsValid) {
  Result<Task> task = LoadTask(kTestdata / "minimal");
  ASSERT_TRUE(task.ok()) << task.status().ToString();
  EXPECT_EQ(task->name, "negate");
}

TEST(TaskValidationTest, EveryInvalidCaseFailsWithItsMessage) {
  const std::vector<InvalidCase> cases = ReadInvalidCases();
  ASSERT_GE(cases.size(), 100u) << "testdata/invalid lost its cases";
  const std::string baseline = ReadFileText(kTestdata / "minimal/baseline.cc").value_or("");
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_FALSE(c.expected.empty()) << "first line must be '# expect: <message part>'";
    ScratchFolder scratch;
    const fs::path dir = scratch.path() / "task";
    scratch.Write("task/task.toml", c.toml);
    scratch.Write("task/baseline.cc", baseline);
    // A file beside the task folder, so that escapes fail for the escape
    // itself rather than for a missing file.
    scratch.Write("baseline.cc", baseline);

    Result<Task> task = LoadTask(dir);
    ASSERT_FALSE(task.ok()) << "loaded although it should fail with: " << c.expected;
    EXPECT_EQ(task.status().code(), StatusCode::kInvalidArgument) << task.status().ToString();
    const std::string& message = task.status().message();
    const std::string file = (dir / "task.toml").string();
    EXPECT_EQ(message.rfind(file + ": ", 0), 0u) << message;
    EXPECT_NE(message.find("task.toml: " + c.expected), std::string::npos)
        << "expected: " << c.expected << "\n     got: " << message;
  }
}

}  // namespace
}  // namespace kope
