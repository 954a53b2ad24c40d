// kope-runner: the sandboxed child process that runs one compiled kernel.
//
//   kope-runner --probe [--no-bubblewrap]
//       starts a runner the way kope does and prints the protection it got
//   kope-runner --serve --control-fd N --kernels DIR [--cpu-seconds N]
//       [--max-file-bytes N] [--max-address-space-bytes N] [--max-processes N]
//       [--allow-network] [--max-data-bytes N] [--device cuda:N --max-device-bytes N]
//       the child side, started by kope::Runner; not for use by hand
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

#include "../protocol.h"
#include "confine.h"
#include "kope/runner/runner.h"
#include "kope/runner/sandbox.h"
#include "serve.h"

#if defined(__SANITIZE_ADDRESS__)
// Faults in candidate code must end the process with their signal, as in a
// normal build, and the leak check at exit would need ptrace, which seccomp denies.
extern "C" const char* __asan_default_options() {
  return "detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:"
         "handle_abort=0";
}
#endif

namespace {

constexpr char kUsage[] =
    "usage: kope-runner --probe [--no-bubblewrap]\n"
    "       kope-runner --serve --control-fd N --kernels DIR [--cpu-seconds N]\n"
    "                   [--max-file-bytes N] [--max-address-space-bytes N]\n"
    "                   [--max-processes N] [--allow-network] [--max-data-bytes N]\n"
    "                   [--device cuda:N --max-device-bytes N]\n";

int Usage(const char* problem) {
  std::fprintf(stderr, "kope-runner: %s\n%s", problem, kUsage);
  return 2;
}

bool ParseU64(std::string_view text, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

int Probe(bool use_bubblewrap) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string dir = (std::filesystem::temp_directory_path(ec) / "kope-probe-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) {
    std::fprintf(stderr, "kope-runner: mkdtemp: %s\n", std::strerror(errno));
    return 1;
  }
  kope::RunnerOptions options;
  options.runner_exe = exe;
  options.sandbox.scratch_dir = dir;
  options.sandbox.use_bubblewrap = use_bubblewrap;
  int rc = 0;
  {
    auto runner = kope::Runner::Start(options);
    if (runner.ok()) {
      std::printf("%s\n", (*runner)->protection().Describe().c_str());
    } else {
      std::printf("kope-runner could not start here: %s\nexpected protection: %s\n",
                  runner.status().ToString().c_str(),
                  kope::ProbeProtection(options.sandbox).Describe().c_str());
      rc = 1;
    }
  }
  std::filesystem::remove_all(dir, ec);
  return rc;
}

int ServeMain(int argc, char** argv) {
  kope::SandboxLimits limits;
  kope::runner_child::DeviceOptions device;
  int control_fd = -1;
  std::filesystem::path kernels;
  for (int i = 2; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--allow-network") {
      limits.allow_network = true;
      continue;
    }
    if (i + 1 >= argc) return Usage("missing value");
    std::string_view value = argv[++i];
    uint64_t n = 0;
    if (arg == "--kernels") {
      kernels = std::string(value);
      continue;
    }
    if (arg == "--device") {
      device.device = std::string(value);
      continue;
    }
    if (!ParseU64(value, &n)) return Usage("bad number");
    if (arg == "--control-fd") {
      control_fd = static_cast<int>(n);
    } else if (arg == "--cpu-seconds") {
      limits.cpu_seconds = n;
    } else if (arg == "--max-file-bytes") {
      limits.max_file_bytes = n;
    } else if (arg == "--max-address-space-bytes") {
      limits.max_address_space_bytes = n;
    } else if (arg == "--max-processes") {
      limits.max_processes = n;
    } else if (arg == "--max-data-bytes") {
      limits.max_data_bytes = n;
    } else if (arg == "--max-device-bytes") {
      device.max_device_bytes = n;
    } else {
      return Usage("unknown option");
    }
  }
  if (control_fd < 0 || fcntl(control_fd, F_GETFD) < 0) return Usage("no control socket");
  if (kernels.empty() || !kernels.is_absolute()) return Usage("--kernels needs an absolute path");
  fcntl(control_fd, F_SETFD, FD_CLOEXEC);
  setvbuf(stdout, nullptr, _IOLBF, 0);

  kope::runner_child::ConfineReport report = kope::runner_child::Confine(limits);
  kope::runner_protocol::Hello hello{report.seccomp, report.rlimits, report.notes};
  kope::runner_protocol::Writer w;
  kope::runner_protocol::WriteHello(hello, &w);
  if (!kope::runner_protocol::WriteFrame(control_fd, kope::runner_protocol::MessageType::kHello,
                                         w.payload(), -1, std::nullopt)
           .ok()) {
    return 0;  // the parent is gone
  }
  return kope::runner_child::Serve(control_fd, kernels, device);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "--serve") return ServeMain(argc, argv);
  if (argc >= 2 && std::string_view(argv[1]) == "--probe") {
    bool use_bubblewrap = true;
    for (int i = 2; i < argc; ++i) {
      if (std::string_view(argv[i]) != "--no-bubblewrap") return Usage("unknown option");
      use_bubblewrap = false;
    }
    return Probe(use_bubblewrap);
  }
  if (argc >= 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    std::printf("%s", kUsage);
    return 0;
  }
  return Usage("expected --probe or --serve");
}
