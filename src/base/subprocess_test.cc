#include "kope/base/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace kope {
namespace {

// A process that is gone or a zombie waiting for a reaper that is not us.
bool ProcessGoneNow(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] == 'Z' ||
         line[paren + 2] == 'X';
}

// SIGKILL is delivered asynchronously: a killed process may take a moment to
// die. Waits up to 5 s; a process that survives that long was not killed.
bool ProcessGone(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    if (ProcessGoneNow(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(RunProcessTest, ReportsExitCodeAndOutput) {
  auto r = RunProcess({"sh", "-c", "echo out; echo err >&2; exit 7"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_EQ(r->term_signal, 0);
  EXPECT_FALSE(r->timed_out);
  EXPECT_FALSE(r->ok());
  EXPECT_NE(r->output.find("out\n"), std::string::npos);
  EXPECT_NE(r->output.find("err\n"), std::string::npos);
  EXPECT_GT(r->seconds, 0.0);
}

TEST(RunProcessTest, SuccessIsOk) {
  auto r = RunProcess({"true"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok());
  EXPECT_EQ(r->exit_code, 0);
}

TEST(RunProcessTest, ReportsTheKillingSignal) {
  auto r = RunProcess({"sh", "-c", "kill -TERM $$"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->term_signal, SIGTERM);
  EXPECT_FALSE(r->ok());
}

TEST(RunProcessTest, MissingProgramIsNotFound) {
  auto r = RunProcess({"kope-no-such-program-anywhere"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(RunProcessTest, ExecFailureIsAnIoErrorWithTheReason) {
  auto r = RunProcess({"/nonexistent/kope/tool"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("No such file"), std::string::npos) << r.status().message();
}

TEST(RunProcessTest, BadWorkingDirIsAnIoError) {
  ProcessOptions options;
  options.working_dir = "/nonexistent/kope/dir";
  auto r = RunProcess({"true"}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("chdir"), std::string::npos) << r.status().message();
}

TEST(RunProcessTest, WorkingDirAndEnvironment) {
  ProcessOptions options;
  options.working_dir = "/usr";
  options.extra_env = {"KOPE_TEST_VALUE=forty two", "PATH=/usr/bin:/bin"};
  auto r = RunProcess({"sh", "-c", "pwd; echo \"$KOPE_TEST_VALUE\""}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->output, "/usr\nforty two\n");
}

TEST(RunProcessTest, TimeoutKillsTheWholeGroupIncludingGrandchildren) {
  ProcessOptions options;
  options.timeout_seconds = 0.5;
  // The shell starts a grandchild, prints its pid, then waits for ever.
  auto r = RunProcess({"sh", "-c", "sleep 1000 & echo $!; sleep 1000"}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->ok());
  EXPECT_EQ(r->term_signal, SIGKILL);
  pid_t grandchild = std::stoi(r->output);
  ASSERT_GT(grandchild, 1);
  EXPECT_TRUE(ProcessGone(grandchild)) << "grandchild " << grandchild << " survived";
}

TEST(RunProcessTest, LeftoverBackgroundProcessesAreKilledWhenTheChildExits) {
  ProcessOptions options;
  options.timeout_seconds = 300;
  // Without the group kill this would wait for `sleep` holding the pipe open.
  auto r = RunProcess({"sh", "-c", "sleep 1000 & echo $!"}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->exit_code, 0);
  pid_t grandchild = std::stoi(r->output);
  EXPECT_TRUE(ProcessGone(grandchild));
}

TEST(RunProcessTest, ChildRunsInItsOwnSessionAndGroup) {
  auto r = RunProcess({"sh", "-c", "echo $$; ps -o pgid= -o sid= -p $$"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::istringstream in(r->output);
  long pid = 0, pgid = 0, sid = 0;
  in >> pid >> pgid >> sid;
  EXPECT_EQ(pid, pgid);
  EXPECT_EQ(pid, sid);
  EXPECT_NE(sid, getsid(0));
}

TEST(RunProcessTest, OutputIsBoundedKeepingTheHead) {
  ProcessOptions options;
  options.max_output_bytes = 1000;
  auto r = RunProcess({"sh", "-c", "echo first; head -c 100000 /dev/zero | tr '\\0' a"}, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0);
  ASSERT_EQ(r->output.size(), 1000u);
  EXPECT_EQ(r->output.substr(0, 6), "first\n");
  EXPECT_EQ(r->dropped_bytes, 100006u - 1000u);
}

TEST(RunProcessTest, ChildInheritsOnlyStandardDescriptors) {
  // Deliberately without O_CLOEXEC: RunProcess must not rely on the flag.
  int leaky = open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 0);
  auto r = RunProcess({"ls", "/proc/self/fd"});
  close(leaky);
  ASSERT_TRUE(r.ok());
  // ls sees 0, 1, 2 and the descriptor it opened on the folder itself.
  EXPECT_EQ(r->output, "0\n1\n2\n3\n");
}

TEST(RunProcessTest, IgnoredSignalsAreResetInTheChild) {
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &ignore, &old);
  auto r = RunProcess({"sh", "-c", "kill -TERM $$; exit 3"});
  sigaction(SIGTERM, &old, nullptr);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->term_signal, SIGTERM);
}

TEST(RunProcessTest, ConcurrentCallsDoNotInterfere) {
  std::vector<std::thread> threads;
  std::vector<std::string> outputs(6);
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([i, &outputs] {
      auto r = RunProcess({"sh", "-c", "echo " + std::to_string(i)});
      if (r.ok()) outputs[i] = r->output;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(outputs[i], std::to_string(i) + "\n");
}

TEST(SpawnProcessTest, MapsDescriptorsAndReplacesTheEnvironment) {
  int to_child[2], from_child[2];
  ASSERT_EQ(pipe2(to_child, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(from_child, O_CLOEXEC), 0);
  setenv("KOPE_PARENT_ONLY", "secret", 1);
  SpawnOptions options;
  options.env = {"ONLY=this", "PATH=/usr/bin:/bin"};
  options.fds = {{1, from_child[1]}, {5, to_child[0]}};
  auto pid = SpawnProcess(
      {"sh", "-c", "read line <&5; echo \"$line $ONLY ${KOPE_PARENT_ONLY:-none}\""}, options);
  unsetenv("KOPE_PARENT_ONLY");
  close(to_child[0]);
  close(from_child[1]);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  EXPECT_EQ(getpgid(*pid), *pid);
  ASSERT_EQ(write(to_child[1], "hello\n", 6), 6);
  close(to_child[1]);
  char buf[128] = {};
  ssize_t n = 0, got = 0;
  while ((n = read(from_child[0], buf + got, sizeof(buf) - 1 - got)) > 0) got += n;
  close(from_child[0]);
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(std::string(buf), "hello this none\n");
}

TEST(SpawnProcessTest, ExecFailureIsAStatus) {
  auto pid = SpawnProcess({"/nonexistent/kope-runner"}, SpawnOptions{});
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace kope
