// Steps `kope deploy profile` and `kope deploy` share: a progress line, running a Python step of
// kope_deploy (the profiler, the validation) and writing a file.
#ifndef KOPE_SRC_CLI_DEPLOY_STEPS_H_
#define KOPE_SRC_CLI_DEPLOY_STEPS_H_

#include <filesystem>
#include <string>

#include "kope/base/status.h"
#include "kope/deploy/profiler.h"

namespace kope::cli {

// One line, rewritten in place on a terminal; nothing otherwise.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled);
  ~ProgressLine() { Clear(); }
  void Show(const deploy::ProfilerEvent& event);
  void Clear();

 private:
  bool enabled_;
  bool shown_ = false;
};

Status WriteText(const std::filesystem::path& path, const std::string& text);

// Runs a Python step with a progress line (unless `quiet`). On failure prints the step's error
// and its log's tail after "`what`: " and returns its exit code (1 when it gave none); else 0
// with the file its "done" line named in `*result`.
int RunPythonStep(const deploy::ProfilerCommand& command, const std::string& what, bool quiet,
                  std::filesystem::path* result);

// Profiles the workload whose normalized form is `out`/workload.json into `out`; as RunPythonStep.
int RunProfileStep(const std::filesystem::path& out, const std::string& what, bool quiet,
                   std::filesystem::path* profile);

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_DEPLOY_STEPS_H_
