// `kope eval --warm` and `kope eval-service` as a user runs them: the same verdicts and JSON as
// an evaluation in kope's own process, a service that ends when idle, stopped, or rebuilt, a
// second client that waits its turn, a service killed mid-evaluation, another user refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "eval_wire.h"
#include "kope/base/subprocess.h"
#include "testing/test_paths.h"

namespace kope::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kSource = kope::testing::SourceDir();
const fs::path kBinary = kope::testing::BinaryDir();

class EvalService : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kope-warm-test-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms::owner_all);
    services_ = dir_ / "services";
  }
  void TearDown() override {
    Kope({"eval-service", "--stop"});
    fs::remove_all(dir_);
  }

  ProcessResult Kope(std::vector<std::string> args, const fs::path& exe = kBinary / "kope") {
    args.insert(args.begin(), exe.string());
    ProcessOptions options;
    options.timeout_seconds = 300;
    options.extra_env = {"KOPE_CACHE_DIR=" + (kBinary / "test-cache").string(),
                         "KOPE_EVAL_SERVICE_DIR=" + services_.string()};
    auto r = RunProcess(args, options);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ProcessResult{};
  }
  // The log of every service that ran, for failure messages.
  std::string Logs() {
    std::string all;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(services_, ec)) {
      if (e.path().extension() != ".log") continue;
      std::ifstream in(e.path());
      all += std::string(std::istreambuf_iterator<char>(in), {});
    }
    return all;
  }
  // Polls `kope eval-service --status` until its output holds `text`.
  bool StatusShows(const std::string& text, double seconds, std::string* last = nullptr) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      ProcessResult r = Kope({"eval-service", "--status"});
      if (last != nullptr) *last = r.output;
      if (r.output.find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  int ServicePid() {
    ProcessResult r = Kope({"eval-service", "--status"});
    const size_t at = r.output.find("pid ");
    return at == std::string::npos ? -1 : std::stoi(r.output.substr(at + 4));
  }
  static json Parse(const std::string& output) {
    const size_t at = output.find('{');
    return at == std::string::npos ? json() : json::parse(output.substr(at), nullptr, false);
  }
  static std::string Example(const std::string& name) {
    return (kSource / "examples" / name).string();
  }
  static std::string Testdata(const std::string& name) {
    return (kSource / "src/torch_bridge/testdata" / name).string();
  }
  static bool HaveBridge() {
    const char* py = std::getenv("KOPE_PYTHON");
    return (py != nullptr && *py != '\0') || fs::exists(kSource / ".venv/bin/python3");
  }
  // The fields that do not depend on timing or on runners kept: what the verdict rests on.
  static void ExpectSameVerdict(const json& local, const json& warm) {
    ASSERT_TRUE(local.is_object()) << local;
    ASSERT_TRUE(warm.is_object()) << warm;
    for (const char* field :
         {"verdict", "task", "candidate", "trials", "size_sets", "protection", "timing_policy"}) {
      EXPECT_EQ(local.value(field, json()), warm.value(field, json())) << field;
    }
    EXPECT_EQ(local.contains("mismatch"), warm.contains("mismatch"));
    if (local.contains("mismatch") && warm.contains("mismatch")) {
      EXPECT_EQ(local["mismatch"].value("reason", ""), warm["mismatch"].value("reason", ""));
    }
  }
  void CompareLocalAndWarm(const std::string& task, const std::string& candidate,
                           int expected_exit) {
    ProcessResult local = Kope({"eval", "--json", "-q", task, candidate});
    ASSERT_EQ(local.exit_code, expected_exit) << local.output;
    for (int i = 0; i < 2; ++i) {  // the first starts the service, the second finds it
      ProcessResult warm = Kope({"eval", "--warm", "--json", "-q", task, candidate});
      ASSERT_EQ(warm.exit_code, expected_exit) << warm.output << Logs();
      EXPECT_EQ(warm.output.find("evaluating here"), std::string::npos) << warm.output;
      ExpectSameVerdict(Parse(local.output), Parse(warm.output));
      if (i == 1) {
        EXPECT_GT(Parse(warm.output).value("runners_reused", 0), 0) << warm.output;
      }
    }
  }
  fs::path dir_;
  fs::path services_;
};

TEST_F(EvalService, NativeCandidateGetsTheLocalVerdictAndReusesRunners) {
  CompareLocalAndWarm(Example("gelu"), Example("gelu") + "/optimized.cc", 0);
  // The service stays for the next call, private to this user.
  EXPECT_TRUE(StatusShows("ready", 5)) << Logs();
  EXPECT_EQ(fs::status(services_).permissions() & fs::perms::all, fs::perms::owner_all);
}

TEST_F(EvalService, TorchProblemGetsTheLocalVerdict) {
  if (!HaveBridge()) GTEST_SKIP() << "no Python bridge (scripts/setup makes .venv)";
  const std::string problem = Testdata("problems/scaled_relu.py");
  CompareLocalAndWarm(problem, Testdata("candidates/scaled_relu_new.py"), 0);
}

TEST_F(EvalService, BadInputExitsAsLocally) {
  const std::string missing = (dir_ / "no-such-task").string();
  ProcessResult local = Kope({"eval", missing, Example("gelu") + "/optimized.cc"});
  ProcessResult warm = Kope({"eval", "--warm", missing, Example("gelu") + "/optimized.cc"});
  EXPECT_EQ(local.exit_code, 2);
  EXPECT_EQ(warm.exit_code, 2);
  EXPECT_EQ(warm.output, local.output);
}

TEST_F(EvalService, EndsWhenIdleAndWhenStopped) {
  ProcessResult r = Kope({"eval", "--warm", "--warm-idle", "1", "-q", Example("gelu"),
                          Example("gelu") + "/optimized.cc"});
  ASSERT_EQ(r.exit_code, 0) << r.output << Logs();
  std::string last;
  EXPECT_TRUE(StatusShows("no warm evaluation service", 15, &last)) << last << Logs();
  EXPECT_NE(Logs().find("ended: idle"), std::string::npos) << Logs();

  r = Kope({"eval", "--warm", "-q", Example("gelu"), Example("gelu") + "/optimized.cc"});
  ASSERT_EQ(r.exit_code, 0) << r.output << Logs();
  ProcessResult stop = Kope({"eval-service", "--stop"});
  EXPECT_NE(stop.output.find("stopped the warm evaluation service"), std::string::npos)
      << stop.output;
  EXPECT_TRUE(StatusShows("no warm evaluation service", 5, &last)) << last;
}

TEST_F(EvalService, SecondClientWaitsItsTurn) {
  const std::string task = Example("gelu"), candidate = Example("gelu") + "/optimized.cc";
  auto first = std::async(std::launch::async, [&] {
    return Kope({"eval", "--warm", "--confirm", "-q", task, candidate});
  });
  ASSERT_TRUE(StatusShows("busy", 60)) << Logs();
  ProcessResult second = Kope({"eval", "--warm", task, candidate});
  ProcessResult one = first.get();
  EXPECT_EQ(one.exit_code, 0) << one.output << Logs();
  EXPECT_EQ(second.exit_code, 0) << second.output << Logs();
  EXPECT_NE(second.output.find("waiting (1 ahead)"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("valid"), std::string::npos) << second.output;
}

TEST_F(EvalService, ServiceKilledMidEvaluationIsAClearError) {
  const std::string task = Example("gelu"), candidate = Example("gelu") + "/optimized.cc";
  auto client = std::async(std::launch::async, [&] {
    return Kope({"eval", "--warm", "--confirm", "-q", task, candidate});
  });
  ASSERT_TRUE(StatusShows("busy", 60)) << Logs();
  const int pid = ServicePid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  ProcessResult r = client.get();
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("ended during this evaluation"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--no-warm"), std::string::npos) << r.output;
  // The next call starts a new service over the dead one's socket.
  ProcessResult again = Kope({"eval", "--warm", "-q", task, candidate});
  EXPECT_EQ(again.exit_code, 0) << again.output << Logs();
  EXPECT_EQ(again.output.find("evaluating here"), std::string::npos) << again.output;
}

TEST_F(EvalService, EndsWhenItsExecutableIsReplaced) {
  const fs::path bin = dir_ / "bin";
  fs::create_directories(bin);
  fs::copy_file(kBinary / "kope", bin / "kope");
  fs::copy_file(kBinary / "kope-runner", bin / "kope-runner");
  ProcessResult r = Kope(
      {"eval", "--warm", "-q", Example("gelu"), Example("gelu") + "/optimized.cc"}, bin / "kope");
  ASSERT_EQ(r.exit_code, 0) << r.output << Logs();
  ASSERT_TRUE(StatusShows("ready", 5)) << Logs();
  // A rebuild replaces the file (a new inode), as a linker or an install does.
  fs::copy_file(kBinary / "kope", bin / "kope.new");
  fs::rename(bin / "kope.new", bin / "kope");
  std::string last;
  EXPECT_TRUE(StatusShows("no warm evaluation service", 15, &last)) << last << Logs();
  EXPECT_NE(Logs().find("the kope executables changed"), std::string::npos) << Logs();
}

TEST_F(EvalService, RefusesAnotherUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to connect as another user";
  ProcessResult r =
      Kope({"eval", "--warm", "-q", Example("gelu"), Example("gelu") + "/optimized.cc"});
  ASSERT_EQ(r.exit_code, 0) << r.output << Logs();
  fs::path sock_path;
  for (const auto& e : fs::directory_iterator(services_)) {
    if (e.path().extension() == ".sock") sock_path = e.path();
  }
  ASSERT_FALSE(sock_path.empty());
  // Open the way to the socket, so that only its own check stands between.
  for (const fs::path& p : {dir_, services_}) fs::permissions(p, fs::perms::all);
  fs::permissions(sock_path, fs::perms::all);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, sock_path.c_str(), sizeof addr.sun_path - 1);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) _exit(4);
    // The service refuses before it reads: the send may fail (EPIPE) with the answer waiting.
    (void)WriteFrame(fd, {{"type", "status"}});
    Result<json> reply = ReadFrame(fd);
    if (!reply.ok()) _exit(6);
    const bool refused = (*reply)["type"] == "error" &&
                         reply->value("message", "").find("its own user") != std::string::npos;
    _exit(refused ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: answered; 3, 4, 6: could not ask";
  EXPECT_NE(Logs().find("refused a connection from another user"), std::string::npos) << Logs();
}

}  // namespace
}  // namespace kope::cli
