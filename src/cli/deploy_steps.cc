#include "deploy_steps.h"

#include <unistd.h>

#include <fstream>
#include <iostream>

namespace kope::cli {

namespace fs = std::filesystem;

ProgressLine::ProgressLine(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO) == 1) {}

void ProgressLine::Show(const deploy::ProfilerEvent& event) {
  if (!enabled_) return;
  std::string text = deploy::ProgressText(event);
  if (text.size() > 100) text = text.substr(0, 97) + "...";
  std::cerr << "\r\033[K" << text << std::flush;
  shown_ = true;
}

void ProgressLine::Clear() {
  if (shown_) std::cerr << "\r\033[K" << std::flush;
  shown_ = false;
}

Status WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return out.good() ? Status::Ok() : Status::IoError("cannot write " + path.string());
}

int RunPythonStep(const deploy::ProfilerCommand& command, const std::string& what, bool quiet,
                  fs::path* result) {
  ProgressLine progress(!quiet);
  Result<deploy::ProfilerResult> run = deploy::RunProfiler(
      command, [&](const deploy::ProfilerEvent& event) { progress.Show(event); });
  progress.Clear();
  if (!run.ok()) {
    std::cerr << what << ": " << run.status().message() << "\n";
    return 1;
  }
  if (!run->ok) {
    std::cerr << what << ": " << run->error << "\n";
    if (!run->log_tail.empty()) {
      std::string indented = "  | ";
      for (char c : run->log_tail) {
        indented += c == '\n' ? std::string("\n  | ") : std::string(1, c);
      }
      std::cerr << indented << "\n";
    }
    std::cerr << "(the log: " << command.log.string() << ")\n";
    return run->exit_code > 0 ? run->exit_code : 1;
  }
  *result = run->profile;
  return 0;
}

int RunProfileStep(const fs::path& out, const std::string& what, bool quiet, fs::path* profile) {
  Result<deploy::ProfilerCommand> command =
      deploy::PythonProfilerCommand(out / "workload.json", out);
  if (!command.ok()) {
    std::cerr << what << ": " << command.status().message() << "\n";
    return 1;
  }
  return RunPythonStep(*command, what, quiet, profile);
}

}  // namespace kope::cli
