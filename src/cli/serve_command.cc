// `kope serve`: the experience graph, its runs and deployments in a browser.
//
//   kope serve [--store LOC] [--port 8765] [--bind ADDR --token T] [-v]
//
// Reads the store (never writes it) and serves the web view and its JSON API until Ctrl-C or
// SIGTERM. Loopback only unless --bind names another address; then --token (or
// $KOPE_SERVE_TOKEN) is required and every request must carry it. docs/commands/serve.md.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "kope/memory/store_location.h"
#include "kope/serve/server.h"

namespace kope::cli {
namespace {

struct ServeArgs {
  std::string store;
  serve::ServerOptions server;
  bool verbose = false;
};

int RunServe(ServeArgs args) {
  if (args.server.token.empty()) {
    const char* env = std::getenv("KOPE_SERVE_TOKEN");
    if (env != nullptr) args.server.token = env;
  }
  if (!serve::IsLoopbackAddress(args.server.bind) && args.server.token.empty()) {
    std::cerr << "kope serve: --bind " << args.server.bind
              << " is not the loopback interface: give --token (or $KOPE_SERVE_TOKEN)\n";
    return 2;
  }
  auto location = memory::ResolveStoreLocation(args.store);
  if (!location.ok()) {
    std::cerr << "kope serve: " << location.status().message() << "\n";
    return 2;
  }
  memory::StoreOptions options;
  options.create_if_missing = false;
  auto store = memory::OpenStore(*location, options);
  if (!store.ok()) {
    std::cerr << "kope serve: " << *location << ": " << store.status().message() << "\n";
    return store.status().code() == StatusCode::kNotFound ? 2 : 1;
  }
  if (args.verbose) {
    args.server.on_request = [](std::string_view method, std::string_view path) {
      std::cerr << fmt::format("{} {}\n", method, path);
    };
  }
  // Ctrl-C and SIGTERM are taken by sigwait below, not by the server's threads.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto server = serve::Server::Start(**store, args.server);
  if (!server.ok()) {
    std::cerr << "kope serve: " << server.status().message() << "\n";
    return server.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  const std::string host = args.server.bind.find(':') != std::string::npos
                               ? "[" + args.server.bind + "]"
                               : args.server.bind;
  std::cout << fmt::format("kope serve: http://{}:{}/{} (store {}); Ctrl-C stops\n", host,
                           (*server)->port(),
                           args.server.token.empty() ? "" : "?token=" + args.server.token,
                           *location)
            << std::flush;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  (*server)->Stop();
  return 0;
}

}  // namespace

void RegisterServeCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "Browse the experience graph, runs and deployments");
  cmd->add_option(
      "--store", args->store,
      "the experience store (default: $KOPE_STORE, else ~/.local/share/kope/experience.db)");
  cmd->add_option("--port", args->server.port, "port to listen on (0: any free one)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--bind", args->server.bind, "address to listen on (default: 127.0.0.1)");
  cmd->add_option("--token", args->server.token,
                  "token every request must carry (required with a non-loopback --bind)");
  cmd->add_flag("-v,--verbose", args->verbose, "log every request to stderr");
  cmd->callback([args, exit_code] { *exit_code = RunServe(*args); });
}

}  // namespace kope::cli
