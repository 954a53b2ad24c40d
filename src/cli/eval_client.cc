#include "eval_client.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "eval_service.h"
#include "eval_service_location.h"

namespace kope::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

bool WarmWanted(const WarmOptions& options) {
  if (options.no_warm) return false;
  if (options.warm) return true;
  const char* env = std::getenv("KOPE_EVAL_WARM");
  if (env == nullptr) return false;
  const std::string v(env);
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

int Connect(const fs::path& socket_path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Starts `kope eval-service` detached: its own session, no terminal, stdin /dev/null, stdout
// and stderr to its log, no other descriptor of ours; reparented to init (double fork).
Status StartService(const ServiceLocation& where, double idle_seconds) {
  KOPE_ASSIGN_OR_RETURN(fs::path self, SelfExecutable());
  const std::string idle = std::to_string(idle_seconds);
  std::vector<std::string> args = {self.string(), "eval-service", "--idle",
                                   idle,          "--key",        where.key};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child < 0) return Status::IoError(std::string("fork: ") + strerror(errno));
  if (child == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    const int null_fd = open("/dev/null", O_RDONLY);
    const int log_fd = open(where.log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    dup2(null_fd, STDIN_FILENO);
    dup2(log_fd >= 0 ? log_fd : null_fd, STDOUT_FILENO);
    dup2(log_fd >= 0 ? log_fd : null_fd, STDERR_FILENO);
    close_range(3, ~0U, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return Status::Ok();
}

// A connection to the service, started if none answers.
Result<int> ConnectOrStart(const ServiceLocation& where, double idle_seconds) {
  if (int fd = Connect(where.socket); fd >= 0) return fd;
  KOPE_RETURN_IF_ERROR(StartService(where, idle_seconds));
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < until) {
    if (int fd = Connect(where.socket); fd >= 0) return fd;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::Unavailable("it did not start within 20 s (its log: " + where.log.string() + ")");
}

enum class Exchange { kDone, kRetry };

// Sends the request and relays what comes back; `*exit_code` is the evaluation's.
Exchange Relay(int fd, const WarmRequest& request, const ServiceLocation& where, int* exit_code) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  // A send that fails is not the end: the service may have answered (a refusal) before it read.
  (void)WriteFrame(fd, WarmRequestToJson(request));
  bool started = false;
  while (true) {
    Result<json> m = ReadFrame(fd);
    if (!m.ok()) {
      if (!started) return Exchange::kRetry;
      if (tty && !request.quiet) std::cerr << "\r\033[K";
      std::cerr << "kope eval: the warm evaluation service ended during this evaluation ("
                << m.status().message() << "; its log: " << where.log.string()
                << "); run again, or with --no-warm to evaluate in this process\n";
      *exit_code = 2;
      return Exchange::kDone;
    }
    const std::string type = (*m)["type"].get<std::string>();
    if (type == "queued" && !request.quiet) {
      std::cerr << "kope eval: the warm service is evaluating another candidate; waiting ("
                << m->value("ahead", 1) << " ahead)\n";
    } else if (type == "started") {
      started = true;
    } else if (type == "progress" && tty && !request.quiet) {
      std::cerr << "\r\033[K" << m->value("line", "") << std::flush;
    } else if (type == "error") {
      if (m->value("retry", false) && !started) return Exchange::kRetry;
      std::cerr << "kope eval: the warm evaluation service: " << m->value("message", "") << "\n";
      *exit_code = 2;
      return Exchange::kDone;
    } else if (type == "result") {
      if (tty && !request.quiet) std::cerr << "\r\033[K" << std::flush;
      std::cout << m->value("stdout", "") << std::flush;
      std::cerr << m->value("stderr", "") << std::flush;
      *exit_code = m->value("exit_code", 2);
      return Exchange::kDone;
    }
  }
}

std::optional<int> EvaluateHere(const std::string& why) {
  std::cerr << "kope eval: no warm evaluation service (" << why << "); evaluating here\n";
  return std::nullopt;
}

}  // namespace

void AddWarmFlags(CLI::App* eval, WarmOptions* options) {
  eval->add_flag("--warm", options->warm,
                 "Evaluate in this user's warm evaluation service (started if none runs; "
                 "also KOPE_EVAL_WARM=1): the task's runners stay loaded between calls");
  eval->add_flag("--no-warm", options->no_warm,
                 "Evaluate in this process, whatever KOPE_EVAL_WARM says");
  eval->add_option("--warm-idle", options->idle_seconds,
                   "Seconds a warm service that this call starts waits for the next request")
      ->check(CLI::Range(1.0, 86400.0));
}

std::optional<int> EvaluateWarm(const WarmOptions& options, WarmRequest request, bool record) {
  if (!WarmWanted(options)) return std::nullopt;
  if (record) return EvaluateHere("--record evaluates in this process");
  std::ifstream in(request.candidate, std::ios::binary);
  if (!in) return std::nullopt;  // the local path says why
  std::ostringstream source;
  source << in.rdbuf();
  request.source = source.str();
  std::error_code ec;
  request.task = fs::absolute(request.task, ec).lexically_normal().string();
  request.candidate = fs::absolute(request.candidate, ec).lexically_normal().string();
  Result<ServiceLocation> where = LocateService();
  if (!where.ok()) return EvaluateHere(where.status().message());
  for (int attempt = 0; attempt < 3; ++attempt) {
    Result<int> fd = ConnectOrStart(*where, options.idle_seconds);
    if (!fd.ok()) return EvaluateHere(fd.status().message());
    int exit_code = 2;
    const Exchange done = Relay(*fd, request, *where, &exit_code);
    close(*fd);
    if (done == Exchange::kDone) return exit_code;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return EvaluateHere("the service kept ending before it began the evaluation");
}

}  // namespace kope::cli
