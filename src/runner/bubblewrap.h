// Building bubblewrap command lines and probing whether bwrap works here.
// Internal to the runner component; the public face is kope/runner/sandbox.h.
#ifndef KOPE_SRC_RUNNER_BUBBLEWRAP_H_
#define KOPE_SRC_RUNNER_BUBBLEWRAP_H_

#include <filesystem>
#include <string>
#include <vector>

#include "kope/runner/sandbox.h"

namespace kope::sandbox_internal {

struct BubblewrapProbe {
  bool works = false;
  std::string path;  // the bwrap binary
  std::string why;   // when it does not work
};

// Finds bwrap in PATH and runs a trivial program under the same namespaces and
// mounts the runner uses. Probed once per process; thread-safe.
const BubblewrapProbe& ProbeBubblewrap();

// How the scratch folder appears inside the sandbox.
enum class ScratchLayout {
  // Bound read-write at its own path; the working folder.
  kReadWrite,
  // Bound read-only at its own path, with a size-limited tmpfs on
  // scratch/work (which must exist) as the working folder: the runner's layout.
  kRunnerWork,
};

// The full bwrap command line; `scratch` must be an absolute, canonical path.
std::vector<std::string> BubblewrapArgv(const std::string& bwrap, const SandboxOptions& options,
                                        const std::filesystem::path& scratch, ScratchLayout layout,
                                        const std::vector<std::string>& command);

// The protection the parent can vouch for when the child is started with (or
// without) bubblewrap; seccomp and rlimits are predicted, the child reports them.
Protection ParentProtection(const SandboxOptions& options, bool bubblewrap_used);

// Which optional rlimits the child sets, and notes on those it does not. Used
// by the child for what it does and by the parent to predict it.
struct RlimitPlan {
  bool address_space = true;
  bool data = false;
  bool processes = true;
  std::vector<std::string> notes;
};
RlimitPlan PlanRlimits(const SandboxLimits& limits, bool is_root, bool own_user_namespace);

// Whether this kernel supports seccomp filters; `why` says why not.
bool SeccompSupported(std::string* why);

// True in builds with AddressSanitizer, where RLIMIT_AS cannot be used.
constexpr bool kAddressSanitizer =
#if defined(__SANITIZE_ADDRESS__)
    true;
#else
    false;
#endif

}  // namespace kope::sandbox_internal

#endif  // KOPE_SRC_RUNNER_BUBBLEWRAP_H_
