// `kope pack build`: every kernel of a pack source folder evaluated on its family's tasks with
// the normal evaluator, recorded as experience and written as a pack file (pack_file.h).
//
// Each evaluation is recorded as in `kope eval --record`, in a store of the build's own (a
// temporary SQLite file, so that the pack holds nothing else): the task, the hardware, a run
// labelled "pack" whose config carries the kernel's spec ({"pack": KernelSpecJson}), the attempt
// (proposer "pack", its decision naming the kernel) and the outcome. A kernel valid on a task also
// gets an insight of its op family on that hardware ("pack kernel NAME: valid, SPEEDUP x over
// the baseline at ..."), supported by that outcome. Kernels whose language has no backend here
// (`backend` returns an error: no GPU) are skipped and named in the report; nothing is
// written for them, so a pack never holds a kernel the evaluator has not judged.
// A task or source that cannot be read is an error (nothing is written); a kernel that does
// not compile or is wrong is a verdict in the report and in the pack.
// One call uses the backends from one thread.
#ifndef KOPE_PACK_BUILD_H_
#define KOPE_PACK_BUILD_H_

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kope/backend/backend.h"
#include "kope/base/status.h"
#include "kope/eval/evaluator.h"
#include "kope/memory/exchange.h"
#include "kope/pack/manifest.h"

namespace kope::pack {

struct PackBuildOptions {
  std::filesystem::path out;           // the pack file
  std::vector<std::string> kernels;    // only these kernel names; empty: all
  std::vector<std::string> languages;  // only these languages ("cpp", "cuda"); empty: all
  // Time at the largest check set instead of the bench set (a quick check of every verdict).
  bool quick = false;
  EvalOptions eval;
  // The backend for a language; an error skips the language's kernels with its message.
  std::function<Result<Backend*>(const std::string& language)> backend;
  std::function<void(std::string_view)> progress;  // one line per evaluation; may be empty
};

struct PackVerdict {
  std::string kernel;
  std::string task;
  std::string language;
  std::string verdict;  // "valid", "incorrect", ...
  std::string message;  // the outcome's main error, "" when valid
  double speedup = 0;
  double time_ms = 0;
  double baseline_ms = 0;
  double roofline = 0;  // fraction of the speed of light
  std::string device;
};

struct PackBuildReport {
  std::vector<PackVerdict> verdicts;
  std::vector<std::string> skipped;  // "kernel (language): why"
  memory::ExchangeReport written;
  bool all_valid() const;
};

Result<PackBuildReport> BuildPack(const PackSource& pack, const PackBuildOptions& options);

}  // namespace kope::pack

#endif  // KOPE_PACK_BUILD_H_
