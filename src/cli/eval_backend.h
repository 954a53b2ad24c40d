// The backend `kope eval` evaluates on, for a local evaluation and the warm service alike.
#ifndef KOPE_SRC_CLI_EVAL_BACKEND_H_
#define KOPE_SRC_CLI_EVAL_BACKEND_H_

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "kope/backend/backend.h"
#include "kope/base/status.h"
#include "kope/task/task.h"

namespace kope::cli {

// "cpu" or "cuda" for `requested` (cpu, cuda, or auto: CUDA for a .cu candidate when the task
// has a CUDA baseline or reference and a GPU is present, the CPU otherwise); FailedPrecondition
// where CUDA is asked for and this kope was built without the CUDA toolkit.
Result<std::string> EvalBackendName(std::string_view requested,
                                    const std::filesystem::path& candidate, const Task& task);

// The backend of that name.
Result<std::unique_ptr<Backend>> MakeEvalBackend(const std::string& name);

}  // namespace kope::cli

#endif  // KOPE_SRC_CLI_EVAL_BACKEND_H_
