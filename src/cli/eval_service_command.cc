// `kope eval-service`: the warm evaluation service (eval_service.h) in the foreground, as
// `kope eval --warm` starts it, or --status / --stop of every service of this user.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>

#include "eval_client.h"
#include "eval_service.h"
#include "eval_service_location.h"

namespace kope::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ServiceArgs {
  double idle = 600;
  std::string key;
  bool status = false;
  bool stop = false;
};

int ConnectTo(const fs::path& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// One message to the service at `path` and its answer; Unavailable where none serves it.
Result<json> Ask(const fs::path& path, const std::string& type) {
  const int fd = ConnectTo(path);
  if (fd < 0) return Status::Unavailable("not running");
  // The answer is read even where sending failed: a refusal comes before the service reads.
  Status sent = WriteFrame(fd, {{"type", type}});
  Result<json> reply = ReadFrame(fd);
  if (!reply.ok() && !sent.ok()) reply = sent;
  close(fd);
  return reply;
}

// Lists or stops every service in the folder; a stop waits until the service has ended (it
// first finishes the evaluation it runs).
int StatusOrStop(bool stop) {
  Result<fs::path> folder = ServiceFolder();
  if (!folder.ok()) {
    std::cerr << "kope eval-service: " << folder.status().message() << "\n";
    return 2;
  }
  int running = 0;
  for (const fs::path& socket : ServiceSockets(*folder)) {
    Result<json> reply = Ask(socket, stop ? "stop" : "status");
    if (!reply.ok()) continue;  // a dead service's socket: the next service removes it
    ++running;
    const json& r = *reply;
    if (!stop) {
      std::cout << "pid " << r.value("pid", 0) << " " << (r.value("busy", false) ? "busy" : "ready")
                << ", " << r.value("served", 0) << " evaluations, " << r.value("queued", 0)
                << " waiting, last request " << static_cast<int>(r.value("idle_for", 0.0))
                << " s ago (ends after " << static_cast<int>(r.value("idle_seconds", 0.0))
                << " s without one); log " << r.value("log", "") << "\n";
      continue;
    }
    // A service removes its socket's name first when it ends.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (fs::exists(socket) && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (fs::exists(socket)) {
      std::cout << "the warm evaluation service, pid " << r.value("pid", 0)
                << ", ends after the evaluation it runs\n";
      continue;
    }
    std::cout << "stopped the warm evaluation service, pid " << r.value("pid", 0) << "\n";
  }
  if (running == 0) std::cout << "no warm evaluation service is running\n";
  return 0;
}

int Serve(const ServiceArgs& args) {
  Result<ServiceLocation> where = LocateService();
  if (!where.ok()) {
    std::cerr << "kope eval-service: " << where.status().message() << "\n";
    return 2;
  }
  if (!args.key.empty() && args.key != where->key) {
    std::cerr << "kope eval-service: the executables or environment changed since the client "
                 "asked for this service\n";
    return 1;
  }
  ServiceOptions options;
  options.idle_seconds = args.idle;
  return RunEvalService(*where, options);
}

}  // namespace

void RegisterEvalServiceCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ServiceArgs>();
  CLI::App* cmd = app.add_subcommand(
      "eval-service",
      "The warm evaluation service that `kope eval --warm` starts (--status, --stop)");
  cmd->add_option("--idle", args->idle, "Seconds without a request before the service ends")
      ->check(CLI::Range(0.1, 86400.0));
  cmd->add_option("--key", args->key, "The service the client asked for (set by kope eval)");
  cmd->add_flag("--status", args->status, "List this user's running services");
  cmd->add_flag("--stop", args->stop,
                "Stop this user's services (each after the evaluation it runs)");
  cmd->callback([args, exit_code] {
    if (args->status || args->stop) {
      *exit_code = StatusOrStop(args->stop);
    } else {
      *exit_code = Serve(*args);
    }
  });
}

}  // namespace kope::cli
