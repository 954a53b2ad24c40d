// Hostile KernelBench problem files (testdata/hostile/cases.toml): a problem file is code, and
// its import must contain it like a PyTorch candidate. The cases are imported side by side (each
// pays PyTorch's import); skips where there is no bridge or no working bubblewrap.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>  // setenv
#include <sys/socket.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "kope/base/file.h"
#include "kope/runner/sandbox.h"
#include "kope/torch_bridge/bridge.h"
#include "testing/test_paths.h"

namespace kope {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSecret = "kope-hostile-test-secret-7f3a";

struct HostileCase {
  std::string problem;
  std::string code;
  std::string error;
  double timeout_seconds = 120;
};

std::vector<HostileCase> LoadCases() {
  const fs::path file =
      fs::path(kope::testing::SourceDir()) / "src/torch_bridge/testdata/hostile/cases.toml";
  toml::table doc = toml::parse_file(file.string());
  std::vector<HostileCase> cases;
  for (const toml::node& node : *doc["case"].as_array()) {
    const toml::table& t = *node.as_table();
    cases.push_back({t["problem"].value_or(std::string()), t["code"].value_or(std::string()),
                     t["error"].value_or(std::string()), t["timeout_seconds"].value_or(120.0)});
  }
  return cases;
}

void ReplaceAll(std::string* text, const std::string& from, const std::string& to) {
  for (size_t at = text->find(from); at != std::string::npos; at = text->find(from, at)) {
    text->replace(at, from.size(), to);
    at += to.size();
  }
}

// A TCP listener on 127.0.0.1 that accepts nothing itself: a connection that reached it waits
// in its backlog.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 8) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port = ntohs(addr.sin_port);
  }
  ~Listener() {
    if (fd >= 0) close(fd);
  }
  bool Connected() const { return accept(fd, nullptr, nullptr) >= 0; }
};

// Processes whose command line mentions `text` (the folder the problems are in).
std::vector<std::string> ProcessesMentioning(const std::string& text) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFileText(entry.path() / "cmdline").value_or("");
    ReplaceAll(&cmdline, std::string(1, '\0'), " ");
    if (cmdline.find(text) != std::string::npos) found.push_back(pid + ": " + cmdline);
  }
  return found;
}

// Every file under `dir`, as one text.
std::string AllText(const fs::path& dir) {
  std::string text;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir, ec)) {
    if (entry.is_regular_file(ec)) text += ReadFileText(entry.path()).value_or("");
  }
  return text;
}

TEST(TorchBridgeHostileProblems, EveryCaseIsContainedAndEndsInItsError) {
  Result<TorchBridge> bridge = FindTorchBridge();
  if (!bridge.ok()) GTEST_SKIP() << bridge.status().message();
  if (!BubblewrapAvailable()) GTEST_SKIP() << "bubblewrap does not work here";
  Result<fs::path> root = MakeTempFolder("", "kope-hostile-test");
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  const fs::path secret = *root / "secret.txt";
  std::ofstream(secret) << kSecret;
  setenv("KOPE_HOSTILE_TEST_API_KEY", kSecret, 1);
  Listener listener;
  ASSERT_GT(listener.port, 0);

  const fs::path templates =
      fs::path(kope::testing::SourceDir()) / "src/torch_bridge/testdata/hostile";
  const std::vector<HostileCase> cases = LoadCases();
  std::vector<std::string> sources;
  std::vector<std::future<Result<Task>>> imports;
  for (const HostileCase& c : cases) {
    const fs::path problem = *root / c.problem;
    std::string source = ReadFileText(templates / c.problem).value_or("");
    ReplaceAll(&source, "@SECRET@", secret.string());
    ReplaceAll(&source, "@SELF@", problem.string());
    ReplaceAll(&source, "@PORT@", std::to_string(listener.port));
    std::ofstream(problem) << source;
    sources.push_back(source);
    ProblemImportOptions options;
    options.timeout_seconds = c.timeout_seconds;
    const fs::path out = *root / ("out_" + problem.stem().string());
    imports.push_back(std::async(std::launch::async, [&bridge, problem, out, options] {
      return ImportKernelBenchProblem(*bridge, problem, out, options);
    }));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const HostileCase& c = cases[i];
    Result<Task> task = imports[i].get();
    const Status status = task.ok() ? Status::Ok() : task.status();
    EXPECT_EQ(StatusCodeName(status.code()), c.code) << c.problem << ": " << status.ToString();
    EXPECT_NE(status.message().find(c.error), std::string::npos)
        << c.problem << ": " << status.ToString();
    if (!task.ok()) {
      EXPECT_NE(status.message().find((*root / c.problem).string()), std::string::npos)
          << c.problem << ": the error names no problem file: " << status.ToString();
    }
    EXPECT_EQ(status.message().find(kSecret), std::string::npos) << c.problem;
    EXPECT_EQ(ReadFileText(*root / c.problem).value_or(""), sources[i]) << c.problem;
  }
  unsetenv("KOPE_HOSTILE_TEST_API_KEY");
  EXPECT_FALSE(listener.Connected()) << "a problem's code reached the host's loopback";
  EXPECT_EQ(ProcessesMentioning(root->string()), std::vector<std::string>{});
  std::error_code ec;
  fs::remove(secret, ec);
  EXPECT_EQ(AllText(*root).find(kSecret), std::string::npos) << "the secret reached a task file";
  fs::remove_all(*root, ec);
}

}  // namespace
}  // namespace kope
