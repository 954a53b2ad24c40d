// In its own test binary: the trace's file is read from the environment at the process's first
// request.
#include "request_trace.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runner_test_support.h"

namespace kope {
namespace {

using testing::AffineCall;
using testing::CompileKernel;
using testing::RunnerFixture;

std::vector<std::vector<std::string>> Lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> lines;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, '\t');) fields.push_back(f);
    lines.push_back(fields);
  }
  return lines;
}

class RequestTraceTest : public RunnerFixture {};

TEST_P(RequestTraceTest, EveryRequestAppendsALine) {
  static const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("kope_trace_" + std::to_string(getpid()) + ".tsv");
  static bool set = [] {
    std::filesystem::remove(path);
    return setenv("KOPE_TRACE_REQUESTS", path.c_str(), 1) == 0;
  }();
  ASSERT_TRUE(set);
  const size_t before = Lines(path).size();
  auto arena = Arena(4096);
  ASSERT_NE(arena, nullptr);
  auto runner = Prepared(CompileKernel("affine"), *arena);  // load, map
  ASSERT_NE(runner, nullptr);
  auto out = runner->Call(AffineCall(), 30);
  ASSERT_TRUE(out.ok()) << out.status().ToString();

  const auto lines = Lines(path);
  ASSERT_EQ(lines.size(), before + (before == 0 ? 4u : 3u));
  EXPECT_EQ(lines[0][0], "t_s");
  const auto& load = lines[lines.size() - 3];
  const auto& map = lines[lines.size() - 2];
  const auto& last = lines.back();
  ASSERT_EQ(last.size(), 8u);
  EXPECT_EQ(load[2], "load");
  EXPECT_EQ(map[2], "map");
  EXPECT_EQ(map[3], std::to_string(arena->size()));
  EXPECT_EQ(last[2], "call");
  EXPECT_EQ(last[1], std::to_string(runner->pid()));
  EXPECT_EQ(map[1], last[1]);
  EXPECT_NEAR(std::stod(last[4]), out->parent_seconds * 1e3, 0.0015);
  EXPECT_NEAR(std::stod(last[5]), out->kernel_seconds() * 1e3, 0.0015);
  EXPECT_EQ(last[7], "ok");
}

INSTANTIATE_TEST_SUITE_P(Modes, RequestTraceTest, ::testing::Bool(), testing::ModeName);

}  // namespace
}  // namespace kope
