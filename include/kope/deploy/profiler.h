// Running the Python side of `kope deploy profile` (python/kope_deploy/profile.py), which
// profiles the workload by phase, ranks opportunities and extracts task folders.
//
// The child is started with the bridge's interpreter (FindTorchBridge: $KOPE_PYTHON, else the
// project's .venv) as `python3 -m kope_deploy.profile --workload DIR/workload.json --out DIR`,
// with the repository's python/ folder on PYTHONPATH. It is not sandboxed: the model and any
// script are the user's own code. It writes one JSON object per line on stdout (progress, then
// "done" or "error"; see docs/commands/deploy.md); its stderr (tracebacks, warnings) goes to a
// log file, whose tail is shown when it fails.
//
// `kope deploy`'s validation step (python/kope_deploy/validate.py) speaks the same protocol, its
// "done" line naming validation.json: PythonDeployCommand starts any module of kope_deploy so.
//
// RunProfiler blocks until the child ends and reports each progress line to `on_progress` as it
// arrives, from the calling thread. Failing to start is a Status; how the child ended is a value.
#ifndef KOPE_DEPLOY_PROFILER_H_
#define KOPE_DEPLOY_PROFILER_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kope/base/status.h"

namespace kope::deploy {

// One line of the child's stdout.
struct ProfilerEvent {
  enum class Type { kProgress, kDone, kError, kText };
  Type type = Type::kText;
  std::string step;  // progress: "build", "prefill", "decode", "extract"
  int64_t entry = -1;
  int64_t done = 0;
  int64_t total = 0;
  std::string message;  // progress and error; kText: the line itself (not JSON)
  std::string profile;  // done: the path of the result file (profile.json, validation.json)
};

// Parses one line; a line that is not a JSON object of a known type is kText.
ProfilerEvent ParseProfilerLine(std::string_view line);

// A progress event in one line: "prefill entry 1/2: 3/8 message".
std::string ProgressText(const ProfilerEvent& event);

// What to start.
struct ProfilerCommand {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // the whole environment, NAME=VALUE
  std::filesystem::path log;     // the child's stderr goes here
};

// The command for the Python side (see the header comment). NotFound, saying what to run, when
// the bridge is not set up (no interpreter, or one without PyTorch).
Result<ProfilerCommand> PythonProfilerCommand(const std::filesystem::path& workload_json,
                                              const std::filesystem::path& out_dir);

// `python3 -m kope_deploy.<module> ARGS...`, set up as the profiler is, its stderr to `log`.
Result<ProfilerCommand> PythonDeployCommand(const std::string& module,
                                            const std::vector<std::string>& args,
                                            const std::filesystem::path& log);

struct ProfilerResult {
  int exit_code = -1;             // the child's, or -1 when a signal ended it
  bool ok = false;                // exit code 0 and a "done" line
  std::filesystem::path profile;  // from the "done" line
  std::string error;              // when !ok: the "error" line's message, or what went wrong
  std::string log_tail;           // when !ok: the last lines of the log
};

Result<ProfilerResult> RunProfiler(const ProfilerCommand& command,
                                   const std::function<void(const ProfilerEvent&)>& on_progress);

}  // namespace kope::deploy

#endif  // KOPE_DEPLOY_PROFILER_H_
