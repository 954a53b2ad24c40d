// Where the warm evaluation service of this user and this kope build listens, and what names
// a build: shared by `kope eval --warm` (the client) and `kope eval-service` (the service).
//
// The folder is private: $KOPE_EVAL_SERVICE_DIR if set, else $XDG_RUNTIME_DIR/kope-eval, else
// kope-eval-UID in the system temp folder; made 0700, and refused (FailedPrecondition) when it
// is a link, another user's, or open to others. In it, for each service,
// eval-UID-KEY.{sock,lock,log}: KEY is a hash of the kope and kope-runner executables' bytes
// and of the environment variables that change what an evaluation does (KOPE_*, PATH, CUDA_*,
// OMP_*, torch's and Triton's...), so that a client only ever reaches a service that would
// evaluate as it would itself.
#ifndef KOPE_SRC_CLI_EVAL_SERVICE_LOCATION_H_
#define KOPE_SRC_CLI_EVAL_SERVICE_LOCATION_H_

#include <filesystem>
#include <string>
#include <vector>

#include "kope/base/status.h"

namespace kope::cli {

struct ServiceLocation {
  std::filesystem::path folder;
  std::filesystem::path socket;
  std::filesystem::path lock;
  std::filesystem::path log;
  std::string key;
};

// The private folder (made if missing) and this process's service in it.
Result<ServiceLocation> LocateService();
// The private folder only, made if missing and checked.
Result<std::filesystem::path> ServiceFolder();
// Every service socket in the folder (any build of this user's), for --status and --stop.
std::vector<std::filesystem::path> ServiceSockets(const std::filesystem::path& folder);

// The running kope executable (/proc/self/exe).
Result<std::filesystem::path> SelfExecutable();

// What identifies the files of a build on disk (kope, kope-runner): device, inode, size and
// modification time of each. Two stamps differ once either file is replaced or rewritten.
std::string ExecutablesStamp();

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_EVAL_SERVICE_LOCATION_H_
